"""Use case: the one-time budget check at a job's projected crossing, of its budget or its team's month
(EventBridge Scheduler)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, ValidationError

from tuning_governor.app.envelope import handle_errors
from tuning_governor.app.services import Services
from tuning_governor.app.starting_checks import RECHECK_GAP, schedule_starting_checks
from tuning_governor.domain.job import job_state
from tuning_governor.errors import RejectedEvent
from tuning_governor.governance.engine import govern
from tuning_governor.governance.trial_truth import reconcile_trials
from tuning_governor.models.limits import TuningJobName
from tuning_governor.ports import CHECK_KEY

#: The longest a check waits for its second: Scheduler runs it in the minute holding ``at`` - 59 s.
MAX_WAIT = timedelta(seconds=120)


class _BudgetCheck(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    job: TuningJobName
    at: AwareDatetime | None = None
    """The second the check is for (absent: now)."""


def _wait_for(at: datetime | None, now: datetime, sleep: Callable[[float], None]) -> None:
    """Scheduling: Scheduler invokes the check up to two minutes before its second; wait for it."""
    if at is None or at <= now:
        return
    sleep(min(at - now, MAX_WAIT).total_seconds())


def run_budget_check(event: Any, services: Services, sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Judge one job at the check's second, as a sweep would (from the table, once
    DescribeHyperParameterTuningJob says it is InProgress; otherwise outcome ``ended``, nothing judged),
    once its trials are reconciled with SageMaker's on that Describe (``governance.trial_truth``):
    the one-time check scheduled at the projected budget crossing. ``event`` is ``{"budget_check":
    {"job": <name>, "at": <ISO time>, ...}}``; invoked before ``at`` (Scheduler's minute precision), it
    first waits for it (``sleep``, at most ``MAX_WAIT``). Anything else is rejected with a reason
    (metric ``RejectedEvents``), never retried."""

    def run() -> dict[str, Any]:
        body = event.get(CHECK_KEY) if isinstance(event, dict) else None
        try:
            check = _BudgetCheck.model_validate(body)
        except ValidationError as exc:
            raise RejectedEvent(f"not a budget check: {exc.errors()[0]['msg']}") from None
        _wait_for(check.at, services.clock(), sleep)
        # Observe before acting: the table may still think the job runs (its end event, or its trials',
        # not handled yet), and its running trials go on accruing there. A judgement that may stop reads
        # SageMaker's status first; a job that has ended is left to its end event or the sweep, which
        # finalise it on SageMaker's figures (and judge late trials as already ended).
        described = services.sagemaker.describe_tuning_job(check.job)
        if described.status != "InProgress":
            return {"outcome": "ended", "job": check.job, "status": described.status, "decisions": []}
        # Its trials as SageMaker runs them (their progress events may be hours late): the same
        # reconciliation as the sweep's, on this Describe (a listing only where the counters disagree).
        job = job_state(services.store.get_job(check.job.lower()))
        done = reconcile_trials(job, services, source="check", described=described) if job and not job.ended else None
        decisions = govern("sweep", check.job.lower(), services.clock(), services)
        if done is not None and done.starting:
            # Trials still Starting: looked at again at the earliest they could cross, as the sweep does.
            schedule_starting_checks(services, services.clock(), [done], gap=RECHECK_GAP)
        return {"outcome": "checked", "job": check.job, "decisions": decisions}

    return handle_errors("budget check", event, run)
