"""The policy model: what applies to every job (``Defaults``), to one team (``TeamPolicy``), and the
whole ``Policy`` with its query helpers (team, exemption, budget, limits, grace, prices, mentions).

Pure: no AWS, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BeforeValidator, ConfigDict, Field, WrapValidator, model_validator
from pydantic_core import PydanticCustomError

from tuning_governor.domain.large_batch.settings import LargeBatchSettings
from tuning_governor.domain.shares import ShareTerms
from tuning_governor.model_base import GovernorModel
from tuning_governor.policy.accounts import AccountKeys
from tuning_governor.policy.errors import render_path
from tuning_governor.policy.fields import (
    SLACK_MEMBER_ID,
    ChannelTargets,
    Count,
    InstanceType,
    Minutes,
    Money,
    OwnerValue,
    Price,
    SecretName,
    SlackMemberId,
    TagKey,
    TopicArn,
    none_to_empty,
    validate_prices,
)
from tuning_governor.policy.identity import RoleArn, TeamIdentity, resolved_for, role_key
from tuning_governor.policy.rules import GraceMinutes, compose_defaults
from tuning_governor.policy.shares import Share
from tuning_governor.policy.tags import TagWarning, bad_budget, near_misses, parse_budget_tag, tag_lookup

Mode = Literal["enforce", "monitor"]
BudgetSource = Literal["tag", "team", "default", "none"]
OverCapacity = Literal["stop", "requeue"]

DEFAULT_BUDGET_TAG = "governance:budget-usd"
DEPRECATED_KEYS = frozenset({"budget_usd"})  # under defaults and teams.<team>: now job_budget_usd
_DEPRECATED_SHARE_PRIORITY = (
    "{path}.share.priority is deprecated: move it to {path}.queue_priority (one priority for the team's"
    " queued requests, with or without a share); it is read as queue_priority while that is unset"
)
_DEPRECATED_BUDGET = (
    "{old} is deprecated: rename it to {new} (a budget per tuning job; teams.<team>.monthly_budget_usd is"
    " a team's budget for the month); the old name is read until the next release"
)


class _PolicyModel(GovernorModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SharedDefaults(_PolicyModel):
    """What applies to every tuning job unless a team or a tag says otherwise. 0 switches a guard off.

    These are the keys under ``defaults`` that several rules read; ``Defaults`` adds each rule's own
    (``policy.rules``: ``max_runtime_hours``, ``stagnation_*``, ``max_failed_trials``, ...)."""

    job_budget_usd: Money | None = None
    """Budget per tuning job in USD; None or 0 = no budget."""
    budget_usd: Money | None = None
    """Deprecated old name of ``job_budget_usd`` (still read for one release, with a policy warning)."""
    grace_minutes: GraceMinutes = {}
    """Per rule whose breach may wait (``policy.rules.GRACE_RULES``): minutes between a job's first breach and its
    stop. The first breach reports "will stop at T unless ..."; the job is stopped at the first judgement
    at or after T (the one-time check asked for T, an event, or a sweep) at which the breach still holds.
    Absent or 0 = stop at the breach. Exempt jobs get no notice (they are never stopped)."""
    on_over_capacity: OverCapacity = "stop"
    """A tuning job stopped for capacity (on arrival over a quota or share, or preempted): ``stop`` ends
    it there; ``requeue`` queues it again as a new job that warm-starts from it with the trials it had
    left (``domain.resume``; docs/explanation/queue.md, "Resume by warm start")."""

    @model_validator(mode="after")
    def _one_name_per_budget(self) -> SharedDefaults:
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


if TYPE_CHECKING:
    Defaults = SharedDefaults
else:
    Defaults = compose_defaults(SharedDefaults, "Defaults")
    """``SharedDefaults`` and every rule's own settings (``policy.rules``), under ``defaults``."""


