"""The governance policy: what the guards enforce, parsed from YAML or JSON and loaded from a file or SSM.

The document (every key optional; see ``policy.example.yaml`` and ``docs/policy.md``)::

    mode: enforce                     # enforce | monitor (the default: decide and report, never stop)
    exempt_tag: governance:exempt     # tag value "true": never stopped, decisions still reported
    team_tag: team                    # tag naming the owning team
    budget_tag: governance:budget-usd # tag overriding the job's budget
    quotas: {ml.p3.2xlarge: 8}        # account limit of concurrent instances per type
    teams: {vision: {instances: {ml.p3.2xlarge: 4}, job_budget_usd: 500, monthly_budget_usd: 20000}}
    defaults: {job_budget_usd: 1000, max_runtime_hours: 48, stagnation_trials: 0, stagnation_minutes: 0,
               stagnation_usd: 0, max_failed_trials: 0,
               grace_minutes: {budget: 30}}  # per rule: notice first, stop at the breach + 30 min
    prices: {ml.p3.2xlarge: 3.825, eu-north-1: {ml.g5.xlarge: 1.6}}  # USD per instance-hour, all regions or
                                      # one region; they fill gaps (refreshed and bundled catalogs win)
    teams: {vision: {slack_secret: tuning-governor/teams/vision,   # a team's own report channels, besides
                     sns_topic_arn: arn:aws:sns:us-east-1:123456789012:tg-team-vision}}  # the default ones
    slack_users: {alice@example.com: U012AB3CD}  # owner tag value -> Slack member ID, for mentions

The models and their query helpers are pure (no AWS); the sources at the bottom read the text, from a
file (default: the conservative policy bundled in the layer) or an SSM parameter through Powertools
Parameters, and keep the last good policy when an update is invalid.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from decimal import Decimal, InvalidOperation
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from tuning_governor.domain.pricing import BILLING_CODES
from tuning_governor.domain.reports import SLACK_MEMBER_ID
from tuning_governor.errors import GovernorError, TransientError
from tuning_governor.models.limits import dynamodb_number_problem
from tuning_governor.observability import logger

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.parameters import SSMProvider

Mode = Literal["enforce", "monitor"]
BudgetSource = Literal["tag", "team", "default", "none"]

DEFAULT_BUDGET_TAG = "governance:budget-usd"
_DEPRECATED_KEYS = frozenset({"budget_usd"})  # under defaults and teams.<team>: now job_budget_usd
_DEPRECATED_BUDGET = (
    "{old} is deprecated: rename it to {new} (a budget per tuning job; teams.<team>.monthly_budget_usd is"
    " a team's budget for the month); the old name is read until the next release"
)
DEFAULT_MAX_AGE_SECONDS = 300.0
BUNDLED_POLICY = "default-policy.yaml"

# Lower case only: SageMaker spells instance types in lower case, and a key that never matches a real type
# would silently govern nothing.
_INSTANCE_TYPE = re.compile(r"^ml\.[a-z][a-z0-9-]*\.[a-z0-9]+$")
# A budget as people write it: 50, 50.00, $50, 50 USD, USD 50 (any case), 1,000 (thousands grouped by 3).
_BUDGET_TAG = re.compile(
    r"^(?:(?P<pre>usd)\s*)?\$?\s*(?P<whole>[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?P<fraction>\.[0-9]+)?\s*(?P<post>usd)?$",
    re.IGNORECASE | re.ASCII,
)
_PLAIN_SEGMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
# A Secrets Manager secret NAME (an ARN has ":", a URL "://"): 1-512 letters, digits and /_+=.@-.
_SECRET_NAME = re.compile(r"^[A-Za-z0-9/_+=.@-]{1,512}$")
# A standard SNS topic ARN (a FIFO topic needs a message group, which reports do not have).
TOPIC_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):sns:(?P<region>[a-z]{2}(-[a-z]+)+-\d{1,2}):(?P<account>[0-9]{12}):"
    r"(?P<name>[A-Za-z0-9_-]{1,256})$"
)
_MAX_PROBLEMS = 8
_MAX_GIVEN = 60
_MAX_MESSAGE = 1000


# -- errors ------------------------------------------------------------------------------------------
class PolicyError(GovernorError, ValueError):
    """The policy text is not a valid policy. ``problems`` lists each one (path, expected, given).

    The message stays under about 1 KB. Disposition RETRY: without a policy no event can be governed,
    and the event succeeds once an operator fixes the document.
    """

    def __init__(self, source: str, problems: list[str], headline: str = "is invalid") -> None:
        self.source = source
        self.problems = tuple(problems)
        message = f"policy {source[:200]} {headline}" + (":" if problems else "")
        for index, problem in enumerate(problems):
            line = "\n  - " + (problem if len(problem) <= 300 else problem[:297] + "...")
            rest = len(problems) - index
            # Keep room for the "... and N more" line so the message never ends mid-problem.
            if index == _MAX_PROBLEMS or len(message) + len(line) > _MAX_MESSAGE - 30:
                message += f"\n  ... and {rest} more"
                break
            message += line
        super().__init__(message)


class PolicyUnavailable(TransientError):
    """The policy source could not be read (SSM error, missing file). Retried like any transient error."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"policy {source} could not be read: {reason[:300]}")
        self.source = source


