"""Fresh facts before every stop: the job's status and tags are read from SageMaker right before the
stop call, whichever path stops it (one-time check, grace, sweep, trial event), so an owner's own stop,
an exemption or a raised budget seen then wins over what the table said. Through the real handlers on
the AMT stand-in."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.integration.conftest import T0, World
from tests.integration.test_budget_checks import check
from tests.integration.test_governance import decisions, use_policy
from tests.integration.test_grace_period import budget_job, run_until
from tests.integration.test_tags_as_they_are_now import noticed_job, tag
from tuning_governor.adapters.checks import PendingChecks
from tuning_governor.app.events.tags import is_tag_event

pytestmark = pytest.mark.usefixtures("roomy_quota")


@pytest.mark.parametrize(
    ("tags", "kept"),
    [({"governance:budget-usd": "5000"}, "passed"), ({"governance:exempt": "true"}, "exempt")],
    ids=["raised-budget", "exempt"],
)
def test_a_grace_stop_against_a_budget_raised_with_its_tag_event_lost_stops_nothing(
    world: World, tags: dict[str, str], kept: str
) -> None:
    # Given a $50 job past its budget under a 30-minute notice, the one-time check due at the stop time
    checks, stop_at, stops = noticed_job(world, "graced")
    # When the owner raises the budget (or exempts the job) 130 s before the stop time, and the tag
    # event is lost: no tag event, no sweep before the check at the stop time
    run_until(world, checks, stop_at - timedelta(seconds=130))
    tag(world, "graced", **tags)
    lost = [e for e in world.amt.drain_events() if is_tag_event(e)]
    assert lost, "the stand-in emits the tag change the owner made"
    run_until(world, checks, stop_at + timedelta(minutes=2))
    # Then the check at the stop time read the tags from SageMaker before stopping: nothing is stopped,
    # and the breach is recorded as what it is now
    assert stops == [], f"stopped against tags {tags} read from SageMaker"
    breach = [d for d in decisions(world, "graced") if d["verdict"] != "grace"]
    assert [d["action"] for d in breach] == [kept]


def owner_stops_after_the_first_describe(world: World, job: str) -> list[str]:
    """The owner's own StopHyperParameterTuningJob lands right after the first Describe of ``job``
    (the one-time check's status read: InProgress), before the governor acts. The Stop calls, in order."""
    stops: list[str] = []
    world.env.sagemaker.meta.events.register(
        "provide-client-params.sagemaker.StopHyperParameterTuningJob",
        lambda params, **_: stops.append(params["HyperParameterTuningJobName"]),
    )

    def owner(**_: Any) -> None:
        if not stops:
            stops.append("owner")
            world.env.sagemaker.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName=job)

    world.env.sagemaker.meta.events.register("after-call.sagemaker.DescribeHyperParameterTuningJob", owner)
    return stops


def test_the_owner_stopped_it_first_is_recorded_and_reported_as_such(world: World) -> None:
    # Given a $50 job running past its budget in enforce mode, judged by no one yet (no check run)
    use_policy(world, "mode: enforce\n")
    world.env.services.checks = PendingChecks()
    budget_job(world, "owned", owner="alice")
    run_until(world, PendingChecks(), T0 + timedelta(minutes=8))
    assert decisions(world, "owned") == []
    # When the one-time check judges it, and its owner's own stop lands while the check decides
    stops = owner_stops_after_the_first_describe(world, "owned")
    check(world, "owned")
    assert stops == ["owner", "owned"]  # the owner's stop, then (on the governor's side) none
    # Then the governor says what happened: the job was already stopping, not "stopped" by it
    [breach] = [d for d in decisions(world, "owned") if d["rule"] == "budget"]
    assert breach["action"] in {"already-stopping", "already-ended"}, breach["action"]
    assert "before this decision's stop call" in breach["action_detail"]
    texts = [m["Subject"] + m["Message"] for m in world.env.sns_messages()]
    assert not any("STOPPED owned" in text for text in texts), texts
