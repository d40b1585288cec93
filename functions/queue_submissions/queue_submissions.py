"""Lambda handler: submissions from the governor's SQS queue, recorded and admitted; and EventBridge
events that free capacity (a tuning job or trial ended, the schedule), which run admission (docs/explanation/queue.md)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from tuning_governor.app.queue.admission import QueueServices
from tuning_governor.app.queue.consumer import process_queue_event
from tuning_governor.app.services import Services
from tuning_governor.app.wiring import default_queue_services, default_services
from tuning_governor.observability import logger, metrics, tracer, within_lambda_time


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics(capture_cold_start_metric=True)
@tracer.capture_lambda_handler
@within_lambda_time
def handler(
    event: dict[str, Any], context: LambdaContext, services: Services | None = None, queue: QueueServices | None = None
) -> dict[str, Any]:
    return process_queue_event(event, services or default_services(), queue or default_queue_services())
