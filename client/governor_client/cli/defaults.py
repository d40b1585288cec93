"""Defaults and choices the commands' arguments name, importable without the machinery behind them (so
building a command's parser, and a usage error, loads neither the governor's layer nor moto)."""

from __future__ import annotations

from datetime import timedelta
from typing import Literal, get_args

#: The region check, validate and replay price in when none is given.
DEFAULT_REGION = "us-east-1"

#: template.yaml's ``SweepSchedule`` default (a test holds them equal).
DEFAULT_SWEEP_SCHEDULE = "rate(5 minutes)"
DEFAULT_SWEEP_EVERY = timedelta(minutes=5)

#: The offline store of the simulator, the demo and the replay (``governor_client.offline.environment.store_kind``).
StoreKind = Literal["memory", "moto"]
STORE_KINDS: tuple[str, ...] = get_args(StoreKind)

#: The share of lines (percent) a replay may reject and still exit 0; a capture holds only SageMaker's
#: state changes, so a rejected line is rare (a truncated last line, a stray object). Above it: exit 4.
DEFAULT_MAX_REJECTED_PERCENT = 5.0
