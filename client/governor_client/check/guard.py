"""The check as a guard on an SDK's SageMaker client: a refused request is never sent.

    import boto3
    from governor_client.check import guard_tuning_requests

    session = boto3.Session()
    guard_tuning_requests(session.events, policy)   # before any client is made from the session
    sagemaker = session.client("sagemaker")         # or the SageMaker Python SDK v3 built on this session

Every CreateHyperParameterTuningJob sent through a client carrying that event system is checked first
(``check_request`` on its parameters, before botocore builds the call); a request whose status is in
``block`` raises ``RequestRefused`` with the result, so nothing reaches SageMaker. The SageMaker Python
SDK v3 sends its tuner's request through such a client, so guarding its session's boto3 session guards
``HyperparameterTuner.tune``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from governor_client.check.core import check_request
from governor_client.check.result import CheckResult, Status, render_text
from tuning_governor.policy import Policy

EVENT = "before-parameter-build.sagemaker.CreateHyperParameterTuningJob"


class RequestRefused(Exception):
    """The check refused a request before it was sent; ``result`` holds why."""

    def __init__(self, result: CheckResult) -> None:
        super().__init__(render_text(result))
        self.result = result


def guard_tuning_requests(
    events: Any,
    policy: Policy,
    *,
    block: frozenset[Status] = frozenset({"refused", "invalid"}),
    **options: Any,
) -> Callable[[], None]:
    """Check every CreateHyperParameterTuningJob on ``events`` (a botocore event system: a client's
    ``meta.events`` or a boto3 session's ``events``) under ``policy``; ``options`` go to ``check_request``.
    Returns a function that removes the guard."""

    def handler(params: dict[str, Any], **_: Any) -> None:
        result = check_request(
            params, policy, source=str(params.get("HyperParameterTuningJobName", "request")), **options
        )
        if result.status in block:
            raise RequestRefused(result)

    unique_id = f"tuning-governor-check-{id(handler)}"
    events.register(EVENT, handler, unique_id=unique_id)
    return lambda: events.unregister(EVENT, handler, unique_id=unique_id)
