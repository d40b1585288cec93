"""``tuning-governor check REQUEST.json``: a tuning request judged before launch (docs/reference/check.md).

    tuning-governor check request.json --policy policy.yaml            # offline: the policy's quotas
    tuning-governor check request.json --policy policy.yaml --json     # for CI (docs/check-result.schema.json)
    tuning-governor check request.json --policy policy.yaml --table TABLE   # against the deployed governor's state
    tuning-governor check request.json --policy policy.yaml --submit   # as a submission to the queue

From Python: ``check_request(request, policy)`` with the keyword arguments you would give boto3's
``create_hyper_parameter_tuning_job`` (or the ``--cli-input-json`` document); or
``guard_tuning_requests(session.events, policy)`` so a client (or the SageMaker Python SDK v3 on that
session) never sends a request the check refuses.

Exit status: 0 ok; 1 warnings (config lint, a worst case over budget, an unpriced type); 2 refused (the
governor would stop it on arrival, or it can never fit) or invalid (it breaks SageMaker's API model, or
the file is unreadable): the JSON ``status`` tells refused from invalid.

The package: ``validation`` (botocore's model), ``cost`` (bounds), ``lint`` (config mistakes),
``verdict`` (the arrival rules; the queue's verdict with ``queue_view``), ``result`` (what is printed),
``core`` (``check_request``), ``guard`` (the SDK hook) and ``command`` (the CLI).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from governor_client.check.command import add_arguments, run_command
    from governor_client.check.core import check_request
    from governor_client.check.guard import RequestRefused, guard_tuning_requests
    from governor_client.check.queue_view import SubmissionQueue
    from governor_client.check.result import CheckResult, json_schema, render_text

#: Each public name and the module that defines it, imported on first use (PEP 562): importing one
#: submodule (or this package for one name) does not load the others' dependencies.
_EXPORTS: dict[str, str] = {
    "CheckResult": "governor_client.check.result",
    "RequestRefused": "governor_client.check.guard",
    "SubmissionQueue": "governor_client.check.queue_view",
    "add_arguments": "governor_client.check.command",
    "check_request": "governor_client.check.core",
    "guard_tuning_requests": "governor_client.check.guard",
    "json_schema": "governor_client.check.result",
    "render_text": "governor_client.check.result",
    "run_command": "governor_client.check.command",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "CheckResult",
    "RequestRefused",
    "SubmissionQueue",
    "add_arguments",
    "check_request",
    "guard_tuning_requests",
    "json_schema",
    "render_text",
    "run_command",
]