# -- field types -------------------------------------------------------------------------------------
def _instance_type(value: str) -> str:
    if not _INSTANCE_TYPE.match(value):
        raise PydanticCustomError(
            "instance_type", "expected a SageMaker instance type ml.<family>.<size> in lower case, e.g. ml.p3.2xlarge"
        )
    return value


def _none_to_empty(value: Any) -> Any:
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
# An owner tag value as a job carries it (AWS tag values: at most 256 characters).
OwnerValue = Annotated[str, Field(min_length=1, max_length=256)]
# strict: YAML reads ``yes``/``true`` as booleans, which lax int/float validation would take as 1.
Count = Annotated[int, Field(ge=0, strict=True)]
Money = Annotated[Decimal, Field(ge=0, allow_inf_nan=False)]
Price = Annotated[Decimal, Field(gt=0, allow_inf_nan=False)]
TagKey = Annotated[str, Field(min_length=1, max_length=128)]

# -- grace periods: <rule>: <minutes> ----------------------------------------------------------------
#: The rules a grace period may delay: those that stop one job on what it has done so far.
GraceRule = Literal["budget", "runtime", "stagnation", "failed-trials"]
_NO_GRACE = {
    "concurrency": (
        "concurrency is judged once, when the job arrives: a grace period would let it hold instances that"
        " the jobs arriving after it are refused, so it stays 0"
    ),
    "team-budget": (
        "team-budget stops every running job of the team at once and has its own projected warning before"
        " the breach; a grace period is not supported for it"
    ),
}
# A month: longer than any sensible notice, and keeps stop times far inside datetime's range.
_MAX_GRACE_MINUTES = 43_200


def _grace_rules(value: Any) -> Any:
    value = _none_to_empty(value)
    if isinstance(value, dict):
        for key in value:
            if key in _NO_GRACE:
                raise PydanticCustomError("no_grace", "{rule}: {why}", {"rule": key, "why": _NO_GRACE[key]})
    return value


GraceMinutes = Annotated[
    dict[GraceRule, Annotated[float, Field(ge=0, le=_MAX_GRACE_MINUTES, strict=True, allow_inf_nan=False)]],
    BeforeValidator(_grace_rules),
]


