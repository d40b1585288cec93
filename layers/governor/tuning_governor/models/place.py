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
