"""The policy's field types and their validators: instance types, secret names, topic ARNs, Slack
member IDs, counts and amounts, and prices per instance type or region (grace periods per rule are
``policy.rules``': the rules declare which may wait)."""

from __future__ import annotations

import difflib
import re
from decimal import Decimal
from functools import cache
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    TypeAdapter,
    ValidationError,
    ValidatorFunctionWrapHandler,
)
from pydantic_core import PydanticCustomError

from tuning_governor.domain.channels import CHANNEL_KINDS
from tuning_governor.domain.pricing import BILLING_CODES
from tuning_governor.models.limits import dynamodb_number_problem

# Lower case only: SageMaker spells instance types in lower case, and a key that never matches a real type
# would silently govern nothing.
_INSTANCE_TYPE = re.compile(r"^ml\.[a-z][a-z0-9-]*\.[a-z0-9]+$")
# A Secrets Manager secret NAME (an ARN has ":", a URL "://"): 1-512 letters, digits and /_+=.@-.
_SECRET_NAME = re.compile(r"^[A-Za-z0-9/_+=.@-]{1,512}$")
# A standard SNS topic ARN (a FIFO topic needs a message group, which reports do not have).
TOPIC_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):sns:(?P<region>[a-z]{2}(-[a-z]+)+-\d{1,2}):(?P<account>[0-9]{12}):"
    r"(?P<name>[A-Za-z0-9_-]{1,256})$"
)


# -- field types -------------------------------------------------------------------------------------
def _instance_type(value: str) -> str:
    if not _INSTANCE_TYPE.match(value):
        raise PydanticCustomError(
            "instance_type", "expected a SageMaker instance type ml.<family>.<size> in lower case, e.g. ml.p3.2xlarge"
        )
    return value


def none_to_empty(value: Any) -> Any:
    # A section whose entries are all commented out (``quotas:``) reads as null in YAML: it means "none".
    return {} if value is None else value


def _secret_name(value: str) -> str:
    if not _SECRET_NAME.match(value):
        raise PydanticCustomError(
            "secret_name",
            "expected the name of a Secrets Manager secret (1-512 letters, digits and /_+=.@-, e.g."
            " tuning-governor/teams/vision), not an ARN or a webhook URL",
        )
    return value


def _topic_arn(value: str) -> str:
    if not TOPIC_ARN.match(value):
        raise PydanticCustomError(
            "topic_arn",
            "expected the ARN of a standard SNS topic, arn:aws:sns:<region>:<account id>:<topic name>",
        )
    return value


#: A Slack member ID (U..., or W... on Enterprise Grid): the only thing a report ever mentions.
SLACK_MEMBER_ID = re.compile(r"^[UW][A-Z0-9]{2,20}$")


def _channel_targets(value: dict[str, str]) -> dict[str, str]:
    """Each ``kind: target`` a registered channel kind, its target a secret name or a topic ARN as the
    kind says."""
    for kind, target in value.items():
        registered = CHANNEL_KINDS.get(kind)
        if registered is None:
            raise PydanticCustomError(
                "channel_kind",
                "unknown channel kind {kind}; the kinds are {known}",
                {"kind": kind, "known": ", ".join(CHANNEL_KINDS)},
            )
        (_topic_arn if registered.target == "topic" else _secret_name)(target)
    return value


def _slack_member(value: str) -> str:
    if not SLACK_MEMBER_ID.match(value):
        raise PydanticCustomError(
            "slack_member", "expected a Slack member ID: U or W then upper-case letters and digits, e.g. U012AB3CD"
        )
    return value


InstanceType = Annotated[str, AfterValidator(_instance_type)]
SecretName = Annotated[str, Field(strict=True), AfterValidator(_secret_name)]
TopicArn = Annotated[str, Field(strict=True), AfterValidator(_topic_arn)]
SlackMemberId = Annotated[str, Field(strict=True), AfterValidator(_slack_member)]
ChannelTargets = Annotated[dict[str, Annotated[str, Field(strict=True)]], AfterValidator(_channel_targets)]
# An owner tag value as a job carries it (AWS tag values: at most 256 characters).
OwnerValue = Annotated[str, Field(min_length=1, max_length=256)]
# -- bounds: every number the policy sets stays where the arithmetic on it cannot overflow -------------
MAX_BUDGET_USD = Decimal(1_000_000_000)
"""The largest budget (per job, per team and month, or spent since an improvement): far above any
training bill, and small enough that every figure derived from it is exact and storable."""
MAX_COUNT = 1_000_000
"""The largest quota, team limit or count of trials (the bound the models put on SageMaker's counts)."""
MAX_PRICE_USD_PER_HOUR = Decimal(10_000)
"""The largest price per instance-hour a policy may set (SageMaker's dearest training instances cost
about a hundredth of it): a cost of 10^6 instances for 10^10 s stays exact to the micro-dollar."""
MAX_HOURS = 87_600
"""Ten years: the largest runtime cap (and, in minutes, stagnation period); times stay in datetime's range."""