# -- prices: <instance type>: <price> (every region) or <region>: {<instance type>: <price>} -------------
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d{1,2}$")
# Regions a policy may price beyond the commercial ones the refresh covers (no Price List refresh there).
_OTHER_PARTITION_REGIONS = frozenset({"us-gov-west-1", "us-gov-east-1", "cn-north-1", "cn-northwest-1"})
_PRICE_ADAPTER: TypeAdapter[Decimal] = TypeAdapter(Annotated[Decimal, Field(gt=0, allow_inf_nan=False)])
_REGION_PRICES_ADAPTER: TypeAdapter[dict[str, Decimal]] = TypeAdapter(
    Annotated[
        dict[Annotated[str, AfterValidator(_instance_type)], Annotated[Decimal, Field(gt=0, allow_inf_nan=False)]],
        BeforeValidator(_none_to_empty),
    ]
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


def _prices(value: Any, handler: ValidatorFunctionWrapHandler) -> dict[str, Any]:
    """Validate each entry by the kind of its key, reporting problems at their exact path."""
    value = _none_to_empty(value)
    if not isinstance(value, dict):
        return dict(handler(value))  # the usual "expected a mapping" at ``prices``
    out: dict[str, Any] = {}
    errors: list[Any] = []
    for key, item in value.items():
        problem = _price_key_problem(key)
        if problem is not None:
            errors.append({"type": PydanticCustomError("price_key", problem), "loc": (str(key), "[key]"), "input": key})
            continue
        adapter: TypeAdapter[Any] = _PRICE_ADAPTER if _INSTANCE_TYPE.match(key) else _REGION_PRICES_ADAPTER
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


class _PolicyModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Defaults(_PolicyModel):
    """What applies to every tuning job unless a team or a tag says otherwise. 0 switches a guard off."""

    job_budget_usd: Money | None = None
    """Budget per tuning job in USD; None or 0 = no budget."""
    budget_usd: Money | None = None
    """Deprecated old name of ``job_budget_usd`` (still read for one release, with a policy warning)."""
    max_runtime_hours: Annotated[float, Field(ge=0, strict=True, allow_inf_nan=False)] = 0.0
    """Stop a tuning job running longer than this (0 = off)."""
    stagnation_trials: Count = 0
    """Stop after this many completed trials without a 1 % (or greater) improvement of the best (0 = off)."""
    stagnation_minutes: Annotated[float, Field(ge=0, strict=True, allow_inf_nan=False)] = 0.0
    """Stop when the best objective has not improved for this many minutes (0 = off)."""
    stagnation_usd: Money = Decimal(0)
    """Stop when the job has spent this many USD since its best objective last improved (0 = off)."""
    max_failed_trials: Count = 0
    """Stop after this many failed trials (0 = off)."""
    budget_stop_lead_seconds: Annotated[int, Field(ge=0, le=3600, strict=True)] = 120
    """A job's budget is breached when spent + this many seconds of its running trials' burn reaches it:
    billing goes on until the stopped trials are ``Stopped`` (StopTrainingJob's 120 s SIGTERM grace at
    most), so asking then ends the job's bill at its budget rather than past it (0 = at the budget)."""
    grace_minutes: GraceMinutes = {}
    """Per rule (budget, runtime, stagnation, failed-trials): minutes between a job's first breach and its
    stop. The first breach reports "will stop at T unless ..."; the job is stopped at the first judgement
    at or after T (the one-time check asked for T, an event, or a sweep) at which the breach still holds.
    Absent or 0 = stop at the breach. Exempt jobs get no notice (they are never stopped)."""

    @model_validator(mode="after")
    def _one_name_per_budget(self) -> Defaults:
        if self.budget_usd is not None and self.job_budget_usd is not None:
            raise PydanticCustomError(
                "deprecated_duplicate",
                "set job_budget_usd only: budget_usd is its deprecated old name, and both are set",
            )
        return self

    @property
    def job_budget(self) -> Decimal | None:
        """The default per-job budget, under its new or its deprecated name."""
        return self.job_budget_usd if self.job_budget_usd is not None else self.budget_usd


class TeamPolicy(_PolicyModel):
    """One team's own limits; they apply on top of the account limits, never instead of them."""

    instances: Annotated[dict[InstanceType, Count], BeforeValidator(_none_to_empty)] = {}
    """The team's limit of concurrent training instances per type (a type not listed: no team limit)."""
    job_budget_usd: Money | None = None
    """Budget per tuning job of this team; None = not set (the default applies), 0 = no budget."""
    monthly_budget_usd: Money | None = None
    """The team's budget for a calendar month (UTC) over all its tuning jobs; None or 0 = none."""
    budget_usd: Money | None = None
    """Deprecated old name of ``job_budget_usd`` (still read for one release, with a policy warning)."""
    slack_secret: SecretName | None = None
    """Name of the Secrets Manager secret holding the team's own Slack incoming-webhook URL (a plain URL
    or JSON ``{"webhook_url": ...}``); used only under the stack's ``SlackSecretPrefix``."""
    sns_topic_arn: TopicArn | None = None
    """The team's own SNS topic for its reports; used only in the stack's account and region and under
    its ``TeamTopicPrefix``."""

    @model_validator(mode="after")
    def _one_name_per_budget(self) -> TeamPolicy:
        if self.budget_usd is not None and self.job_budget_usd is not None:
            raise PydanticCustomError(
                "deprecated_duplicate",
                "set job_budget_usd only: budget_usd is its deprecated old name, and both are set",
            )
        return self

    @property
    def job_budget(self) -> Decimal | None:
        """The per-job budget this team sets, under its new or its deprecated name."""
        return self.job_budget_usd if self.job_budget_usd is not None else self.budget_usd


class Budget(BaseModel):
    """The budget of one tuning job and which level of the policy decided it.

    ``usd`` is None when the job has no budget (a level set 0, or no level set anything); it is never 0.
    ``warning`` explains a budget tag that was present but ignored.
    """

    model_config = ConfigDict(frozen=True)

    usd: Decimal | None
    source: BudgetSource
    warning: str | None = None


class Policy(_PolicyModel):
    """The governance policy. Immutable; every key has a default, so ``Policy()`` is the empty policy.

    Defaults are chosen to be harmless: mode ``monitor`` (nothing is ever stopped until a policy says
    ``enforce``), no quotas, no team limits, no budget, every stop guard off.
    """

    mode: Mode = "monitor"
    exempt_tag: TagKey = "governance:exempt"
    team_tag: TagKey = "team"
    budget_tag: TagKey = DEFAULT_BUDGET_TAG
    quotas: Annotated[dict[InstanceType, Count], BeforeValidator(_none_to_empty)] = {}
    spot_quotas: Annotated[dict[InstanceType, Count], BeforeValidator(_none_to_empty)] = {}
    """Account limit of concurrent managed-spot instances per type (AWS counts spot separately)."""
    teams: Annotated[
        dict[Annotated[str, Field(min_length=1)], Annotated[TeamPolicy, BeforeValidator(_none_to_empty)]],
        BeforeValidator(_none_to_empty),
    ] = {}
    defaults: Annotated[Defaults, BeforeValidator(_none_to_empty)] = Defaults()
    prices: Annotated[dict[str, Price | dict[str, Price]], WrapValidator(_prices)] = {}
    """USD per instance-hour: ``<instance type>: <price>`` for every region, or ``<region>: {<instance
    type>: <price>}`` for one region. They fill gaps only: the refreshed and bundled catalogs win."""
    slack_users: Annotated[dict[OwnerValue, SlackMemberId], BeforeValidator(_none_to_empty)] = {}
    """Owner tag value (``alice@example.com``, ``alice``) -> Slack member ID, so Slack reports mention
    the job's owner; see ``slack_member``."""

    @property
    def enforcing(self) -> bool:
        """True when decisions may stop jobs; in monitor mode they are only reported."""
        return self.mode == "enforce"

    def team_of(self, tags: Mapping[str, str]) -> str | None:
        """The owning team: the value of the ``team_tag`` tag, trimmed; None when absent or blank.

        The team need not be listed under ``teams`` (then it has no team limits or team budget).
        """
        value = tags.get(self.team_tag, "").strip()
        return value or None

    def is_exempt(self, tags: Mapping[str, str]) -> bool:
        """True when the job carries ``exempt_tag`` with the value ``true`` (any case, spaces trimmed).

        An exempt job is never stopped; its decisions are still evaluated and reported. Any other
        value (``yes``, ``1``, empty) is not an exemption, and neither is a key that matches
        ``exempt_tag`` only when case is ignored (AWS tag keys are case-sensitive): a typo fails safe
        towards governance, and ``tag_warnings`` reports it.
        """
        return tags.get(self.exempt_tag, "").strip().lower() == "true"

    def budget_for(self, tags: Mapping[str, str]) -> Budget:
        """The job's budget in USD. The first level that is set decides:

        1. the job tag ``budget_tag`` (an amount as ``parse_budget_tag`` reads it: ``250``, ``99.50``,
           ``$250``, ``250 USD``, ``USD 1,000``; any other value, or a key that matches ``budget_tag``
           only when case is ignored, is ignored with ``Budget.warning`` saying why, and the next
           level decides);
        2. ``teams.<team>.job_budget_usd`` of the job's team (see ``team_of``; or its deprecated old
           name ``budget_usd``);
        3. ``defaults.job_budget_usd`` (or its deprecated old name ``defaults.budget_usd``);
        4. otherwise no budget (``source="none"``).

        A level set to 0 decides "no budget" and the levels below it are not consulted (a team can opt
        out of the default budget; a job can opt out by tag). ``usd`` is then None, never 0.
        """
        raw, warning = tag_lookup(tags, self.budget_tag)
        if raw is not None:
            amount = parse_budget_tag(raw)
            if amount is not None:
                return Budget(usd=amount or None, source="tag", warning=warning)
            warning = "; ".join(w for w in (_bad_budget(self.budget_tag, raw).message, warning) if w)
        team = self.teams.get(self.team_of(tags) or "")
        if team is not None and team.job_budget is not None:
            return Budget(usd=team.job_budget or None, source="team", warning=warning)
        default = self.defaults.job_budget
        if default is not None:
            return Budget(usd=default or None, source="default", warning=warning)
        return Budget(usd=None, source="none", warning=warning)

    def tag_warnings(self, tags: Mapping[str, str]) -> list[TagWarning]:
        """Governance tags on a job that the governor cannot honour as written, in a stable order:

        a ``budget_tag`` value ``parse_budget_tag`` cannot read; an ``exempt_tag`` value other than
        true/false (any case); any key that matches ``budget_tag`` or ``exempt_tag`` only when case
        is ignored. Each is governed as if absent (see ``budget_for`` and ``is_exempt``).
        """
        out: list[TagWarning] = []
        raw = tags.get(self.budget_tag)
        if raw is not None and parse_budget_tag(raw) is None:
            out.append(_bad_budget(self.budget_tag, raw))
        out += _near_misses(tags, self.budget_tag)
        exempt = tags.get(self.exempt_tag)
        if exempt is not None and exempt.strip().lower() not in {"true", "false"}:
            out.append(
                TagWarning(key=self.exempt_tag, value=exempt, problem='is not an exemption: only "true" exempts a job')
            )
        out += _near_misses(tags, self.exempt_tag)
        return out

    def grace_for(self, rule: str) -> timedelta | None:
        """The grace period between ``rule``'s first breach on a job and its stop; None = stop at once."""
        minutes = self.defaults.grace_minutes.get(rule)  # type: ignore[call-overload]
        return timedelta(minutes=minutes) if minutes else None

    def slack_member(self, owner: str | None) -> str | None:
        """The Slack member ID to mention for a job's owner tag value: its entry in ``slack_users``
        (exact, then ignoring case), or the value itself when it is a member ID (``U012AB3CD``); None
        otherwise (the owner is then named as plain text, never pinged)."""
        value = (owner or "").strip()
        if not value:
            return None
        mapped = self.slack_users.get(value)
        if mapped is None:
            folded = value.casefold()
            mapped = next((v for k, v in sorted(self.slack_users.items()) if k.strip().casefold() == folded), None)
        if mapped is not None:
            return mapped
        return value if SLACK_MEMBER_ID.match(value) else None

    def team_monthly_budget(self, team: str | None) -> Decimal | None:
        """The team's budget for a calendar month over all its jobs; None when it has none (0 = none)."""
        policy = self.teams.get(team) if team is not None else None
        return (policy.monthly_budget_usd or None) if policy is not None else None

    def warnings(self) -> list[str]:
        """What is valid but should change: deprecated keys still read (logged when the policy loads)."""
        found: list[str] = []
        if self.defaults.budget_usd is not None:
            found.append(_DEPRECATED_BUDGET.format(old="defaults.budget_usd", new="defaults.job_budget_usd"))
        for name, team in sorted(self.teams.items()):
            if team.budget_usd is not None:
                path = render_path(("teams", name))
                found.append(_DEPRECATED_BUDGET.format(old=f"{path}.budget_usd", new=f"{path}.job_budget_usd"))
        return found

    def team_limit(self, team: str | None, instance_type: str) -> int | None:
        """The team's own limit of concurrent ``instance_type`` instances; None when it has none.

        It applies on top of the account limit: a job must fit both.
        """
        policy = self.teams.get(team) if team is not None else None
        return policy.instances.get(instance_type) if policy is not None else None

    def account_limit(self, instance_type: str) -> int | None:
        """The policy's account limit (``quotas``) of concurrent ``instance_type`` instances; None if unset.

        This is only the policy's figure: the effective limit also depends on the applied Service Quota,
        see ``effective_account_limit``.
        """
        return self.quotas.get(instance_type)

    def effective_account_limit(self, instance_type: str, applied_quota: int | None) -> int | None:
        """The lower of the policy's quota and the applied Service Quota (either may be unknown: None).

        None only when neither is known.
        """
        limits = [limit for limit in (self.account_limit(instance_type), applied_quota) if limit is not None]
        return min(limits) if limits else None

    def price_overrides(self) -> dict[str, Decimal]:
        """The all-region ``prices`` (``<instance type>: <USD per hour>``; a copy, safe to modify).

        They price a type in a region where neither the refreshed catalog nor the bundled one has it.
        """
        return {key: value for key, value in self.prices.items() if isinstance(value, Decimal)}

    def regional_prices(self) -> dict[str, dict[str, Decimal]]:
        """The per-region ``prices`` (``<region>: {<instance type>: <USD per hour>}``; a copy).

        For their region they come before the all-region ones, after both catalogs.
        """
        return {key: dict(value) for key, value in self.prices.items() if isinstance(value, dict)}


def parse_budget_tag(raw: str) -> Decimal | None:
    """The USD amount a budget tag value spells, or None when it spells none.

    Accepted: a non-negative amount with an optional fraction (``50``, ``50.00``), optionally
    prefixed by ``$`` and/or ``USD``, or followed by ``USD`` (``USD`` in any case, spaces optional),
    with optional thousands separators grouped by three (``1,000``, ``$1,250,000.50``). Rejected:
    anything else, e.g. negatives, exponents, other currencies, ``USD 50 USD``, a decimal comma
    (``50,5``), ``1,00``, spaces inside the number, digits other than 0-9. (SageMaker's tag value
    pattern has no ``$`` or ``,``; those spellings are accepted for tags that reach the governor
    another way, e.g. a replayed event log.)
    """
    match = _BUDGET_TAG.match(raw.strip())
    if match is None or (match["pre"] and match["post"]):
        return None
    try:
        amount = Decimal(match["whole"].replace(",", "") + (match["fraction"] or ""))
    except InvalidOperation:  # pragma: no cover - the pattern admits only valid decimals
        return None
    # The budget is recorded with the decision: an amount DynamoDB cannot hold is not a budget.
    return None if dynamodb_number_problem(amount) else amount


class TagWarning(BaseModel):
    """A governance tag the governor does not honour as written: which tag, its value, and why."""

    model_config = ConfigDict(frozen=True)

    key: str
    value: str
    problem: str

    @property
    def message(self) -> str:
        return f"tag {self.key}={_given(self.value)} {self.problem}"


def _near_misses(tags: Mapping[str, str], key: str) -> list[TagWarning]:
    # People type Governance:Exempt; AWS tag keys are case-sensitive, so it is not the tag the policy names.
    wanted = key.strip().casefold()
    return [
        TagWarning(
            key=other,
            value=value,
            problem=f"ignored: tag keys are case-sensitive and the policy's tag is {key}",
        )
        for other, value in sorted(tags.items())
        if other != key and other.strip().casefold() == wanted
    ]


def _bad_budget(key: str, raw: str) -> TagWarning:
    return TagWarning(
        key=key,
        value=raw,
        problem="ignored: not an amount of USD (e.g. 250, 99.50, 250 USD or USD 1,000); the next budget source applies",
    )


def tag_lookup(tags: Mapping[str, str], key: str) -> tuple[str | None, str | None]:
    """The value of tag ``key`` (exact, case-sensitive match, as AWS tag keys are), and a warning naming
    any other key that matches ``key`` only when case (or surrounding space) is ignored; those are
    never read as ``key``."""
    misses = _near_misses(tags, key)
    return tags.get(key), "; ".join(w.message for w in misses) or None


# -- parsing -----------------------------------------------------------------------------------------
class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys: PyYAML would silently keep the last one."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if isinstance(key, str | int | float | bool) or key is None:
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {_given(key)}", key_node.start_mark)
            seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


class _DuplicateJsonKey(ValueError):
    pass


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateJsonKey(f"duplicate key {_given(key)}")
        out[key] = value
    return out


def _load_document(text: str, source: str) -> Any:
    body = text.removeprefix("\ufeff")
    if body.lstrip().startswith("{"):
        try:
            return json.loads(body, object_pairs_hook=_json_object)
        except _DuplicateJsonKey as exc:
            raise PolicyError(source, [f"JSON: {exc}"], "is not valid JSON") from None
        except json.JSONDecodeError as exc:
            json_error = exc  # it may still be a YAML flow mapping; if not, JSON was meant
        try:
            return yaml.load(body, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
        except yaml.YAMLError:
            problem = f"line {json_error.lineno}, column {json_error.colno}: {json_error.msg}"
            raise PolicyError(source, [problem], "is not valid JSON") from None
    try:
        return yaml.load(body, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        what = ": ".join(part for part in (exc.context, exc.problem) if part) or "syntax error"
        raise PolicyError(source, [f"{where}{what}"], "is not valid YAML") from None
    except yaml.YAMLError as exc:
        raise PolicyError(source, [str(exc)[:200]], "is not valid YAML") from None


def parse_policy(text: str, source: str) -> Policy:
    """Parse and validate a policy written in YAML or JSON (text starting with ``{`` is read as JSON).

    ``source`` names where the text came from, for messages (e.g. ``ssm:/governor/policy``).
    Raises ``PolicyError`` for an empty or non-mapping document, a syntax error (with its line), a
    duplicate key, and every invalid key, each reported with its path (``teams.vision.instances
    ["ml.p3.2xlarge"]``), what was expected and what was given.
    """
    document = _load_document(text, source)
    if document is None or document == "":
        raise PolicyError(source, [], "is empty (an empty policy must be written as {})")
    if not isinstance(document, dict):
        raise PolicyError(source, [f"the document is {_kind(document)}, expected a mapping of keys"], "is invalid")
    try:
        return Policy.model_validate(document)
    except ValidationError as exc:
        raise PolicyError(source, [_describe(err) for err in exc.errors(include_url=False)]) from None


def render_path(loc: tuple[int | str, ...]) -> str:
    """A key path as written in the document: ``teams.vision.instances["ml.p3.2xlarge"]``.

    Keys that are not plain identifiers (dots, spaces, numbers) are quoted in brackets so the path
    is unambiguous.
    """
    out = ""
    for part in loc:
        if isinstance(part, str) and _PLAIN_SEGMENT.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part, ensure_ascii=False)}]"
    return out or "<document>"


