"""Fake AWS settings for a run that must never reach an account (the demo, the simulator's figures,
benchmarks, the golden files' regeneration). Call :func:`use_offline_environment` before anything
imports ``tuning_governor`` (Powertools reads its settings on import). Imports nothing but ``os``."""

from __future__ import annotations

import os


def use_offline_environment(region: str = "us-east-1", **extra: str) -> None:
    """Fake credentials, the region, tracing off, and ``extra`` (e.g. ``POWERTOOLS_SERVICE_NAME``), each
    only where the environment does not already set it."""
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": region,
        "AWS_REGION": region,
        "POWERTOOLS_TRACE_DISABLED": "true",
        **extra,
    }.items():
        os.environ.setdefault(key, value)
