"""Capacity arithmetic: who holds how many training instances, and the effective limits.

AWS counts on-demand and managed-spot training instances against separate quotas: per type
("<type> for training job usage" / "<type> for spot training job usage") and account-wide
("Number of instances across all training jobs" / "... all spot training jobs"). A team's policy
limit (``teams.<team>.instances``) counts both markets together. A job with prioritized
InstanceConfigs fits when one of its plans fits, tried in AMT's priority order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tuning_governor.governance.facts import AdmissionPlan, CapacityFacts, LimitSource


@dataclass(frozen=True)
class Holder:
    """Something holding training instances: a running tuning job (its worst-case reservation), a
    standalone training job, or a warm pool."""

    key: str
    kind: str  # "tuning-job" | "training-job" | "warm-pool"
    team: str | None
    instances: Mapping[str, int]
    """On-demand instances per type (warm pools count toward the training quota)."""
    spot: Mapping[str, int] = field(default_factory=dict)
    """Managed-spot instances per type."""


@dataclass(frozen=True)
class Quota:
    code: str
    name: str
    value: int
    applied: bool = True
    """False when the account has no applied value and this is AWS's default value."""


def total(holders: Iterable[Holder], *, team: str | None = None, market: str = "on-demand") -> dict[str, int]:
    """Instances per type held by ``holders`` (only the given team's when ``team`` is set).

    ``market`` is "on-demand", "spot" or "all".
    """
    out: dict[str, int] = {}
    for holder in holders:
        if team is not None and holder.team != team:
            continue
        maps = {"on-demand": [holder.instances], "spot": [holder.spot], "all": [holder.instances, holder.spot]}[market]
        for instances in maps:
            for itype, count in instances.items():
                out[itype] = out.get(itype, 0) + count
    return dict(sorted(out.items()))


def quota_source(quota: Quota) -> str:
    """How a limit from Service Quotas is named in decisions: applied value, or AWS default."""
    if quota.applied:
        return f"Service Quota {quota.code} ({quota.name})"
    return f"AWS default quota {quota.code} ({quota.name}; no applied value)"


def effective_limit(
    policy_quota: int | None, service_quota: Quota | None, *, policy_label: str = "policy quotas"
) -> LimitSource | None:
    """The lower of the policy's quota and the applied Service Quota, with where it comes from."""
    candidates: list[LimitSource] = []
    if service_quota is not None:
        candidates.append(LimitSource(limit=service_quota.value, source=quota_source(service_quota)))
    if policy_quota is not None:
        candidates.append(LimitSource(limit=policy_quota, source=policy_label))
    if not candidates:
        return None
    return min(candidates, key=lambda c: c.limit)


def _limits(
    types: Iterable[str],
    policy_quotas: Mapping[str, int],
    service_quotas: Mapping[str, Quota | None],
    policy_label: str = "policy quotas",
) -> tuple[dict[str, LimitSource], list[str]]:
    """The effective limit of each type (see ``effective_limit``), and the types with none known."""
    limits: dict[str, LimitSource] = {}
    unknown: list[str] = []
    for itype in types:
        limit = effective_limit(policy_quotas.get(itype), service_quotas.get(itype), policy_label=policy_label)
        if limit is None:
            unknown.append(itype)
        else:
            limits[itype] = limit
    return limits, unknown


