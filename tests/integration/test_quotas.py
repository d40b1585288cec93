"""Service Quotas are resolved by quota name (codes vary) and cached."""

from __future__ import annotations

from datetime import timedelta

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.integration.conftest import World
from tuning_governor.adapters.quotas import QuotaGateway
from tuning_governor.errors import TransientError


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


def test_a_quota_without_an_applied_value_falls_back_to_the_aws_default_and_says_so(world: World) -> None:
    world.amt.clear_applied_quota("ml.g5.xlarge for spot training job usage")
    world.amt.set_applied_quota("ml.g5.xlarge", 12)
    client = boto3.client("service-quotas", region_name="us-east-1")
    calls: list[str] = []
    client.meta.events.register("before-call.service-quotas.*", lambda model, **_: calls.append(model.name))
    gateway = QuotaGateway(client, clock=world.amt.clock.now, ttl=timedelta(minutes=15))
    # An applied value needs no default lookup
    applied = gateway.training_quota("ml.g5.xlarge")
    assert applied is not None and (applied.value, applied.applied) == (12, True)
    assert "ListAWSDefaultServiceQuotas" not in calls
    # A quota ListServiceQuotas omits is answered with AWS's default value, marked as such
    spot = gateway.spot_training_quota("ml.g5.xlarge")
    assert spot is not None
    assert (spot.name, spot.value, spot.applied) == ("ml.g5.xlarge for spot training job usage", 4, False)
    defaults_read = calls.count("ListAWSDefaultServiceQuotas")
    assert defaults_read >= 1
    # Within the TTL the defaults are not read again
    assert gateway.spot_training_quota("ml.g4dn.xlarge") is not None
    assert gateway.spot_training_quota("ml.g5.xlarge") == spot
    assert calls.count("ListAWSDefaultServiceQuotas") == defaults_read
    # The account-wide counts are found by name too
    total = gateway.total_training_quota()
    spot_total = gateway.total_spot_training_quota()
    assert total is not None and total.code == "L-00C91CB5"
    assert spot_total is not None and spot_total.code == "L-93958082"


def test_applied_quotas_that_cannot_be_read_are_never_replaced_by_aws_defaults(world: World) -> None:
    # Given an account whose applied quota is above AWS's default, and Service Quotas failing for a while
    world.amt.set_applied_quota("ml.g5.xlarge", 40)
    client = boto3.client("service-quotas", region_name="us-east-1")
    failing = [True]

    def throttle(**_: object) -> None:
        if failing[0]:
            raise ClientError(
                {"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, "ListServiceQuotas"
            )

    client.meta.events.register("before-call.service-quotas.ListServiceQuotas", throttle)
    gateway = QuotaGateway(client, clock=world.amt.clock.now, ttl=timedelta(minutes=15))
    # When nothing was ever read, the caller is told to retry (the event is redelivered), not given defaults
    with pytest.raises(TransientError):
        gateway.training_quota("ml.g5.xlarge")
    # Once read, a later failure keeps the values last read
    failing[0] = False
    assert gateway.training_quota("ml.g5.xlarge").value == 40  # type: ignore[union-attr]
    failing[0] = True
    world.amt.clock.advance(16 * 60)
    quota = gateway.training_quota("ml.g5.xlarge")
    assert quota is not None and (quota.value, quota.applied) == (40, True)
