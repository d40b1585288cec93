"""The hook that gives the governor credentials for a place (an account and region).

``CredentialsProvider`` is the one seam through which another account is reached: the client factory
(``adapters/sessions.py``) asks it for a boto3 ``Session`` for a place it has no client for yet. The
home provider returns the default session; an organisation provider assumes a role in the member
account and raises ``CannotAssume`` (with the reason) when it cannot, so the caller reports the account
unmanaged instead of acting anywhere else.
"""

from __future__ import annotations

from typing import Any, Protocol

from tuning_governor.errors import PlaceUnreachable
from tuning_governor.models.place import Place


class CannotAssume(PlaceUnreachable):
    """Credentials for ``place`` could not be had (the role is missing, denied or throttled): like an
    unreachable member, counted per account and region and retried, never acted on elsewhere."""

    def __init__(self, place: Place, reason: str) -> None:
        super().__init__(place.account, place.region, reason)
        self.args = (f"cannot act in {place}: {reason}",)
        self.place = place


class CredentialsProvider(Protocol):
    def session_for(self, place: Place) -> Any:
        """A boto3 ``Session`` whose credentials act in ``place.account``; raises ``CannotAssume``."""
        ...
