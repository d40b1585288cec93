"""Lambda handler: the scheduled sweep (EventBridge Scheduler / schedule rule)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from tuning_governor.app.services import Services
from tuning_governor.app.sweep.run import run_sweep
from tuning_governor.app.wiring import default_services
from tuning_governor.observability import logger, metrics, tracer, within_lambda_time


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics(capture_cold_start_metric=True)
@tracer.capture_lambda_handler
@within_lambda_time
def handler(event: dict[str, Any], context: LambdaContext, services: Services | None = None) -> dict[str, Any]:
    # The member places are begun only while the invocation has time left (app.sweep.places).
    return run_sweep(services or default_services(), remaining=lambda: context.get_remaining_time_in_millis() / 1000)
