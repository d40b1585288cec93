"""Use case: the one-time budget check at a job's projected crossing, of its budget or its team's month
(EventBridge Scheduler)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pydantic import AwareDatetime, ConfigDict, ValidationError, model_validator

from tuning_governor.app.envelope import handle_errors
from tuning_governor.app.starting_checks import RECHECK_GAP, schedule_starting_checks
from tuning_governor.domain.job import job_state
from tuning_governor.errors import RejectedEvent
from tuning_governor.governance.engine import govern
from tuning_governor.governance.trial_truth import reconcile_trials
from tuning_governor.model_base import GovernorModel
from tuning_governor.models.limits import TuningJobName
from tuning_governor.models.place import Place, job_key
from tuning_governor.policy.accounts import AccountId, Region
from tuning_governor.ports import CHECK_KEY

if TYPE_CHECKING:
    from tuning_governor.app.services import AppServices
    from tuning_governor.ports.uses import GoverningStore

#: The longest a check waits for its second: Scheduler runs it in the minute holding ``at`` - 59 s.
MAX_WAIT = timedelta(seconds=120)


class _BudgetCheck(GovernorModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    job: TuningJobName
    at: AwareDatetime | None = None
    """The second the check is for (absent: now)."""
    account: AccountId | None = None
    region: Region | None = None
    """The member place of a job outside the home place (both or neither)."""

    @model_validator(mode="after")
    def _both_or_neither(self) -> _BudgetCheck:
        if (self.account is None) != (self.region is None):
            raise ValueError("account and region come together")
        return self

    def place(self) -> Place | None:
        return Place(self.account, self.region) if self.account and self.region else None


def _where(check: _BudgetCheck, services: AppServices[GoverningStore]) -> tuple[AppServices[GoverningStore], str]:
    """The services of the check's place and the job's key there. A member place the policy does not
    list is refused: a check acts only where the governor governs (no confused deputy)."""
    place = check.place()
    if place is None or place == services.home:
        return services, check.job.lower()
    if services.home is None or (
        place.account not in services.policy().accounts and place.account != services.home.account
    ):
        raise RejectedEvent(f"not governed: account {place.account} is not listed under accounts")
    return services.at(place), job_key(check.job, place, services.home)


def _wait_for(at: datetime | None, now: datetime, sleep: Callable[[float], None]) -> None:
    """Scheduling: Scheduler invokes the check up to two minutes before its second; wait for it."""
    if at is None or at <= now:
        return
    sleep(min(at - now, MAX_WAIT).total_seconds())


def run_budget_check(
    event: Any, services: AppServices[GoverningStore], sleep: Callable[[float], None] = time.sleep
) -> dict[str, Any]:
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
        here, key = _where(check, services)
        _wait_for(check.at, services.clock(), sleep)
        # Observe before acting: the table may still think the job runs (its end event, or its trials',
        # not handled yet), and its running trials go on accruing there. A judgement that may stop reads
        # SageMaker's status first; a job that has ended is left to its end event or the sweep, which
        # finalise it on SageMaker's figures (and judge late trials as already ended).
        described = here.sagemaker.describe_tuning_job(check.job)
        if described.status != "InProgress":
            return {"outcome": "ended", "job": check.job, "status": described.status, "decisions": []}
        # Its trials as SageMaker runs them (their progress events may be hours late): the same
        # reconciliation as the sweep's, on this Describe (a listing only where the counters disagree).
        job = job_state(here.store.get_job(key))
        done = reconcile_trials(job, here, source="check", described=described) if job and not job.ended else None
        decisions = govern("sweep", key, here.clock(), here)
        if done is not None and done.starting:
            # Trials still Starting: looked at again at the earliest they could cross, as the sweep does.
            schedule_starting_checks(here, here.clock(), [done], gap=RECHECK_GAP)
        return {"outcome": "checked", "job": check.job, "decisions": decisions}

    return handle_errors("budget check", event, run)