class TeamPolicy(_PolicyModel):
    """One team's own limits; they apply on top of the account limits, never instead of them."""

    instances: Annotated[dict[InstanceType, Count], BeforeValidator(none_to_empty)] = {}
    """The team's limit of concurrent training instances per type (a type not listed: no team limit)."""
    job_budget_usd: Money | None = None
    """Budget per tuning job of this team; None = not set (the default applies), 0 = no budget."""
    monthly_budget_usd: Money | None = None
    """The team's budget for a calendar month (UTC) over all its tuning jobs; None or 0 = none."""
    budget_usd: Money | None = None
    """Deprecated old name of ``job_budget_usd`` (still read for one release, with a policy warning)."""
    channels: Annotated[ChannelTargets, BeforeValidator(none_to_empty)] = {}
    """The team's own report channels, ``<kind>: <target>`` (``msteams: tuning-governor/teams/vision``):
    a Secrets Manager secret name holding a webhook URL (a URL or JSON ``{"webhook_url": ...}``, used
    only under ``SlackSecretPrefix``), or for ``sns`` a topic ARN (in the stack's account and region,
    under ``TeamTopicPrefix``). Kinds: ``tuning_governor.domain.channels``."""
    slack_secret: SecretName | None = None
    """The older key for ``channels.slack`` (``channels`` wins when both are set)."""
    sns_topic_arn: TopicArn | None = None
    """The older key for ``channels.sns`` (``channels`` wins when both are set)."""
    execution_roles: Annotated[list[RoleArn], BeforeValidator(none_to_empty), Field(max_length=100)] = []
    """The SageMaker execution roles (ARNs) the team's jobs run as. When set, a job is the team's if and
    only if it runs as one of them, whatever its team tag says (see ``policy.identity``)."""
    share: Share | None = None
    """The team's quota share for queued requests (``policy.shares``); None = no share: the team's
    queued requests use only quota allocated to no share."""
    submitters: Annotated[list[RoleArn], BeforeValidator(none_to_empty), Field(max_length=100)] = []
    """The IAM roles (ARNs) whose members submit the team's requests to the queue (docs/explanation/queue.md): a
    submission is the team's when SQS says one of them sent it (``SenderId``), whatever it says."""
    queue_priority: Annotated[int, Field(ge=-1000, le=1000, strict=True)] = 0
    """The team's requests' priority in the queue (higher first; FIFO within one priority). The one
    priority key: ``share.priority`` is its deprecated alias (docs/explanation/queue.md, "Integration")."""
    max_wait_minutes: Minutes = 0.0
    """A queued request not admitted within this many minutes is expired and reported (0 = no limit)."""

    def request_priority(self) -> int:
        """The priority the team's queued requests get: ``queue_priority``; unset, the deprecated
        ``share.priority`` when that is set; else 0."""
        legacy = self.share is not None and "priority" in self.share.model_fields_set
        if legacy and self.share is not None and "queue_priority" not in self.model_fields_set:
            return self.share.priority
        return self.queue_priority

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


class Budget(GovernorModel):
    """The budget of one tuning job and which level of the policy decided it.

    ``usd`` is None when the job has no budget (a level set 0, or no level set anything); it is never 0.
    ``warning`` explains a budget tag that was present but ignored.
    """

    model_config = ConfigDict(frozen=True)

    usd: Decimal | None
    source: BudgetSource
    warning: str | None = None


