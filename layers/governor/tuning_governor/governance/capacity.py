"""Capacity judged: the limits that apply to a job's demand, and whether one of its plans fits.

The arithmetic (holders, reservations, the ledger, effective limits) is ``tuning_governor.domain.capacity``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tuning_governor.domain.capacity import AdmissionPlan, Holder, LimitSource, Quota, effective_limit, total
from tuning_governor.governance.facts import CapacityFacts


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