def _storable_money(value: Decimal) -> Decimal:
    # The amount is recorded with the decision: DynamoDB keeps at most 38 significant digits.
    problem = dynamodb_number_problem(value)
    if problem:
        raise PydanticCustomError("money_digits", "{problem}", {"problem": problem})
    return value


# strict: YAML reads ``yes``/``true`` as booleans, which lax int/float validation would take as 1.
Count = Annotated[int, Field(ge=0, le=MAX_COUNT, strict=True)]
Money = Annotated[Decimal, Field(ge=0, le=MAX_BUDGET_USD, allow_inf_nan=False), AfterValidator(_storable_money)]
Hours = Annotated[float, Field(ge=0, le=MAX_HOURS, strict=True, allow_inf_nan=False)]
Minutes = Annotated[float, Field(ge=0, le=MAX_HOURS * 60, strict=True, allow_inf_nan=False)]
Price = Annotated[Decimal, Field(gt=0, le=MAX_PRICE_USD_PER_HOUR, allow_inf_nan=False)]
TagKey = Annotated[str, Field(min_length=1, max_length=128)]

# -- prices: <instance type>: <price> (every region) or <region>: {<instance type>: <price>} -------------
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d{1,2}$")
# Regions a policy may price beyond the commercial ones the refresh covers (no Price List refresh there).
_OTHER_PARTITION_REGIONS = frozenset({"us-gov-west-1", "us-gov-east-1", "cn-north-1", "cn-northwest-1"})


@cache
def _prices_adapter(*, per_region: bool) -> TypeAdapter[Any]:
    """What validates one entry: an instance type's price, or a region's prices (built on first use)."""
    if not per_region:
        return TypeAdapter(Price)
    return TypeAdapter(
        Annotated[dict[Annotated[str, AfterValidator(_instance_type)], Price], BeforeValidator(none_to_empty)]
    )


def _price_key_problem(key: Any) -> str | None:
    if not isinstance(key, str):
        return "expected an instance type such as ml.p3.2xlarge or a region such as eu-west-1"
    if _INSTANCE_TYPE.match(key):
        return None
    if _REGION.match(key):
        known = set(BILLING_CODES) | _OTHER_PARTITION_REGIONS
        if key in known:
            return None
        hint = difflib.get_close_matches(key, sorted(known), n=1)
        return f"unknown region{f' (did you mean {hint[0]}?)' if hint else ''}"
    return (
        "expected an instance type ml.<family>.<size> in lower case (a price for every region)"
        " or a region such as eu-west-1 (a mapping of prices for that region)"
    )


def validate_prices(value: Any, handler: ValidatorFunctionWrapHandler) -> dict[str, Any]:
    """Validate each entry by the kind of its key, reporting problems at their exact path."""
    value = none_to_empty(value)
    if not isinstance(value, dict):
        return dict(handler(value))  # the usual "expected a mapping" at ``prices``
    out: dict[str, Any] = {}
    errors: list[Any] = []
    for key, item in value.items():
        problem = _price_key_problem(key)
        if problem is not None:
            errors.append({"type": PydanticCustomError("price_key", problem), "loc": (str(key), "[key]"), "input": key})
            continue
        adapter = _prices_adapter(per_region=not _INSTANCE_TYPE.match(key))
        try:
            out[key] = adapter.validate_python(item)
        except ValidationError as exc:
            for err in exc.errors(include_url=False):
                message = err["msg"].replace("{", "{{").replace("}", "}}")
                errors.append(
                    {
                        "type": PydanticCustomError(err["type"], message, err.get("ctx")),
                        "loc": (key, *err["loc"]),
                        "input": err.get("input"),
                    }
                )
    if errors:
        raise ValidationError.from_exception_data("prices", errors)
    return out
