"""Table keys read back: the one place a partition key is parsed (written by adapters.dynamodb)."""

from __future__ import annotations

from typing import Any

JOB_PREFIX = "JOB#"


def job_key_of(pk: Any) -> str:
    """The tuning job's key from its partition key (``JOB#<key>``)."""
    return str(pk).removeprefix(JOB_PREFIX)