def capacity_facts(  # noqa: PLR0913 - keyword-only: one argument per source of usage and limits combined
    *,
    job_key: str,
    team: str | None,
    demand: Mapping[str, int],
    holders: Iterable[Holder],
    policy_quotas: Mapping[str, int],
    service_quotas: Mapping[str, Quota | None],
    team_limits: Mapping[str, int],
    spot_demand: Iterable[str] = (),
    policy_spot_quotas: Mapping[str, int] | None = None,
    spot_service_quotas: Mapping[str, Quota | None] | None = None,
    total_quota: Quota | None = None,
    spot_total_quota: Quota | None = None,
) -> CapacityFacts:
    """Usage by everyone but ``job_key``, and the limits that apply to each type the job may demand
    (``demand``: on-demand types, ``spot_demand``: managed-spot types)."""
    others = [h for h in holders if h.key != job_key]
    account, unknown = _limits(sorted(demand), policy_quotas, service_quotas)
    spot_types = sorted(set(spot_demand))
    spot_limits, unknown_spot = _limits(
        spot_types, policy_spot_quotas or {}, spot_service_quotas or {}, policy_label="policy spot_quotas"
    )
    usage = total(others)
    spot_usage = total(others, market="spot")
    wanted = set(demand) | set(spot_types)
    return CapacityFacts(
        usage=usage,
        team_usage=total(others, team=team, market="all") if team else {},
        account_limits=account,
        team_limits={t: v for t, v in team_limits.items() if t in wanted},
        unknown_limits=unknown,
        spot_usage=spot_usage,
        spot_limits=spot_limits,
        unknown_spot_limits=unknown_spot,
        total_usage=sum(usage.values()),
        total_limit=effective_limit(None, total_quota),
        spot_total_usage=sum(spot_usage.values()),
        spot_total_limit=effective_limit(None, spot_total_quota),
    )


@dataclass(frozen=True)
class PlanJudgement:
    """How one admission plan fares against the capacity: the figures per type and what breaches."""

    plan: AdmissionPlan
    rows: dict[str, dict[str, Any]]
    spot_rows: dict[str, dict[str, Any]]
    totals: dict[str, dict[str, Any]]
    breaches: list[str]

    @property
    def fits(self) -> bool:
        return not self.breaches


def _row(usage: int, demand: int, limit: LimitSource | None, unknown: str) -> dict[str, Any]:
    row: dict[str, Any] = {"demand": demand, "usage": usage}
    if limit is None:
        return row | {"limit": None, "limit_source": unknown}
    return row | {"limit": limit.limit, "limit_source": limit.source, "headroom": limit.limit - usage}


def judge_plan(plan: AdmissionPlan, team: str | None, capacity: CapacityFacts) -> PlanJudgement:
    """Does ``plan`` fit next to what others hold? Every known limit must hold: per type and
    account-wide for each market, and the team's limit per type over both markets."""
    rows: dict[str, dict[str, Any]] = {}
    spot_rows: dict[str, dict[str, Any]] = {}
    breaches: list[str] = []
    team_demand: dict[str, int] = {}
    markets = (
        ("", plan.on_demand, capacity.usage, capacity.account_limits, rows),
        ("spot ", plan.spot, capacity.spot_usage, capacity.spot_limits, spot_rows),
    )
    for market, demand, usage, limits, out in markets:
        for itype, wanted in sorted(demand.items()):
            used = usage.get(itype, 0)
            limit = limits.get(itype)
            out[itype] = _row(used, wanted, limit, f"unknown (no policy {market}quota, no Service Quota found)")
            if limit is not None and used + wanted > limit.limit:
                breaches.append(
                    f"{itype}{' (spot)' if market else ''}: usage {used} + demand {wanted} > limit {limit.limit}"
                    f" ({limit.source})"
                )
            team_demand[itype] = team_demand.get(itype, 0) + wanted
    for itype, wanted in sorted(team_demand.items()):
        team_limit = capacity.team_limits.get(itype)
        if team_limit is None:
            continue
        team_used = capacity.team_usage.get(itype, 0)
        target = rows if itype in plan.on_demand else spot_rows
        target[itype] |= {"team_limit": team_limit, "team_usage": team_used, "team_headroom": team_limit - team_used}
        if team_used + wanted > team_limit:
            breaches.append(f"{itype}: team {team} usage {team_used} + demand {wanted} > team limit {team_limit}")
    totals: dict[str, dict[str, Any]] = {}
    for name, count, used, limit in (
        ("all training jobs", sum(plan.on_demand.values()), capacity.total_usage, capacity.total_limit),
        ("all spot training jobs", sum(plan.spot.values()), capacity.spot_total_usage, capacity.spot_total_limit),
    ):
        if not count:
            continue
        totals[name] = _row(used, count, limit, "unknown (no Service Quota found)")
        if limit is not None and used + count > limit.limit:
            breaches.append(
                f"instances across {name}: usage {used} + demand {count} > limit {limit.limit} ({limit.source})"
            )
    return PlanJudgement(plan=plan, rows=rows, spot_rows=spot_rows, totals=totals, breaches=breaches)


