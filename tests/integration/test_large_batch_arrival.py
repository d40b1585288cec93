"""The large-batch checks on arrival, through the real handlers on the AMT stand-in: a distributed job
launched without ``check`` gets one recorded warning, whatever the order or repetition of its events."""

from __future__ import annotations

import importlib.util
from types import ModuleType
from typing import Any

from governor_client.simulator.runner import deliver_all
from governor_client.simulator.scenarios import seed_tuning_request
from tests.conftest import ROOT
from tests.integration.conftest import World
from tests.integration.test_governance import decisions, record_stop_calls, use_policy


def _examples() -> ModuleType:
    spec = importlib.util.spec_from_file_location("large_batch_examples", ROOT / "scripts" / "large_batch_examples.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _request(name: str) -> dict[str, Any]:
    """The example request, with 4 trials (the checks read the ranges, not how many trials there are)."""
    request = dict(_examples().requests()[name][1])
    request["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxNumberOfTrainingJobs"] = 4
    return request


def _batch_decisions(world: World, job: str) -> list[dict[str, Any]]:
    return [d for d in decisions(world, job) if d["rule"] == "large-batch"]


def _batch_reports(world: World) -> list[dict[str, Any]]:
    return [m for m in world.env.sns_messages() if str(m.get("Subject", "")).endswith(": large-batch")]


def _room_for_p4d(world: World) -> None:
    # The account may run 8 x ml.p4d.24xlarge at once (the stand-in's default quota for it is 0).
    world.amt.set_applied_quota("ml.p4d.24xlarge", 16)


def _deliver_shuffled(world: World, minutes: int) -> None:
    """Every event of the first ``minutes``, delivered newest first, then all of them again."""
    events: list[Any] = []
    for _ in range(minutes):
        world.amt.advance(60)
        events.extend(world.amt.drain_events())
    assert events, "the stand-in emitted nothing"
    world.deliveries.extend(deliver_all(list(reversed(events)), world.env.services))
    world.deliveries.extend(deliver_all(events, world.env.services))


def test_a_ddp_job_with_a_fixed_learning_rate_is_warned_once_on_arrival(world: World) -> None:
    # Given an enforcing policy and the PyTorch DDP job on 4 x ml.p4d.24xlarge at a fixed learning rate
    use_policy(world, "mode: enforce\n")
    stops = record_stop_calls(world)
    _room_for_p4d(world)
    world.env.sagemaker.create_hyper_parameter_tuning_job(**_request("ddp-fixed-lr.json"))
    # When its events arrive out of order and twice, then the job runs to its end
    _deliver_shuffled(world, minutes=5)
    world.run_until_idle()
    # Then one warning decision names each finding with its source, it is reported once, nothing stopped
    [decision] = _batch_decisions(world, "resnet-ddp-fixed-lr")
    assert (decision["verdict"], decision["action"]) == ("warning", "warned")
    codes = [f["code"] for f in decision["numbers"]["findings"]]
    assert codes == ["lr-not-scaled", "no-warmup", "batch-beyond-literature"]
    assert "lr = 0.1" in decision["message"] and "Goyal" in decision["numbers"]["findings"][0]["source"]
    assert len(_batch_reports(world)) == 1
    assert stops == []


def test_on_arrival_stop_makes_it_a_breach_stopped_once(world: World) -> None:
    # Given a policy that stops jobs on their large-batch findings
    use_policy(world, "mode: enforce\nlarge_batch: {on_arrival: stop}\n")
    stops = record_stop_calls(world)
    _room_for_p4d(world)
    world.env.sagemaker.create_hyper_parameter_tuning_job(**_request("ddp-fixed-lr.json"))
    _deliver_shuffled(world, minutes=3)
    world.run_until_idle()
    # Then it is a breach, and the job is stopped once
    [decision] = _batch_decisions(world, "resnet-ddp-fixed-lr")
    assert (decision["verdict"], decision["action"]) == ("breach", "stopped")
    assert stops == ["resnet-ddp-fixed-lr"]


def test_a_scaled_job_and_the_seed_xgboost_job_get_no_large_batch_decision(world: World) -> None:
    use_policy(world, "mode: enforce\n")
    _room_for_p4d(world)
    world.env.sagemaker.create_hyper_parameter_tuning_job(**_request("ddp-scaled-lr.json"))
    world.env.sagemaker.create_hyper_parameter_tuning_job(**seed_tuning_request())
    _deliver_shuffled(world, minutes=3)
    world.run_until_idle()
    assert _batch_decisions(world, "resnet-ddp-scaled-lr") == []
    assert _batch_decisions(world, "xgb-churn-hb") == []
    # The seed's job item keeps nothing for the checks (the tables the demo shows are unchanged)
    assert "batch_request" not in (world.env.services.store.get_job("xgb-churn-hb") or {})
    assert _batch_reports(world) == []
