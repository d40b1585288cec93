"""What the SageMaker job models share: parsing of what AWS really sends, the base shape, the
training-cluster shapes both tuning and training jobs carry, and the job statuses.

An event ``detail`` is essentially the Describe response plus ``Tags``, so one set of models serves
both. They accept what AWS really sends: timestamps as epoch-millis int/float/string, ISO strings or
datetimes (boto3); Tags as a flat map or a Key/Value list; absent, null or empty-object fields; and
status strings outside the documented enums, which are kept verbatim. What they accept is bounded by
``models/limits.py``: numbers DynamoDB cannot hold and names that cannot be keys are rejected, invalid
tags and hyperparameters are dropped with a warning. The jobs themselves: ``models/tuning_job.py`` and
``models/training_job.py``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, Self

from pydantic import BeforeValidator, ConfigDict, PrivateAttr
from pydantic.alias_generators import to_pascal

from tuning_governor.model_base import GovernorModel
from tuning_governor.models.limits import (
    Count,
    HyperParameters,
    InstanceType,
    PositiveCount,
    Seconds,
    clean_tags,
)
from tuning_governor.models.place import Place

TUNING_TERMINAL = frozenset({"Completed", "Stopped", "Failed"})
TRAINING_TERMINAL = frozenset({"Completed", "Stopped", "Failed"})
TRAINING_RUNNING = frozenset({"InProgress", "Stopping"})

_NUMERIC = re.compile(r"^-?\d+(\.\d+)?$")


def parse_aws_time(value: Any) -> Any:
    """Turn any timestamp SageMaker emits into an aware UTC datetime (None stays None).

    Numbers and numeric strings are epoch milliseconds, as in SageMaker events.
    """
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, bool):
        raise ValueError("a timestamp cannot be a boolean")
    if isinstance(value, int | float):
        return _from_millis(value)
    if isinstance(value, str):
        text = value.strip()
        if _NUMERIC.match(text):
            return _from_millis(float(text))
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    raise ValueError(f"unsupported timestamp {value!r}")


def _from_millis(millis: float) -> datetime:
    # Out-of-range values raise OverflowError or OSError, which pydantic would not turn into a
    # validation error: make every impossible timestamp a ValueError (a rejection, not a crash).
    try:
        return datetime.fromtimestamp(millis / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError) as exc:
        raise ValueError(f"timestamp {str(millis)[:40]} ms is out of range") from exc


def parse_tags(value: Any) -> Any:
    """Tags arrive as a flat map in events and as a Key/Value list from ListTags.

    Tags that break AWS's tagging rules are dropped with a warning (see ``models/limits.py``).
    """
    return clean_tags(value)


def empty_to_none(value: Any) -> Any:
    """AWS sometimes renders an absent structure as ``{}``."""
    return None if value == {} else value


def none_to_empty(value: Any) -> Any:
    return {} if value is None else value


def none_to_list(value: Any) -> Any:
    return [] if value is None else value


AwsTime = Annotated[datetime | None, BeforeValidator(parse_aws_time)]
Tags = Annotated[dict[str, str], BeforeValidator(parse_tags)]
StrMap = HyperParameters


class AwsShape(GovernorModel):
    """Base: PascalCase aliases as in the AWS APIs, unknown fields ignored, immutable."""

    model_config = ConfigDict(
        alias_generator=to_pascal, validate_by_name=True, validate_by_alias=True, extra="ignore", frozen=True
    )


class PlacedShape(AwsShape):
    """A job SageMaker runs somewhere: its place (None: the home place) is set by the governor
    (``at``), never read from the input."""

    _place: Place | None = PrivateAttr(default=None)

    def at(self, place: Place | None) -> Self:
        """This job, known to run in ``place`` (None: the home place); itself when already so placed."""
        if place == self.place:
            return self  # frozen: the same job
        placed = self.model_copy()
        placed._place = place
        return placed

    @property
    def place(self) -> Place | None:
        private = self.__pydantic_private__  # read directly: pydantic's __getattr__ is the slow way
        return private.get("_place") if private else None


class InstanceGroup(AwsShape):
    instance_type: InstanceType
    instance_count: PositiveCount
    instance_group_name: str | None = None


class ResourceConfig(AwsShape):
    instance_type: InstanceType | None = None
    instance_count: Count | None = None
    instance_groups: Annotated[list[InstanceGroup], BeforeValidator(none_to_list)] = []
    keep_alive_period_in_seconds: Seconds | None = None
    # Read-only: "The job is billed for this instance type and count" when InstancePreferences is used.
    selected_instance_type: InstanceType | None = None
    selected_instance_count: Count | None = None
    training_plan_arn: str | None = None

    def instances(self) -> dict[str, int]:
        """Instances of the cluster by type (heterogeneous clusters sum their groups)."""
        if self.instance_groups:
            out: dict[str, int] = {}
            for group in self.instance_groups:
                out[group.instance_type] = out.get(group.instance_type, 0) + group.instance_count
            return out
        itype = self.selected_instance_type or self.instance_type
        count = self.selected_instance_count or self.instance_count
        if itype and count:
            return {itype: count}
        return {}


class StoppingCondition(AwsShape):
    max_runtime_in_seconds: Seconds | None = None
    max_wait_time_in_seconds: Seconds | None = None
