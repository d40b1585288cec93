"""A one-time budget check that fires after its job ended (issue 18, finding 5), run by the real handler
held to BudgetCheckFunction's role as template.yaml grants it: SageMaker's status is read first, so a job
that has ended is not judged on the table's stale "running" (its trials still accruing there), and every
call the check makes is one its role allows."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

import budget_check
from governor_client.simulator.runner import FakeLambdaContext, deliver_event
from tests.integration.conftest import World
from tests.integration.test_accrued_budgets import P3_8X, LongTrials, big_job
from tests.integration.test_governance import decisions, record_stop_calls, status, use_policy
from tests.template.cfn import granted_actions, load_template, translate
from tuning_governor.ports import CHECK_KEY

# One worker runs this module: its module-scoped (or cached) runs are built once, not once per worker.
pytestmark = pytest.mark.xdist_group("check_after_the_end")

BUDGET_CHECK_ROLE = "BudgetCheckFunctionRole"


@pytest.fixture(scope="module")
def budget_check_grants() -> set[str]:
    """The IAM actions template.yaml grants BudgetCheckFunction (its translated role)."""
    return granted_actions(translate(load_template()), BUDGET_CHECK_ROLE)


def held_to(world: World, grants: set[str]) -> Iterator[list[str]]:
    """While active, a SageMaker call the role does not grant is refused as IAM refuses it."""
    denied: list[str] = []

    def refuse(model: Any, **_: Any) -> None:
        action = f"sagemaker:{model.name}"
        if action not in grants:
            denied.append(action)
            error = {"Error": {"Code": "AccessDeniedException", "Message": f"not authorized to perform: {action}"}}
            raise ClientError(error, model.name)  # type: ignore[arg-type]

    events = world.env.sagemaker.meta.events
    events.register("before-call.sagemaker.*", refuse, unique_id="held-to-role")
    try:
        yield denied
    finally:
        events.unregister("before-call.sagemaker.*", unique_id="held-to-role")


def run_check(world: World, job: str, grants: set[str]) -> tuple[dict[str, Any], list[str]]:
    gen = held_to(world, grants)
    denied = next(gen)
    try:
        result: dict[str, Any] = budget_check.handler(
            {CHECK_KEY: {"job": job}}, FakeLambdaContext("budget-check"), services=world.env.services
        )
    finally:
        gen.close()
    return result, denied


def test_a_check_after_the_job_ended_reads_its_status_first_and_decides_nothing(
    world: World, budget_check_grants: set[str]
) -> None:
    # Given a job of one trial (8 x ml.p3.8xlarge for an hour: $117.50 billed) on a $130 budget, in enforce
    # mode, whose trial and job terminal events are late: the table still has its trial running
    world.amt.set_applied_quota(P3_8X, 1000)
    world.amt.engine.behaviour = LongTrials(hours=1)
    use_policy(world, "mode: enforce\n")
    stops = record_stop_calls(world)
    world.env.sagemaker.create_hyper_parameter_tuning_job(
        **big_job("late-end", max_parallel=1, max_jobs=1, tags={"governance:budget-usd": "130"})
    )
    held: list[dict[str, Any]] = []
    for _ in range(180):
        world.amt.advance(60)
        for event in world.amt.drain_events():
            detail = event["detail"]
            if detail.get("TrainingJobStatus") in {"Completed", "Stopped", "Failed"} or detail.get(
                "HyperParameterTuningJobStatus"
            ) in {"Completed", "Stopped", "Failed"}:
                held.append(event)
            else:
                deliver_event(event, world.env.services)
    assert status(world, "late-end") == "Completed" and held
    assert (world.env.services.store.get_job("late-end") or {}).get("running"), "the table must think it runs"
    # When the one-time check fires (its trial has accrued $300+ in the table by now), held to its role
    result, denied = run_check(world, "late-end", budget_check_grants)
    # Then it made no call its role refuses, decided nothing on the stale table and stopped nothing
    assert denied == []
    assert result["decisions"] == [], result
    assert [d["sk"] for d in decisions(world, "late-end") if "budget" in d["sk"]] == []
    assert stops == []
    # and the late events then finish the job on its real figures: $117.50 < $130, no breach
    for event in held:
        assert deliver_event(event, world.env.services).outcome.get("outcome") != "error"
    assert [d["sk"] for d in decisions(world, "late-end") if d["sk"].startswith("DECISION#budget#breach")] == []