def _model_at(parent: tuple[int | str, ...]) -> type[BaseModel] | None:
    if not parent:
        return Policy
    if parent == ("defaults",):
        return Defaults
    if len(parent) == 2 and parent[0] == "teams":
        return TeamPolicy
    return None


def _describe(err: ErrorDetails) -> str:
    loc = tuple(err["loc"])
    if loc and loc[-1] == "[key]":
        near: list[str] = []
        if err["type"] == "literal_error":
            keys = re.findall(r"'([^']*)'", str(err.get("ctx", {}).get("expected", "")))
            near = difflib.get_close_matches(str(err.get("input")), keys, n=1)
        nearest = f'did you mean "{near[0]}"? ' if near else ""
        return f"{render_path(loc[:-1])}: bad key: {nearest}{_expected(err)}"
    path = render_path(loc)
    if err["type"] in {"deprecated_duplicate", "no_grace"}:
        return f"{path}: {err['msg']}"
    if err["type"] == "extra_forbidden":
        model = _model_at(loc[:-1])
        # Deprecated names are still read but never suggested.
        allowed = sorted(set(model.model_fields) - _DEPRECATED_KEYS) if model is not None else []
        hint = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        suggestion = f'did you mean "{hint[0]}"? ' if hint else ""
        return f"{path}: unknown key; {suggestion}expected one of: {', '.join(allowed)}"
    return f"{path}: {_expected(err)}, got {_given(err.get('input'))}"