class Policy(_PolicyModel, AccountKeys):
    """The governance policy. Immutable; every key has a default, so ``Policy()`` is the empty policy.
    Its ``accounts`` key (the member accounts governed) is ``policy.accounts.AccountKeys``.

    Defaults are chosen to be harmless: mode ``monitor`` (nothing is ever stopped until a policy says
    ``enforce``), no quotas, no team limits, no budget, every stop guard off.
    """

    mode: Mode = "monitor"
    exempt_tag: TagKey = "governance:exempt"
    team_tag: TagKey = "team"
    budget_tag: TagKey = DEFAULT_BUDGET_TAG
    quotas: Annotated[dict[InstanceType, Count], BeforeValidator(none_to_empty)] = {}
    spot_quotas: Annotated[dict[InstanceType, Count], BeforeValidator(none_to_empty)] = {}
    """Account limit of concurrent managed-spot instances per type (AWS counts spot separately)."""
    teams: Annotated[
        dict[Annotated[str, Field(min_length=1)], Annotated[TeamPolicy, BeforeValidator(none_to_empty)]],
        BeforeValidator(none_to_empty),
    ] = {}
    defaults: Annotated[Defaults, BeforeValidator(none_to_empty)] = Defaults()
    prices: Annotated[dict[str, Price | dict[str, Price]], WrapValidator(validate_prices)] = {}
    """USD per instance-hour: ``<instance type>: <price>`` for every region, or ``<region>: {<instance
    type>: <price>}`` for one region. They fill gaps only: the refreshed and bundled catalogs win."""
    slack_users: Annotated[dict[OwnerValue, SlackMemberId], BeforeValidator(none_to_empty)] = {}
    """Owner tag value (``alice@example.com``, ``alice``) -> Slack member ID, so Slack reports mention
    the job's owner; see ``slack_member``."""
    large_batch: Annotated[LargeBatchSettings, BeforeValidator(none_to_empty)] = LargeBatchSettings()

    @model_validator(mode="after")
    def _one_team_per_role(self) -> Policy:
        owners: dict[str, str] = {}
        for name, team in sorted(self.teams.items()):
            for arn in team.execution_roles:
                other = owners.setdefault(role_key(arn), name)
                if other != name:
                    raise PydanticCustomError(
                        "role_in_two_teams",
                        "execution role {arn} is listed by teams {first} and {second}: a role names one team",
                        {"arn": arn, "first": other, "second": name},
                    )
        submitters: dict[str, str] = {}
        for name, team in sorted(self.teams.items()):
            for arn in team.submitters:
                other = submitters.setdefault(role_key(arn), name)
                if other != name:
                    raise PydanticCustomError(
                        "submitter_in_two_teams",
                        "submitter role {arn} is listed by teams {first} and {second}: a submitter names one team",
                        {"arn": arn, "first": other, "second": name},
                    )
        return self

    def submitter_team(self, role_arn: str) -> str | None:
        """The team whose ``submitters`` lists ``role_arn`` (IAM role names ignore case); None: no team."""
        key = role_key(role_arn)
        return next((n for n, t in sorted(self.teams.items()) if key in {role_key(a) for a in t.submitters}), None)

    def passes_roles(self, team: str, roles: Iterable[str]) -> list[str]:
        """The roles of ``roles`` the team's ``execution_roles`` does not list (empty: all may be passed;
        a team listing none may pass none)."""
        listed = {role_key(a) for a in self.teams[team].execution_roles} if team in self.teams else set()
        return [r for r in roles if role_key(r) not in listed]

    @property
    def enforcing(self) -> bool:
        """True when decisions may stop jobs; in monitor mode they are only reported."""
        return self.mode == "enforce"

    def team_identity(self, tags: Mapping[str, str], roles: Iterable[str] = ()) -> TeamIdentity:
        """The owning team and, when the ``team_tag`` tag was ignored, why (``policy.identity``): the
        team whose ``execution_roles`` lists one of the job's ``roles``, else the tag's value (trimmed,
        in the policy's spelling when it names a listed team ignoring case) unless that team lists
        execution roles."""
        team_roles = lambda: {name: team.execution_roles for name, team in self.teams.items()}  # noqa: E731
        return resolved_for(self, team_roles, tags.get(self.team_tag), roles)

    def team_of(self, tags: Mapping[str, str], roles: Iterable[str] = ()) -> str | None:
        """The owning team (see ``team_identity``); None when none. The team need not be listed under
        ``teams`` (then it has no team limits or team budget)."""
        return self.team_identity(tags, roles).team

    def is_exempt(self, tags: Mapping[str, str]) -> bool:
        """True when the job carries ``exempt_tag`` with the value ``true`` (any case, spaces trimmed).

        An exempt job is never stopped; its decisions are still evaluated and reported. Any other
        value (``yes``, ``1``, empty) is not an exemption, and neither is a key that matches
        ``exempt_tag`` only when case is ignored (AWS tag keys are case-sensitive): a typo fails safe
        towards governance, and ``tag_warnings`` reports it.
        """
        return tags.get(self.exempt_tag, "").strip().lower() == "true"

    def budget_for(self, tags: Mapping[str, str], roles: Iterable[str] = ()) -> Budget:
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
            warning = "; ".join(w for w in (bad_budget(self.budget_tag, raw).message, warning) if w)
        team = self.teams.get(self.team_of(tags, roles) or "")
        if team is not None and team.job_budget is not None:
            return Budget(usd=team.job_budget or None, source="team", warning=warning)
        default = self.defaults.job_budget
        if default is not None:
            return Budget(usd=default or None, source="default", warning=warning)
        return Budget(usd=None, source="none", warning=warning)

    def tag_warnings(self, tags: Mapping[str, str], roles: Iterable[str] = ()) -> list[TagWarning]:
        """Governance tags on a job that the governor cannot honour as written, in a stable order:

        a ``budget_tag`` value ``parse_budget_tag`` cannot read; an ``exempt_tag`` value other than
        true/false (any case); any key that matches ``budget_tag`` or ``exempt_tag`` only when case
        is ignored; a ``team_tag`` the job's execution roles overrule (see ``team_identity``), or a key
        matching it only when case is ignored. Each is
        governed as if absent (see ``budget_for``, ``is_exempt`` and ``team_of``).
        """
        out: list[TagWarning] = []
        identity = self.team_identity(tags, roles)
        if identity.problem is not None:
            out.append(TagWarning(key=self.team_tag, value=identity.tag_value or "", problem=identity.problem))
        out += near_misses(tags, self.team_tag)
        raw = tags.get(self.budget_tag)
        if raw is not None and parse_budget_tag(raw) is None:
            out.append(bad_budget(self.budget_tag, raw))
        out += near_misses(tags, self.budget_tag)
        exempt = tags.get(self.exempt_tag)
        if exempt is not None and exempt.strip().lower() not in {"true", "false"}:
            out.append(
                TagWarning(key=self.exempt_tag, value=exempt, problem='is not an exemption: only "true" exempts a job')
            )
        out += near_misses(tags, self.exempt_tag)
        return out

    def grace_for(self, rule: str) -> timedelta | None:
        """The grace period between ``rule``'s first breach on a job and its stop; None = stop at once."""
        minutes = self.defaults.grace_minutes.get(rule)
        return timedelta(minutes=minutes) if minutes else None

    def slack_member(self, owner: str | None) -> str | None:
        """The Slack member ID to mention for a job's owner tag value: its entry in ``slack_users``
        (exact, then ignoring case), or the value itself when it is a member ID (``U012AB3CD``); None
        otherwise (the owner is then named as plain text, never pinged)."""
        if not (value := (owner or "").strip()):
            return None
        mapped = self.slack_users.get(value) or next(
            (v for k, v in sorted(self.slack_users.items()) if k.strip().casefold() == value.casefold()), None
        )
        return mapped or (value if SLACK_MEMBER_ID.match(value) else None)

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
            if team.share is not None and "priority" in team.share.model_fields_set:
                path = render_path(("teams", name))
                found.append(_DEPRECATED_SHARE_PRIORITY.format(path=path))
        return found

    def team_limit(self, team: str | None, instance_type: str) -> int | None:
        """The team's own limit of concurrent ``instance_type`` instances; None when it has none.

        It applies on top of the account limit: a job must fit both.
        """
        policy = self.teams.get(team) if team is not None else None
        return policy.instances.get(instance_type) if policy is not None else None

    def shares(self) -> dict[str, ShareTerms]:
        """Each team's quota share as ``domain.queueing.schedule`` takes it (teams with no share absent)."""
        return {name: team.share.terms() for name, team in sorted(self.teams.items()) if team.share is not None}

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
