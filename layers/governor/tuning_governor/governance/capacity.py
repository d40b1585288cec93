"""Capacity arithmetic: who holds how many training instances, and the effective limits."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tuning_governor.governance.facts import CapacityFacts, LimitSource


@dataclass(frozen=True)
class Holder:
    """Something holding training instances: a running tuning job (its worst-case reservation), a
    standalone training job, or a warm pool."""

    key: str
    kind: str  # "tuning-job" | "training-job" | "warm-pool"
    team: str | None
    instances: Mapping[str, int]


@dataclass(frozen=True)
class Quota:
    code: str
    name: str
    value: int


def total(holders: Iterable[Holder], *, team: str | None = None) -> dict[str, int]:
    """Instances per type held by ``holders`` (only the given team's when ``team`` is set)."""
    out: dict[str, int] = {}
    for holder in holders:
        if team is not None and holder.team != team:
            continue
        for itype, count in holder.instances.items():
            out[itype] = out.get(itype, 0) + count
    return dict(sorted(out.items()))


def effective_limit(policy_quota: int | None, service_quota: Quota | None) -> LimitSource | None:
    """The lower of the policy's quota and the applied Service Quota, with where it comes from."""
    candidates: list[LimitSource] = []
    if service_quota is not None:
        candidates.append(
            LimitSource(limit=service_quota.value, source=f"Service Quota {service_quota.code} ({service_quota.name})")
        )
    if policy_quota is not None:
        candidates.append(LimitSource(limit=policy_quota, source="policy quotas"))
    if not candidates:
        return None
    return min(candidates, key=lambda c: c.limit)


def capacity_facts(
    *,
    job_key: str,
    team: str | None,
    demand: Mapping[str, int],
    holders: Iterable[Holder],
    policy_quotas: Mapping[str, int],
    service_quotas: Mapping[str, Quota | None],
    team_limits: Mapping[str, int],
) -> CapacityFacts:
    """Usage by everyone but ``job_key``, and the limits that apply to each type the job demands."""
    others = [h for h in holders if h.key != job_key]
    account: dict[str, LimitSource] = {}
    unknown: list[str] = []
    for itype in sorted(demand):
        limit = effective_limit(policy_quotas.get(itype), service_quotas.get(itype))
        if limit is None:
            unknown.append(itype)
        else:
            account[itype] = limit
    return CapacityFacts(
        usage=total(others),
        team_usage=total(others, team=team) if team else {},
        account_limits=account,
        team_limits={t: v for t, v in team_limits.items() if t in demand},
        unknown_limits=unknown,
    )
