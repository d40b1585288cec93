"""The AWS clients the ``tuning-governor`` commands make (``report``, ``validate --account``, ``replay s3://``).

An operator at a terminal wants to hear that an endpoint is unreachable in seconds, not after the
SDK's default retries (legacy mode: 5 attempts with backoff, ~27 s against a closed port). These
clients connect within 5 s, read within 30 s, and try each call twice (standard retry mode).
"""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config

CLI_CONFIG = Config(connect_timeout=5, read_timeout=30, retries={"mode": "standard", "total_max_attempts": 2})


def cli_client(service: str, region: str | None = None) -> Any:
    """A boto3 client for ``service`` with the CLI's timeouts, from a fresh session (so the credentials
    and ``AWS_ENDPOINT_URL`` are read now, not cached from an earlier call)."""
    return boto3.session.Session(region_name=region).client(service, config=CLI_CONFIG)  # type: ignore[call-overload]
