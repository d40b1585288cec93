"""Lambda handler: the daily price refresh (EventBridge schedule rule)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from tuning_governor.app.prices import RefreshServices, refresh_prices
from tuning_governor.app.wiring import default_refresh_services
from tuning_governor.observability import logger, metrics, tracer


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics(capture_cold_start_metric=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext, services: RefreshServices | None = None) -> dict[str, Any]:
    return refresh_prices(services or default_refresh_services(), remaining_ms=context.get_remaining_time_in_millis)
