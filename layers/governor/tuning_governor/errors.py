"""Typed errors, and the one place that maps them to what happens to the event.

Adapters translate botocore errors into these; nothing matches on message text.
"""

from __future__ import annotations

from enum import StrEnum


class Disposition(StrEnum):
    RETRY = "retry"  # raise: EventBridge retries the event, then sends it to the dead-letter queue
    DROP = "drop"  # return: record a metric and a log line; retrying cannot help


class GovernorError(Exception):
    """Base of every error the governor raises on purpose."""

    disposition = Disposition.RETRY


class RejectedEvent(GovernorError):
    """The event is not one we can read: wrong shape, wrong detail-type, bad values."""

    disposition = Disposition.DROP

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class JobNotFound(GovernorError):
    """SageMaker no longer knows the job (deleted, or an event from another account/region)."""

    disposition = Disposition.DROP


class TransientError(GovernorError):
    """Throttling, a stale read, a service hiccup: worth retrying."""


class PlaceUnreachable(TransientError):
    """The governor cannot act in an account and region (its member role cannot be assumed): retried,
    then dead-lettered; counted per account (``MembersUnreachable``) so the member is alarmed as unmanaged."""

    def __init__(self, account: str, region: str, reason: str) -> None:
        super().__init__(f"member {account} {region} unreachable: {reason}")
        self.account = account
        self.region = region
        self.reason = reason


class PlaceDenied(PlaceUnreachable):
    """The member role was assumed but refuses a call the governor makes there (its policy was changed
    in the member account): retried, then dead-lettered, and counted like an unreachable member."""


class StaleState(TransientError):
    """A conditional write lost to a concurrent one: re-read the item and try again."""


class DeliveryFailed(GovernorError):
    """A report channel failed after its own retries; the other channels were still attempted."""


class DeliveryUnconfirmed(DeliveryFailed):
    """The report went out but its answer was lost (a read timeout, a connection closed after the
    request was sent): it may have landed, so it is never sent again on that channel."""


def disposition(exc: BaseException) -> Disposition:
    """What to do with an event whose processing raised ``exc``: unknown errors are retried."""
    if isinstance(exc, GovernorError):
        return exc.disposition
    return Disposition.RETRY
