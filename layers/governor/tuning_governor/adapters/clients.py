"""boto3 clients made when first used, not at cold start.

Each client costs 5-25 ms to create (botocore loads its service model). The reports topic, the Slack
secret and Service Quotas are used by few invocations (a report, an arrival once per quota cache), so
their clients are made by the first call that needs one; DynamoDB, SageMaker and SSM (the policy) are
used by nearly every invocation and are made at cold start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast


class _Deferred:
    """Stands in for the client ``make`` returns, and makes it on the first attribute asked for."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._client: Any = None

    def __getattr__(self, name: str) -> Any:
        # Only called for attributes this object lacks: every client method and ``meta``.
        if self._client is None:
            self._client = self._make()
        return getattr(self._client, name)


def deferred[C](make: Callable[[], C]) -> C:
    """A client that ``make`` creates on its first use; typed as the client itself."""
    return cast("C", _Deferred(make))
