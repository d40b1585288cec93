"""``accounts.<id>``: the member accounts one governor governs, and the event's place among them.

    accounts:
      "111111111111": {team: vision, mode: monitor}                 # monitor first (the default)
      "222222222222": {team: vision, mode: enforce, regions: [us-east-1, eu-west-1]}

No ``accounts``: the governor governs its own account only. With ``accounts``, an event is governed
only when the account in its envelope is listed (and its region, when the account lists regions), or
is the governor's own (home) account, which is governed in the policy's own mode unless it is listed;
nothing in the event's ``detail`` can choose the account acted in. An account enforces only when both
the policy's ``mode`` and the account's are ``enforce``. ``AccountKeys`` is the policy's ``accounts``
key, composed into ``policy.model.Policy``. Pure: no AWS, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol, Self

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from tuning_governor.model_base import GovernorModel
from tuning_governor.models.place import Place as ModelPlace
from tuning_governor.models.place import place_in_key
from tuning_governor.policy.fields import none_to_empty

AccountMode = Literal["enforce", "monitor"]
_ACCOUNT = re.compile(r"^[0-9]{12}$")
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$")
_ARN_PLACE = re.compile(r"^arn:aws[a-z-]*:[a-z0-9-]+:(?P<region>[a-z0-9-]*):(?P<account>[0-9]{12}):")


def _quoted(value: Any) -> Any:
    if isinstance(value, int):  # YAML reads an unquoted id as a number (and drops its leading zeros)
        raise PydanticCustomError("account_id", "expected a 12-digit AWS account id, as a quoted string")
    return value


def _account_id(value: str) -> str:
    if not _ACCOUNT.match(value):
        raise PydanticCustomError("account_id", "expected a 12-digit AWS account id, as a quoted string")
    return value


def _region(value: str) -> str:
    if not _REGION.match(value):
        raise PydanticCustomError("region", "expected a region such as eu-west-1")
    return value


AccountId = Annotated[str, BeforeValidator(_quoted), AfterValidator(_account_id)]
Region = Annotated[str, AfterValidator(_region)]


class AccountPolicy(GovernorModel):
    """One member account: the team its jobs belong to (teams may span accounts), its mode, its regions."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    team: Annotated[str, Field(min_length=1, max_length=256)] | None = None
    """The team of the account's jobs that carry no team of their own (tag or execution role)."""
    mode: AccountMode = "monitor"
    """monitor (the default): decide and report, never stop, whatever the policy's mode."""
    regions: Annotated[list[Region], Field(max_length=40)] = []
    """The regions governed there; empty: every region the member stack forwards from."""


Accounts = dict[AccountId, Annotated[AccountPolicy, BeforeValidator(none_to_empty)]]


class AccountKeys(GovernorModel):
    """The policy's ``accounts`` key (a base of ``policy.model.Policy``): the member accounts governed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    accounts: Annotated[Accounts, BeforeValidator(none_to_empty), Field(max_length=5000)] = {}
    """``<account id>: {team, mode, regions}``: the member accounts whose events are governed (quoted ids);
    empty: only the governor's own account. See ``policy.accounts``."""


@dataclass(frozen=True)
class Place:
    """Where an event came from and is acted in: its envelope's account and region."""

    account: str
    region: str


class _ModedPolicy(Protocol):
    @property
    def accounts(self) -> Mapping[str, AccountPolicy]: ...
    @property
    def enforcing(self) -> bool: ...
    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self: ...


def under_account_terms[P: _ModedPolicy](policy: P, account: str) -> P:
    """``policy`` as it applies to a job of ``account``: the monitoring copy when the account's terms do
    not enforce (``accounts.<id>.mode``, monitor by default), else ``policy`` itself. Every path that acts
    in a place reads this (the events through ``app.membership.admit``, the sweep's walk of the places,
    the one-time checks, through ``Services.at``), so a member in monitor mode is never stopped."""
    terms = policy.accounts.get(account)
    if terms is None or terms.mode == "enforce" or not policy.enforcing:
        return policy
    return policy.model_copy(update={"mode": "monitor"})


def under_job_terms[P: _ModedPolicy](policy: P, job_key: str, home: ModelPlace | None) -> P:
    """``under_account_terms`` for the account job ``job_key`` runs in: the one its key names, else (a
    plain key) the home place's; unknown (no home): ``policy`` itself."""
    place = place_in_key(job_key) or home
    return policy if place is None else under_account_terms(policy, place.account)


@dataclass(frozen=True)
class Membership:
    """The verdict on an event's source: ``governed`` with the account's terms, or a ``reason``."""

    place: Place
    governed: bool
    reason: str = ""
    team: str | None = None
    enforcing: bool = False


def membership(
    event: Mapping[str, Any], accounts: Mapping[str, AccountPolicy], home: Place, policy_enforcing: bool
) -> Membership:
    """Whether the account in ``event``'s envelope is governed. Only the envelope's ``account`` and
    ``region`` are read for the place; an ARN in ``resources`` or ``detail`` naming another account or
    region rejects the event (a forged or misrouted one acts on nobody)."""
    place, problem = _envelope_place(event)
    if problem:
        return Membership(place, False, problem)
    account, region = place.account, place.region
    terms = accounts.get(account)
    if terms is None and account == home.account:
        return Membership(place, True, enforcing=policy_enforcing)
    if terms is None:
        listed = "is not listed under accounts" if accounts else "is not this governor's and no accounts are listed"
        return Membership(place, False, f"account {account} {listed}")
    if terms.regions and region not in terms.regions:
        return Membership(place, False, f"region {region} is not among account {account}'s regions")
    return Membership(place, True, team=terms.team, enforcing=policy_enforcing and terms.mode == "enforce")


def _envelope_place(event: Mapping[str, Any]) -> tuple[Place, str]:
    """The envelope's place, and what is wrong with the event's origin ("" when nothing)."""
    account, region = event.get("account"), event.get("region")
    place = Place(str(account), str(region))
    if not isinstance(account, str) or not _ACCOUNT.match(account):
        return place, "the envelope names no 12-digit account"
    if not isinstance(region, str) or not _REGION.match(region):
        return place, "the envelope names no region"
    if foreign := _foreign_arns(event, place):
        return place, f"the event names another account or region: {foreign[0][:200]}"
    return place, ""


_JOB_ARN_FIELDS = ("HyperParameterTuningJobArn", "TrainingJobArn", "TuningJobArn")


def _foreign_arns(event: Mapping[str, Any], place: Place) -> list[str]:
    detail = event.get("detail")
    detail = detail if isinstance(detail, Mapping) else {}
    request = detail.get("requestParameters")
    arns = [a for a in event.get("resources") or [] if isinstance(a, str)]
    arns += [detail[f] for f in _JOB_ARN_FIELDS if isinstance(detail.get(f), str)]
    if isinstance(request, Mapping) and isinstance(request.get("resourceArn"), str):
        arns.append(request["resourceArn"])
    out = []
    for arn in arns:
        found = _ARN_PLACE.match(arn)
        if found and (found["account"] != place.account or found["region"] not in ("", place.region)):
            out.append(arn)
    return out
