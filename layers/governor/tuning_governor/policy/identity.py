"""Which team a job belongs to, from what its data scientist cannot change where the policy says so.

A job's team tag is written by whoever creates (or may tag) the job. A team that lists
``execution_roles`` is identified by the execution role its jobs run as instead: SageMaker takes the
role at creation and never changes it, and iam:PassRole decides who may pass which role, so a data
scientist cannot put a job in (or take it out of) such a team by tagging it. The tag is then only a
cross-check: a tag that disagrees is reported and ignored. docs/explanation/security.md has the threat model.

Team names are matched as the rest of the tag handling matches values: surrounding space trimmed and
case ignored against the policy's team names (``" NLP "`` is the policy's ``nlp``); a team the policy
does not list keeps its trimmed spelling. Pure: no AWS, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from tuning_governor.domain.stored_item import Remembered

# An IAM role ARN as SageMaker records it (RoleArn: arn:<partition>:iam::<account>:role/<path/><name>).
RoleArn = Annotated[str, Field(pattern=r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/[A-Za-z0-9_+=,.@/-]+$", max_length=2048)]


@dataclass(frozen=True)
class TeamIdentity:
    """The team a job belongs to (None: none) and, when its team tag was ignored, its value and why."""

    team: str | None
    tag_value: str | None = None
    problem: str | None = None


def role_key(arn: str) -> str:
    # IAM role names are unique regardless of case, and SageMaker keeps the ARN as it was passed.
    return arn.strip().casefold()


def canonical_team(value: str | None, teams: Collection[str]) -> str | None:
    """The team a tag value names: the policy's team spelled exactly so, else the one it matches
    ignoring case and surrounding space, else the trimmed value; None when absent or blank."""
    trimmed = (value or "").strip()
    if not trimmed or trimmed in teams:
        return trimmed or None
    folded = trimmed.casefold()
    return next((name for name in sorted(teams) if name.strip().casefold() == folded), trimmed)


def resolve_team(tag_value: str | None, roles: Iterable[str], team_roles: Mapping[str, Iterable[str]]) -> TeamIdentity:
    """The job's team from its team tag's value and its execution roles, given each team's roles.

    1. A role some team lists decides (several such teams: the tag's, when it is one of them, else
       the first by name); a tag naming another team is ignored and reported.
    2. Otherwise the tag decides, unless it names a team that lists roles: such a team is reached only
       through its roles, so the tag is ignored and reported (the job has no team).
    """
    tagged = canonical_team(tag_value, team_roles)
    by_role = {role_key(r): team for team, rs in team_roles.items() for r in rs}
    mapped = sorted({by_role[key] for key in map(role_key, roles) if key in by_role}) if by_role else []
    if mapped:
        team = tagged if tagged in mapped else mapped[0]
        if tagged is None or tagged == team:
            return TeamIdentity(team)
        problem = f"ignored: the job runs as team {team}'s execution role, so it is team {team}'s"
        return TeamIdentity(team, tag_value, problem)
    if tagged is not None and list(team_roles.get(tagged) or []):
        problem = f"ignored: team {tagged} is identified by its execution roles and the job runs as none of them"
        return TeamIdentity(None, tag_value, problem)
    return TeamIdentity(tagged)


_RESOLVED = Remembered(
    lambda _policy, tag_value, roles, team_roles: resolve_team(tag_value, roles, team_roles()),
    slot=lambda _policy, tag_value, roles, _team_roles: (tag_value, roles),
)


def resolved_for(
    policy: object, team_roles: Callable[[], Mapping[str, Iterable[str]]], tag_value: str | None, roles: Iterable[str]
) -> TeamIdentity:
    """``resolve_team`` for an immutable ``policy`` (``team_roles``: its teams' roles), remembered per tag
    value and roles for that very policy (``domain.stored_item.Remembered``: the policy is kept with it)."""
    return _RESOLVED(policy, tag_value, tuple(roles), team_roles, stored=True)