def _expected(err: ErrorDetails) -> str:
    # Our own wording for the errors a policy can produce: pydantic's speaks of Python types.
    kind, ctx = err["type"], err.get("ctx", {})
    if kind == "greater_than_equal":
        return f"expected a number >= {_number(ctx.get('ge'))}"
    if kind == "greater_than":
        return f"expected a number > {_number(ctx.get('gt'))}"
    if kind in {"dict_type", "model_type", "model_attributes_type"}:
        return "expected a mapping"
    if kind == "literal_error":
        return f"expected {ctx.get('expected', 'one of the allowed values')}"
    if kind == "string_type":
        return "expected a string"
    if kind == "string_too_short":
        return "expected a non-empty string"
    if kind == "string_too_long":
        return f"expected at most {ctx.get('max_length')} characters"
    if kind.startswith(("decimal", "float")):
        return "expected a number"
    if kind.startswith("int"):
        return "expected a whole number"
    return err["msg"].replace("Input should be", "expected")


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return f"a {type(value).__name__}"


def _given(value: Any) -> str:
    """A short rendering of a given value, as it would appear in the document."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return json.dumps(value if len(value) <= _MAX_GIVEN else value[: _MAX_GIVEN - 3] + "...", ensure_ascii=False)
    text = _number(value) if isinstance(value, float) else str(value)
    return text if len(text) <= _MAX_GIVEN else text[: _MAX_GIVEN - 3] + "..."


def _number(value: Any) -> str:
    # Pydantic reports a float field's bound as 0.0; the document says 0.
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# -- loading -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LoadedPolicy:
    """The policy in force and where it came from.

    ``error`` is set on the one load that first met a problem (an invalid update, a failed read): the
    caller should log or count it; later loads return the same policy with ``error`` None. ``stale`` is
    True while the policy in force is the last good one because the source's latest text or read failed.
    """

    policy: Policy
    source: str
    digest: str
    """sha256 of the text the policy was parsed from."""
    error: PolicyError | PolicyUnavailable | None = None
    stale: bool = False

    @property
    def warnings(self) -> list[str]:
        """The policy's own warnings (deprecated keys); logged once when this text is first loaded."""
        return self.policy.warnings()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class PolicySource(ABC):
    """Where the policy text lives. ``load()`` re-reads it at most every ``max_age_seconds``.

    The text is parsed again only when its sha256 changed. When a new text is invalid (or a read fails),
    the last good policy stays in force, the problem is logged and returned once in
    ``LoadedPolicy.error``, and the same bad text is not re-parsed. With no good policy yet, ``load()``
    raises ``PolicyError`` or ``PolicyUnavailable`` instead. ``clock`` returns seconds (monotonic);
    tests pass their own to move time.
    """

    def __init__(
        self,
        name: str,
        *,
        max_age_seconds: float | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self._max_age = max_age_seconds
        self._clock = clock
        self._checked_at: float | None = None
        self._current: LoadedPolicy | None = None
        self._bad_digest: str | None = None
        self._bad_error: PolicyError | None = None

    @abstractmethod
    def read_text(self) -> str:
        """The current text of the policy; raises ``PolicyUnavailable`` when it cannot be read."""

    def _fresh(self, now: float) -> bool:
        if self._checked_at is None:
            return False
        return self._max_age is None or now - self._checked_at < self._max_age

    def load(self) -> LoadedPolicy:
        """The policy to apply now (see the class docstring for caching and the last-good rule)."""
        now = self._clock()
        current = self._current
        if current is not None and self._fresh(now):
            return current
        self._checked_at = now
        try:
            text = self.read_text()
        except PolicyUnavailable as exc:
            if current is None:
                raise
            logger.warning(
                "policy source unreadable; keeping the last good policy",
                extra={"policy_source": self.name, "reason": str(exc), "policy_digest": current.digest[:12]},
            )
            self._current = replace(current, error=None, stale=True)
            return replace(current, error=exc, stale=True)
        digest = _digest(text)
        if current is not None and digest == current.digest:
            self._current = replace(current, error=None, stale=False)
            return self._current
        if digest == self._bad_digest and self._bad_error is not None:
            if current is None:
                raise self._bad_error
            return current  # already reported when this text first appeared
        try:
            policy = parse_policy(text, self.name)
        except PolicyError as exc:
            self._bad_digest, self._bad_error = digest, exc
            if current is None:
                raise
            logger.error(
                "policy update rejected; keeping the last good policy",
                extra={
                    "policy_source": self.name,
                    "problems": list(exc.problems),
                    "policy_digest": current.digest[:12],
                },
            )
            self._current = replace(current, error=None, stale=True)
            return replace(current, error=exc, stale=True)
        self._bad_digest, self._bad_error = None, None
        self._current = LoadedPolicy(policy=policy, source=self.name, digest=digest)
        logger.info(
            "policy loaded",
            extra={"policy_source": self.name, "policy_digest": digest[:12], "policy_mode": policy.mode},
        )
        if policy.warnings():
            logger.warning(
                "policy loaded with warnings",
                extra={"policy_source": self.name, "policy_digest": digest[:12], "warnings": policy.warnings()},
            )
        return self._current


class FilePolicySource(PolicySource):
    """A policy file: a path, or a resource inside a package. Read once unless ``max_age_seconds`` is set
    (files deployed with a function do not change while its execution environment lives)."""

    def __init__(
        self,
        path: str | Path | Traversable,
        *,
        name: str | None = None,
        max_age_seconds: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._path: Path | Traversable = Path(path) if isinstance(path, str) else path
        super().__init__(name or f"file:{path}", max_age_seconds=max_age_seconds, clock=clock)

    def read_text(self) -> str:
        try:
            return self._path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise PolicyUnavailable(self.name, f"{type(exc).__name__}: {exc}") from exc


class SsmPolicySource(PolicySource):
    """An SSM parameter (String or SecureString, decrypted), read through Powertools' ``SSMProvider``.

    This source's clock decides when to re-read and then asks Powertools to fetch (``force_fetch``):
    Powertools' own cache runs on the wall clock, which tests cannot move, and stacking two caches
    would let a change take up to twice ``max_age_seconds`` to apply. Powertools still caches the
    value for ``max_age_seconds`` for any other reader sharing the provider.
    """

    permissions: ClassVar[frozenset[str]] = frozenset({"ssm:GetParameter"})

    def __init__(
        self,
        parameter: str,
        provider: SSMProvider,
        *,
        max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(f"ssm:{parameter}", max_age_seconds=max_age_seconds, clock=clock)
        self.parameter = parameter
        self._provider = provider

    def read_text(self) -> str:
        # Imported here: Powertools Parameters imports boto3, which the pure policy model must not pull in.
        from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError  # noqa: PLC0415

        try:
            value = self._provider.get(self.parameter, max_age=int(self._max_age or 0), decrypt=True, force_fetch=True)
        except GetParameterError as exc:
            # Powertools folds every SDK error into its message; it names the parameter, never its value.
            raise PolicyUnavailable(self.name, str(exc)) from exc
        if isinstance(value, bytes):
            value = value.decode("utf-8", errors="replace")
        if not isinstance(value, str):
            raise PolicyUnavailable(self.name, f"expected text, got {type(value).__name__}")
        return value


@cache
def bundled_policy_source() -> FilePolicySource:
    """The conservative policy shipped in the layer (monitor mode, no budgets, every stop guard off)."""
    resource = resources.files("tuning_governor.data").joinpath(BUNDLED_POLICY)
    return FilePolicySource(resource, name=f"bundled:{BUNDLED_POLICY}")


def policy_source(
    *,
    parameter: str = "",
    file: str = "",
    ssm: SSMProvider | None = None,
    max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> PolicySource:
    """The source named by the settings: an SSM parameter, else a file, else the bundled default.

    Takes plain values (the caller reads ``POLICY_PARAMETER`` / ``POLICY_FILE``); ``ssm`` is required
    with ``parameter`` and is used only then. Setting both ``parameter`` and ``file`` is a ValueError:
    which one governs would be a guess.
    """
    if parameter and file:
        raise ValueError("set a policy parameter or a policy file, not both")
    if parameter:
        if ssm is None:
            raise ValueError(f"reading the policy from SSM parameter {parameter} needs an SSMProvider")
        return SsmPolicySource(parameter, ssm, max_age_seconds=max_age_seconds, clock=clock)
    if file:
        return FilePolicySource(file)
    return bundled_policy_source()


def load_policy(source: PolicySource | None = None) -> LoadedPolicy:
    """The policy to apply to the current event, from ``source`` (default: the bundled policy).

    Returns the last good policy when the source's latest text is invalid or unreadable (``error`` is
    set on the first such load); raises ``PolicyError`` / ``PolicyUnavailable`` only when no good
    policy has been loaded yet.
    """
    return (source or bundled_policy_source()).load()
