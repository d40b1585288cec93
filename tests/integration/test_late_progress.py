"""Running spend judged on SageMaker's running trials when the trials' progress events are hours late,
through the real handlers and the sweep on the AMT stand-in (moto).

A trial's InProgress event is what writes its running entry (TrainingStartTime, instances) on the job
and team items. When those events are hours late, the table holds no running entry for trials SageMaker
bills, and a budget judged on the table under-counts the burn. The sweep's trial step compares the job
item with DescribeHyperParameterTuningJob's counters and, where SageMaker runs trials the table does
not track, lists them and tracks each from its TrainingStartTime.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from governor_client.simulator.runner import deliver_event
from tests.integration.conftest import World
from tests.integration.test_accrued_budgets import HOURLY, P3_8X, SWEEP_EVERY, LongTrials, big_job, run_sweep
from tests.integration.test_governance import decisions, record_stop_calls, use_policy
from tuning_governor.domain.cost import SECONDS_PER_HOUR

TRAINING = "SageMaker Training Job State Change"


def _progress(event: dict[str, Any]) -> bool:
    """A trial's event that is not its end (InProgress, with or without TrainingStartTime)."""
    return event["detail-type"] == TRAINING and event["detail"].get("TrainingJobStatus") == "InProgress"


def _billed_so_far(world: World, job: str, now: datetime) -> Decimal:
    """What SageMaker has billed the job's trials by ``now``: each from its TrainingStartTime."""
    total = Decimal(0)
    for trial in world.amt.trials_of(job):
        described = world.env.sagemaker.describe_training_job(TrainingJobName=trial.name)
        start, end = described.get("TrainingStartTime"), described.get("TrainingEndTime") or now
        if start is None:
            continue
        count = described["ResourceConfig"]["InstanceCount"]
        total += HOURLY * count * Decimal(str((min(end, now) - start).total_seconds())) / SECONDS_PER_HOUR
    return total


def test_the_sweep_stops_on_running_trials_whose_progress_events_have_not_arrived(world: World) -> None:
    # Given a $50 budget on 4 parallel trials of 8 x ml.p3.8xlarge (3 h each), the sweep every 5 minutes,
    # the breach at the budget itself, and every trial's progress event hours late (none arrives in time)
    world.amt.set_applied_quota(P3_8X, 1000)
    world.amt.engine.behaviour = LongTrials()
    use_policy(world, "mode: enforce\ndefaults: {budget_stop_lead_seconds: 0}\n")
    stops = record_stop_calls(world)
    world.env.sagemaker.create_hyper_parameter_tuning_job(**big_job("late-job", tags={"governance:budget-usd": "50"}))
    created = world.amt.clock.now()
    sweeps: list[tuple[datetime, Decimal, list[str]]] = []
    while not stops and world.amt.clock.now() - created < timedelta(hours=1):
        world.amt.advance(60)
        for event in world.amt.drain_events():
            if not _progress(event):
                deliver_event(event, world.env.services)
        if (world.amt.clock.now() - created) % SWEEP_EVERY == timedelta(0):
            now = world.amt.clock.now()
            billed = _billed_so_far(world, "late-job", now)
            run_sweep(world)
            sweeps.append((now, billed, list(stops)))
    # Then the first sweep after SageMaker's bill crossed $50 stopped it, as with the events on time
    assert stops == ["late-job"], f"not stopped within an hour; SageMaker had billed ${sweeps[-1][1]:.2f}"
    crossing = next(i for i, (_, billed, _) in enumerate(sweeps) if billed >= 50)
    assert all(not stopped for _, _, stopped in sweeps[:crossing])
    assert sweeps[crossing][2] == ["late-job"], f"the sweep at {sweeps[crossing][0]:%H:%M} did not stop it"
    # judged on the 4 trials SageMaker runs, from their TrainingStartTime (the same dollars it bills)
    [breach] = [d for d in decisions(world, "late-job") if d["sk"] == "DECISION#budget#breach"]
    numbers = breach["numbers"]
    assert numbers["running_trials"] == 4
    assert abs(Decimal(str(numbers["spent_accrued_usd"])) - sweeps[crossing][1]) < Decimal("0.01")
