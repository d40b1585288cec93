"""Store contract, ``DeliveryStore``: a report claimed once per channel until sent or abandoned (every adapter)."""

from __future__ import annotations

from datetime import timedelta

from tests.contract.conftest import (
    T0,
)
from tuning_governor.ports import Store

KEY = "job-a"


def test_a_delivery_is_claimed_once_until_sent_or_abandoned(store: Store) -> None:
    assert store.claim_delivery(KEY, "summary", "sns", T0) is True
    assert store.claim_delivery(KEY, "summary", "sns", T0 + timedelta(minutes=1)) is False  # being sent
    assert store.claim_delivery(KEY, "summary", "slack", T0) is True  # another channel
    assert store.delivery_sent(KEY, "summary", "sns") is False
    # A claim older than 5 minutes was abandoned by a crashed invocation: it may be claimed again
    assert store.claim_delivery(KEY, "summary", "sns", T0 + timedelta(minutes=6)) is True
    store.finish_delivery(KEY, "summary", "sns", T0 + timedelta(minutes=7), sent=True)
    assert store.delivery_sent(KEY, "summary", "sns") is True
    assert store.claim_delivery(KEY, "summary", "sns", T0 + timedelta(days=1)) is False  # sent: never again
    # A failed send gives the claim back
    store.finish_delivery(KEY, "summary", "slack", T0, sent=False)
    assert store.delivery_sent(KEY, "summary", "slack") is False
    assert store.claim_delivery(KEY, "summary", "slack", T0) is True
    sent = next(item for item in store.items(KEY) if item["sk"] == "DELIVERY#summary#sns")
    assert (sent["state"], sent["sent_at"], sent["expires_at"]) == (
        "sent",
        "2026-11-30T09:07:00.000+00:00",
        int((T0 + timedelta(minutes=7, days=90)).timestamp()),
    )


def test_a_delivery_claim_is_taken_again_by_its_own_token_only(store: Store) -> None:
    # Given a claim written under a token whose answer the caller never saw
    assert store.claim_delivery(KEY, "summary", "sns", T0, token="attempt-1") is True
    # Then the same attempt takes it again; another attempt, or a caller without a token, does not
    assert store.claim_delivery(KEY, "summary", "sns", T0 + timedelta(seconds=1), token="attempt-1") is True
    assert store.claim_delivery(KEY, "summary", "sns", T0 + timedelta(seconds=2), token="attempt-2") is False
    assert store.claim_delivery(KEY, "summary", "sns", T0 + timedelta(seconds=2)) is False
    # And once sent, not even the token that sent it claims it again
    store.finish_delivery(KEY, "summary", "sns", T0 + timedelta(seconds=3), sent=True)
    assert store.claim_delivery(KEY, "summary", "sns", T0 + timedelta(seconds=4), token="attempt-1") is False
    assert store.delivery_sent(KEY, "summary", "sns") is True
