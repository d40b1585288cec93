"""Lambda handler: a one-time budget check, invoked by EventBridge Scheduler at a job's projected crossing."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from tuning_governor.app.checks.budget import run_budget_check
from tuning_governor.app.services import Services
from tuning_governor.app.wiring import default_services
from tuning_governor.observability import logger, metrics, tracer, within_lambda_time


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics(capture_cold_start_metric=True)
@tracer.capture_lambda_handler
@within_lambda_time
def handler(event: dict[str, Any], context: LambdaContext, services: Services | None = None) -> dict[str, Any]:
    return run_budget_check(event, services or default_services())
