"""Service Quotas are resolved by quota name (codes vary) and cached."""

from __future__ import annotations

from datetime import timedelta

import boto3

from tests.integration.conftest import World
from tuning_governor.adapters.quotas import QuotaGateway


def test_quota_is_found_by_name_and_read_once_per_ttl(world: World) -> None:
    code = world.amt.set_applied_quota("ml.g5.xlarge", 12)
    client = boto3.client("service-quotas", region_name="us-east-1")
    calls: list[str] = []
    client.meta.events.register("before-call.service-quotas.*", lambda model, **_: calls.append(model.name))
    gateway = QuotaGateway(client, clock=world.amt.clock.now, ttl=timedelta(minutes=15))
    quota = gateway.training_quota("ml.g5.xlarge")
    assert quota is not None
    assert (quota.code, quota.value, quota.name) == (code, 12, "ml.g5.xlarge for training job usage")
    pages = len(calls)
    assert pages >= 1
    assert set(calls) == {"ListServiceQuotas"}
    # Within the TTL: answered from memory, even for another type and after the applied value changed
    world.amt.set_applied_quota("ml.g5.xlarge", 20)
    assert gateway.training_quota("ml.g4dn.xlarge") is not None
    assert gateway.training_quota("ml.g5.xlarge").value == 12  # type: ignore[union-attr]
    assert len(calls) == pages
    # After the TTL: read again, the new value is seen
    world.amt.clock.advance(15 * 60)
    assert gateway.training_quota("ml.g5.xlarge").value == 20  # type: ignore[union-attr]
    assert len(calls) == 2 * pages
    # A type with no such quota is unknown, not zero
    assert gateway.training_quota("ml.x9.mega") is None
