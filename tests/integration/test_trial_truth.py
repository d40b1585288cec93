"""Issue 17, mechanisms 4, 5 (trial side) and 6: running trials reconciled with SageMaker's truth, and
the trial rules counted in trial end-time order, through the real handlers on the AMT stand-in.

A trial's terminal event that never arrives leaves the table believing the trial still runs (a phantom
that accrues cost and holds capacity) and its outcome uncounted (a best or failed trial missing from
stagnation and failed-trial counts). The sweep compares the table with DescribeHyperParameterTuningJob's
status counters and, where they differ, lists the job's trials and records the lost ones.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from governor_client.amt import TrialPlan
from governor_client.simulator.runner import deliver_event
from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.conftest import World
from tests.integration.test_accrued_budgets import P3_8X, LongTrials
from tests.integration.test_governance import decisions, record_stop_calls, use_policy
from tests.integration.test_stagnation_and_tags import launch, per_definition_request, stagnation_decisions
from tests.integration.test_sweep_and_stop import run_sweep
from tuning_governor.domain.job import job_state
from tuning_governor.domain.stagnation import StagnationState

TRAINING = "SageMaker Training Job State Change"
TERMINAL = {"Completed", "Stopped", "Failed"}
SWEEP_EVERY_S = 300


def _trial_end(event: dict[str, Any]) -> str | None:
    """The trial whose terminal event this is (None: another event)."""
    detail = event["detail"]
    if event["detail-type"] == TRAINING and detail.get("TrainingJobStatus") in TERMINAL:
        return str(detail["TrainingJobName"])
    return None


def run_with_sweeps(
    world: World,
    lose: Callable[[dict[str, Any]], bool],
    *,
    after_sweep: Callable[[], None] | None = None,
    limit_s: int = 12 * 3600,
    sweeps: bool = True,
) -> list[str]:
    """Run until SageMaker is idle, delivering every event in order except those ``lose`` picks (lost for
    good), with the sweep every 5 virtual minutes as the stack's schedule runs it. Returns the trials whose
    terminal events were lost."""
    lost: list[str] = []
    elapsed = 0
    while elapsed < limit_s:
        world.amt.advance(60)
        elapsed += 60
        for event in world.amt.drain_events():
            if lose(event):
                lost.append(_trial_end(event) or event["id"])
            else:
                deliver_event(event, world.env.services)
        if sweeps and elapsed % SWEEP_EVERY_S == 0:
            run_sweep(world)
            if after_sweep is not None:
                after_sweep()
        if world.amt.idle() and not world.amt.events:
            return lost
    raise AssertionError("the stand-in did not go idle")


def lose_nth_trial_end(n: int, status: str | None = None) -> Callable[[dict[str, Any]], bool]:
    """Lose the terminal event(s) of the ``n``-th trial to end (counting only trials ending ``status``)."""
    seen: list[str] = []

    def lose(event: dict[str, Any]) -> bool:
        name = _trial_end(event)
        if name is None or (status is not None and event["detail"]["TrainingJobStatus"] != status):
            return False
        if name not in seen:
            seen.append(name)
        return seen.index(name) == n - 1

    return lose


def one_instance_request(name: str, *, max_jobs: int, max_parallel: int, tags: dict[str, str]) -> dict[str, Any]:
    """Trials of 1 x ml.p3.8xlarge, Random search (no early stopping), 4 h allowed per trial."""
    request = seed_tuning_request(
        name, instance_type=P3_8X, instance_count=1, max_parallel=max_parallel, max_jobs=max_jobs, extra_tags=tags
    )
    config = request["HyperParameterTuningJobConfig"]
    config["Strategy"] = "Random"
    config.pop("StrategyConfig", None)
    request["TrainingJobDefinition"]["StoppingCondition"]["MaxRuntimeInSeconds"] = 4 * 3600
    return request


# -- mechanism 4: a phantom running trial ------------------------------------------------------------------
def test_a_trial_whose_end_event_was_lost_makes_no_early_budget_stop_and_the_sweep_clears_it(world: World) -> None:
    # Given a $60 budget on 8 sequential 20-minute trials of 1 x ml.p3.8xlarge ($14.688/h: about $40 in
    # all), and the first trial's terminal event lost: its running entry would accrue until its 4 h limit
    world.amt.set_applied_quota(P3_8X, 1000)
    world.amt.engine.behaviour = LongTrials(hours=1 / 3)
    use_policy(world, "mode: enforce\n")
    stops = record_stop_calls(world)
    world.env.sagemaker.create_hyper_parameter_tuning_job(
        **one_instance_request("phantom", max_jobs=8, max_parallel=1, tags={"governance:budget-usd": "60"})
    )
    store = world.env.services.store
    running_after_sweeps: list[set[str]] = []

    def seen() -> None:
        running_after_sweeps.append(set((store.get_job("phantom") or {}).get("running") or {}))

    # When the job runs with the sweep every 5 minutes
    [lost] = run_with_sweeps(world, lose_nth_trial_end(1), after_sweep=seen)

    # Then no budget stop: the job's true spend stays under its budget
    assert [(d["rule"], d["verdict"]) for d in decisions(world, "phantom") if d["verdict"] == "breach"] == []
    assert stops == []
    summary = store.get_summary("phantom")
    assert summary is not None and summary.cost.priced_cost_usd < 60
    # And the sweep recorded the lost trial and cleared its running entry within one sweep
    assert lost.lower() not in set().union(*running_after_sweeps[-20:])
    records = {r.training_job_name: r for r in store.trial_records("phantom")}
    assert len(records) == 8
    assert records[lost].event_id == f"sweep:{lost}"


def test_a_judgement_about_to_stop_on_a_phantom_reconciles_first_and_does_not_stop(world: World) -> None:
    # Given the same job, its first trial's terminal event lost, and no sweep at all: only the judgements
    # of its other trials' events see the phantom's accrual cross the budget
    world.amt.set_applied_quota(P3_8X, 1000)
    world.amt.engine.behaviour = LongTrials(hours=1 / 3)
    use_policy(world, "mode: enforce\n")
    stops = record_stop_calls(world)
    world.env.sagemaker.create_hyper_parameter_tuning_job(
        **one_instance_request("no-sweep", max_jobs=8, max_parallel=1, tags={"governance:budget-usd": "60"})
    )
    # When the job runs
    [lost] = run_with_sweeps(world, lose_nth_trial_end(1), sweeps=False)
    # Then the judgement about to stop it reconciled its trials first (the lost one recorded, by name) and
    # found the truth under budget: no stop
    assert [(d["rule"], d["verdict"]) for d in decisions(world, "no-sweep") if d["verdict"] == "breach"] == []
    assert stops == []
    records = {r.training_job_name: r for r in world.env.services.store.trial_records("no-sweep")}
    assert records[lost].event_id == f"judgement:{lost}"


# -- mechanism 5, the trial side: a re-count after lost terminal events --------------------------------------
def test_a_recount_after_lost_terminal_events_holds_only_the_trials_sagemaker_runs(world: World) -> None:
    # Given 3 parallel trials of 1 x ml.p3.8xlarge and three trials' terminal events lost
    world.amt.set_applied_quota(P3_8X, 1000)
    world.amt.engine.behaviour = LongTrials(hours=1 / 3)
    world.env.sagemaker.create_hyper_parameter_tuning_job(
        **one_instance_request("recount", max_jobs=12, max_parallel=3, tags={})
    )
    losers = [lose_nth_trial_end(n) for n in (1, 2, 4)]
    store = world.env.services.store
    held: list[tuple[int, int, int]] = []

    def seen() -> None:
        job = job_state(store.get_job("recount"))
        reservation = store.read_ledger().reservations.get("recount")
        if job is None or job.ended or reservation is None:
            return
        in_progress = sum(1 for t in world.amt.trials_of("recount") if t.status in {"InProgress", "Stopping"})
        held.append((len(job.running), sum(reservation.on_demand.values()), in_progress))

    # When the job runs with the sweep every 5 minutes
    # (every predicate sees every event: each counts the trials it has seen end)
    lost = run_with_sweeps(world, lambda e: sum(lose(e) for lose in losers) > 0, after_sweep=seen)

    # Then after every sweep the job's running trials and its reservation are what SageMaker runs
    assert len(lost) == 3
    assert held, "no sweep saw the job running"
    assert max(reserved for _, reserved, _ in held) <= 3
    assert all(running <= in_progress for running, _, in_progress in held), held


# -- mechanism 6: the trial rules on dropped and reordered trials ---------------------------------------------
def test_a_lost_best_trial_is_recovered_by_the_sweep_so_stagnation_still_stops(world: World) -> None:
    # Given a Minimize job whose second trial is its best (0.5), and each later one improves on the one
    # before but never on 0.5; its best trial's terminal event is lost
    use_policy(world, "mode: enforce\ndefaults: {stagnation_trials: 3}\n")
    stops = record_stop_calls(world)
    launch(world, per_definition_request("lost-best", max_jobs=10), [1.0, 0.5, 0.9, 0.8, 0.7, 0.6, 0.55, 0.52])
    # When the job runs with the sweep every 5 minutes
    [lost] = run_with_sweeps(world, lose_nth_trial_end(2))
    # Then it is stopped after three trials without improving on 0.5, as with every event delivered
    [decision] = stagnation_decisions(world, "lost-best")
    numbers = decision["numbers"]
    assert (numbers["trials_without_improvement"], float(numbers["best_objective"])) == (3, 0.5)
    assert stops == ["lost-best"]
    assert lost in {r.training_job_name for r in world.env.services.store.trial_records("lost-best")}


@dataclass
class FailingAt:
    """Trials fail at the given positions (1-based, in order of creation), else complete."""

    failing: set[int]
    duration_s: float = 600.0
    planned: list[int] = field(default_factory=list)

    def plan(
        self,
        tuning_job_config: Mapping[str, Any] | None,
        definition: Mapping[str, Any],
        hyperparameters: Mapping[str, str],
        rng: random.Random,
    ) -> TrialPlan:
        self.planned.append(len(self.planned) + 1)
        if self.planned[-1] in self.failing:
            return TrialPlan(
                duration_s=self.duration_s / 2, objective_value=None, outcome="Failed", failure_reason="AlgorithmError"
            )
        return TrialPlan(duration_s=self.duration_s, objective_value=0.8)


def test_a_lost_failed_trial_is_recovered_by_the_sweep_so_the_failed_trial_cap_still_stops(world: World) -> None:
    # Given a failed-trial cap of 2, a job whose 2nd and 4th trials fail, and the first failure's event lost
    world.amt.set_applied_quota(P3_8X, 1000)
    use_policy(world, "mode: enforce\ndefaults: {max_failed_trials: 2}\n")
    stops = record_stop_calls(world)
    world.amt.engine.behaviour = FailingAt({2, 4})
    world.env.sagemaker.create_hyper_parameter_tuning_job(
        **one_instance_request("lost-failure", max_jobs=8, max_parallel=1, tags={})
    )
    # When the job runs with the sweep every 5 minutes
    [lost] = run_with_sweeps(world, lose_nth_trial_end(1, status="Failed"))
    # Then it is stopped at its second failure, as with every event delivered
    [decision] = [d for d in decisions(world, "lost-failure") if d["rule"] == "failed-trials"]
    assert (decision["verdict"], decision["numbers"]["failed"], decision["action"]) == ("breach", 2, "stopped")
    assert stops == ["lost-failure"]
    assert lost in {r.training_job_name for r in world.env.services.store.trial_records("lost-failure")}


def _stagnation_after(world: World, job: str, order: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> Any:
    """Run ``job`` to its end holding every trial's terminal event, then deliver them in ``order``."""
    held: list[dict[str, Any]] = []
    for _ in range(12 * 60):
        world.amt.advance(60)
        for event in world.amt.drain_events():
            if _trial_end(event):
                held.append(event)
            elif event["detail"].get("HyperParameterTuningJobStatus") not in TERMINAL:
                deliver_event(event, world.env.services)
        if world.amt.idle():
            break
    for event in order(held):
        assert deliver_event(event, world.env.services).outcome["outcome"] == "recorded"
    return StagnationState.from_item((world.env.services.store.get_job(job) or {})["stagnation"]), held


