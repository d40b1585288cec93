"""Fixtures for the AMT stand-in tests: a stand-in on a virtual clock inside the repo's ``mocked_aws``."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from governor_client.amt import AmtStandIn, VirtualClock

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock(T0)


@pytest.fixture
def amt(mocked_aws: None, clock: VirtualClock) -> Iterator[AmtStandIn]:
    with AmtStandIn(clock=clock, seed=7) as stand_in:
        yield stand_in


@pytest.fixture
def sm(mocked_aws: None) -> Any:
    return boto3.client("sagemaker", region_name="us-east-1")
