"""Where a job lives: the AWS account and region SageMaker runs it in.

A ``Place`` travels with every job the governor handles (from the event's envelope, a described job's
ARN, or the stack's own account and region) and is what clients are asked for with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ACCOUNT = re.compile(r"\d{12}")
_REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-\d{1,2}")


@dataclass(frozen=True, slots=True)
class Place:
    """An account id (12 digits) and a region name; rejected with a reason when either is malformed."""

    account: str
    region: str

    def __post_init__(self) -> None:
        if not _ACCOUNT.fullmatch(self.account):
            raise ValueError("account is not a 12-digit AWS account id")
        if not _REGION.fullmatch(self.region):
            raise ValueError("region is not an AWS region name")

    @classmethod
    def of_arn(cls, arn: str) -> Place:
        """The place named by a resource ARN (``arn:aws:sagemaker:<region>:<account>:...``)."""
        parts = arn.split(":")
        if len(parts) < 6 or parts[0] != "arn":
            raise ValueError("not an ARN with a region and an account")
        return cls(account=parts[4], region=parts[3])

    def __str__(self) -> str:
        return f"{self.account}/{self.region}"


def job_key(name: str, place: Place | None, home: Place | None) -> str:
    """A tuning job's key: its lower-case name in the home place (today's key, so stored items stay
    readable), ``<account>/<region>/<name>`` anywhere else. SageMaker names never hold "/", so the two
    forms cannot meet."""
    plain = name.lower()
    if place is None or place == home:
        return plain
    return f"{place.account}/{place.region}/{plain}"


def place_in_key(key: str) -> Place | None:
    """The place a job key names, None for a plain (home) key: the key alone says where a job lives."""
    parts = key.split("/")
    return Place(parts[0], parts[1]) if len(parts) == 3 else None


def name_in_key(key: str) -> str:
    """The (lower-case) job name a job key holds, whatever its place."""
    return key.rsplit("/", 1)[-1]


def away(place: Place | None, home: Place | None) -> Place | None:
    """``place`` unless it is the home place (or the home is not known): None means "at home", the form
    a job carries so that its key stays today's plain name there."""
    return None if place is None or home is None or place == home else place


def place_of_key(key: str, home: Place) -> Place:
    """The place a job key names (the home place for a plain name)."""
    parts = key.split("/")
    return Place(parts[0], parts[1]) if len(parts) == 3 else home


def ledger_pk(place: Place | None, home: Place | None) -> str:
    """The capacity ledger's partition key: one ledger per account and region (quotas apply there);
    the home place keeps today's ``CAPACITY``."""
    if place is None or place == home:
        return "CAPACITY"
    return f"CAPACITY#{place.account}#{place.region}"