def test_two_trials_handled_in_reverse_order_give_the_same_stagnation_as_in_order(world: World) -> None:
    # Given a Minimize job whose first trial is its best (0.5) and the four after it do not improve on it
    use_policy(world, "defaults: {stagnation_trials: 10}\n")
    launch(world, per_definition_request("reversed", max_jobs=5), [0.5, 0.8, 0.8, 0.8, 0.8])
    # When the first two trials' events are handled in reverse order, the others in order
    state, held = _stagnation_after(world, "reversed", lambda events: [events[1], events[0], *events[2:]])
    # Then the state is the one the end-time order gives: 4 trials since the best, from the best's end
    assert state is not None
    first = world.env.sagemaker.describe_training_job(TrainingJobName=held[0]["detail"]["TrainingJobName"])
    assert (state.trials_since, state.best_objective, state.trials_seen) == (4, 0.5, 5)
    assert state.improved_at == first["TrainingEndTime"]
    records = {r.training_job_name: r for r in world.env.services.store.trial_records("reversed")}
    assert state.spent_at_improvement == records[first["TrainingJobName"]].cost_usd


def test_trials_handled_in_any_order_and_duplicated_give_one_stagnation(world: World) -> None:
    # Given a Minimize job of six trials with two improvements
    use_policy(world, "defaults: {stagnation_trials: 10}\n")
    launch(world, per_definition_request("shuffled", max_jobs=6), [1.0, 0.9, 0.95, 0.5, 0.7, 0.6])

    def shuffled(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [events[i] for i in (4, 3, 5, 0, 1, 2)]

    state, held = _stagnation_after(world, "shuffled", shuffled)
    # Redelivered copies change nothing
    for event in held[:3]:
        assert (
            deliver_event(dict(event, id=f"copy-{event['id']}"), world.env.services).outcome["outcome"] == "duplicate"
        )
    again = StagnationState.from_item((world.env.services.store.get_job("shuffled") or {})["stagnation"])
    assert again == state
    best = world.env.sagemaker.describe_training_job(TrainingJobName=held[3]["detail"]["TrainingJobName"])
    assert state is not None
    assert (state.trials_since, state.best_objective, state.trials_seen) == (2, 0.5, 6)
    assert state.improved_at == best["TrainingEndTime"]