def first_fit(
    plans: Iterable[AdmissionPlan], team: str | None, capacity: CapacityFacts
) -> tuple[int | None, list[PlanJudgement]]:
    """Judge plans in priority order; the index of the first that fits (None: none fits), and the
    judgements made (they stop at the first plan that fits)."""
    judged: list[PlanJudgement] = []
    for index, plan in enumerate(plans):
        judgement = judge_plan(plan, team, capacity)
        judged.append(judgement)
        if judgement.fits:
            return index, judged
    return None, judged


def recount(
    per_trial_on_demand: Mapping[str, int],
    per_trial_spot: Mapping[str, int],
    slots: int,
    running: Iterable[tuple[Mapping[str, int], bool]],
) -> tuple[dict[str, int], dict[str, int]]:
    """A reservation re-counted from what its running trials actually use: each running trial on its
    own instances (and market), the slots not yet running on the reserved plan's per-trial shape."""
    on_demand: dict[str, int] = {}
    spot: dict[str, int] = {}
    started = 0
    for instances, is_spot in running:
        started += 1
        target = spot if is_spot else on_demand
        for itype, count in instances.items():
            target[itype] = target.get(itype, 0) + int(count)
    free = max(0, slots - started)
    for shape, target in ((per_trial_on_demand, on_demand), (per_trial_spot, spot)):
        for itype, count in shape.items():
            target[itype] = target.get(itype, 0) + free * int(count)
    return (
        {k: v for k, v in sorted(on_demand.items()) if v},
        {k: v for k, v in sorted(spot.items()) if v},
    )


@dataclass(frozen=True)
class Reservation:
    """A tuning job's place in the capacity ledger: the instances it was admitted with (or re-counted
    from its running trials), and enough of its plan to re-count it."""

    job_key: str
    team: str | None
    on_demand: Mapping[str, int]
    spot: Mapping[str, int]
    plan: str
    slots: int
    """MaxParallelTrainingJobs: the trials the reservation covers."""
    per_trial_on_demand: Mapping[str, int]
    per_trial_spot: Mapping[str, int]
    created: str
    over_limit: bool = False
    """Admitted although it did not fit (monitor mode or exempt): it runs, so it is counted."""
    version: int = 0
    """The ledger version its admission committed (its place in the commit order)."""

    def holder(self) -> Holder:
        return Holder(key=self.job_key, kind="tuning-job", team=self.team, instances=self.on_demand, spot=self.spot)

    @classmethod
    def for_plan(
        cls,
        job_key: str,
        team: str | None,
        plan: AdmissionPlan,
        slots: int,
        created: str,
        *,
        over_limit: bool = False,
        version: int = 0,
    ) -> Reservation:
        slots = max(1, slots)
        return cls(
            job_key=job_key,
            team=team,
            on_demand=dict(plan.on_demand),
            spot=dict(plan.spot),
            plan=plan.label,
            slots=slots,
            per_trial_on_demand={t: max(1, c // slots) for t, c in plan.on_demand.items()},
            per_trial_spot={t: max(1, c // slots) for t, c in plan.spot.items()},
            created=created,
            over_limit=over_limit,
            version=version,
        )

    def recounted(self, running: Iterable[tuple[Mapping[str, int], bool]]) -> Reservation:
        on_demand, spot = recount(self.per_trial_on_demand, self.per_trial_spot, self.slots, running)
        return Reservation(**{**self.__dict__, "on_demand": on_demand, "spot": spot})


@dataclass(frozen=True)
class Ledger:
    """Every admitted tuning job's reservation, at one version of the ledger item."""

    version: int
    reservations: Mapping[str, Reservation]

    def holders(self) -> list[Holder]:
        return [r.holder() for _, r in sorted(self.reservations.items())]
