"""Lambda handler: SageMaker HyperParameter Tuning Job State Change events from EventBridge, and tag changes
on tuning jobs (CloudTrail AddTags/DeleteTags, aws.tag Tag Change on Resource)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from tuning_governor.app.events.tags import process_job_event
from tuning_governor.app.services import Services
from tuning_governor.app.wiring import default_services
from tuning_governor.observability import logger, metrics, tracer, within_lambda_time


@logger.inject_lambda_context(correlation_id_path="id", clear_state=True)
@metrics.log_metrics(capture_cold_start_metric=True)
@tracer.capture_lambda_handler
@within_lambda_time
def handler(event: dict[str, Any], context: LambdaContext, services: Services | None = None) -> dict[str, Any]:
    return process_job_event(event, services or default_services())
