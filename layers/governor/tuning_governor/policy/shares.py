"""``teams.<team>.share``: a team's quota share for the queue, as AWS Batch defines quota shares.

    teams:
      vision:
        share:
          capacity_limits: {ml.g5.xlarge: 8}   # 1 to 5 instance types, as Batch's capacity limits
          resource_sharing: LEND_AND_BORROW    # RESERVE (default) | LEND | LEND_AND_BORROW
          borrow_limit: 100                    # percent of the share per type; -1 = unlimited (default)
          priority: 10                         # deprecated: use teams.<t>.queue_priority
          preemption: allowed                  # never (default): borrowing jobs are only waited out

docs/explanation/queue.md ("Shares, lending and borrowing") gives the rules; ``domain.shares`` applies them.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from tuning_governor.domain.shares import MAX_CAPACITY_LIMITS, UNLIMITED_BORROW, ShareTerms, Strategy
from tuning_governor.model_base import GovernorModel
from tuning_governor.policy.fields import Count, InstanceType

MAX_PRIORITY = 1000


class Share(GovernorModel):
    """One team's quota share."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    capacity_limits: Annotated[dict[InstanceType, Count], Field(min_length=1, max_length=MAX_CAPACITY_LIMITS)]
    """Instances of each type the share holds (at least 1 and at most 5 types, as a Batch quota share)."""
    resource_sharing: Strategy = "RESERVE"
    """RESERVE: idle share kept for the team, never borrows; LEND: idle share lent, never borrows;
    LEND_AND_BORROW: lends, and borrows idle lent capacity up to ``borrow_limit``."""
    borrow_limit: Annotated[int, Field(ge=UNLIMITED_BORROW, le=100_000, strict=True)] | None = None
    """Most a LEND_AND_BORROW share may borrow, in percent of its capacity limit per type (200 = twice
    the share); -1 or absent = unlimited, as Batch's default. Only for LEND_AND_BORROW."""
    priority: Annotated[int, Field(ge=0, le=MAX_PRIORITY, strict=True)] = 0
    """Deprecated alias of ``teams.<t>.queue_priority`` (read as it while that is unset; validation
    warns): the scheduling priority of the team's requests (higher first within the team); 0 to 1000."""
    preemption: Literal["allowed", "never"] = "never"
    """allowed: the team's jobs running on borrowed capacity may be stopped (fewest completed trials
    first) to give a lender its share back; never: they are waited out."""

    @model_validator(mode="after")
    def _borrow_limit_needs_borrowing(self) -> Share:
        if self.borrow_limit is not None and self.resource_sharing != "LEND_AND_BORROW":
            raise PydanticCustomError(
                "borrow_limit_without_borrowing",
                "borrow_limit applies only to resource_sharing LEND_AND_BORROW (a {strategy} share never borrows):"
                " remove it or set resource_sharing: LEND_AND_BORROW",
                {"strategy": self.resource_sharing},
            )
        return self

    def terms(self) -> ShareTerms:
        """The share as the scheduling core reads it."""
        return ShareTerms(
            capacity=dict(self.capacity_limits),
            strategy=self.resource_sharing,
            borrow_limit=UNLIMITED_BORROW if self.borrow_limit is None else self.borrow_limit,
            preemptible=self.preemption == "allowed",
            priority=self.priority,
        )
