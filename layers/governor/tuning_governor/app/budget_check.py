"""Use case: the one-time budget check at a job's projected crossing (EventBridge Scheduler)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from tuning_governor.app.envelope import handle_errors
from tuning_governor.app.wiring import Services
from tuning_governor.errors import RejectedEvent
from tuning_governor.governance.engine import govern
from tuning_governor.models.limits import TuningJobName
from tuning_governor.ports import CHECK_KEY


class _BudgetCheck(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    job: TuningJobName


def run_budget_check(event: Any, services: Services) -> dict[str, Any]:
    """Judge one job now, as a sweep would (from the table, once DescribeHyperParameterTuningJob says it
    is InProgress; otherwise outcome ``ended``, nothing judged): the one-time check scheduled at the
    projected budget crossing. ``event`` is ``{"budget_check": {"job": <name>, ...}}``; anything else
    is rejected with a reason (metric ``RejectedEvents``), never retried."""

    def run() -> dict[str, Any]:
        body = event.get(CHECK_KEY) if isinstance(event, dict) else None
        try:
            check = _BudgetCheck.model_validate(body)
        except ValidationError as exc:
            raise RejectedEvent(f"not a budget check: {exc.errors()[0]['msg']}") from None
        # Observe before acting: the table may still think the job runs (its end event, or its trials',
        # not handled yet), and its running trials go on accruing there. A judgement that may stop reads
        # SageMaker's status first; a job that has ended is left to its end event or the sweep, which
        # finalise it on SageMaker's figures (and judge late trials as already ended).
        sagemaker_status = services.sagemaker.describe_tuning_job(check.job).status
        if sagemaker_status != "InProgress":
            return {"outcome": "ended", "job": check.job, "status": sagemaker_status, "decisions": []}
        decisions = govern("sweep", check.job.lower(), services.clock(), services)
        return {"outcome": "checked", "job": check.job, "decisions": decisions}

    return handle_errors("budget check", event, run)
