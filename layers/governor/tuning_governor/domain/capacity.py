"""Capacity arithmetic: who holds how many training instances, the capacity ledger, and the effective limits.

AWS counts on-demand and managed-spot training instances against separate quotas: per type
("<type> for training job usage" / "<type> for spot training job usage") and account-wide
("Number of instances across all training jobs" / "... all spot training jobs"). A team's policy
limit (``teams.<team>.instances``) counts both markets together. A job with prioritized
InstanceConfigs fits when one of its plans fits, tried in AMT's priority order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pydantic import ConfigDict

from tuning_governor.model_base import GovernorModel


class _Frozen(GovernorModel):
    model_config = ConfigDict(frozen=True)


class AdmissionPlan(_Frozen):
    """One way a tuning job may run, as the concurrency rule charges it: MaxParallel x the instances a
    trial uses, per type, split by market (managed spot counts against its own quotas)."""

    label: str = "as configured"
    on_demand: dict[str, int] = {}
    spot: dict[str, int] = {}


class LimitSource(_Frozen):
    limit: int
    source: str


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


def recount(
    per_trial_on_demand: Mapping[str, int],
    per_trial_spot: Mapping[str, int],
    slots: int,
    running: Iterable[tuple[Mapping[str, int], bool]],
) -> tuple[dict[str, int], dict[str, int]]:
    """A reservation re-counted from what its running trials actually use: each running trial on its
    own instances (and market), the slots not yet running on the reserved plan's per-trial shape; at
    most ``slots`` running trials are counted (MaxParallelTrainingJobs: what the job's configuration
    can hold)."""
    on_demand: dict[str, int] = {}
    spot: dict[str, int] = {}
    started = 0
    for instances, is_spot in running:
        if started >= slots:
            # Never more trials than the job runs in parallel: entries beyond are trials the table
            # still believes running (their end event lost), not instances the job can hold.
            break
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
    job_created: str = ""
    """The job's CreationTime (ISO): admission follows it, not the order events are handled in."""
    incomplete: bool = False
    """Made on facts lacking the job's configuration (MaxParallel, instance shapes): judged again
    when an event brings them."""
    ended: str = ""
    """When the job ended in SageMaker's time (ISO; empty while it runs): an ended reservation holds
    nothing now, but counts for a job created before that end (``Ledger.before``)."""

    @property
    def order(self) -> tuple[str, str]:
        """Its place in the order of admission: (CreationTime, job key); see docs/reference/policy.md."""
        return (self.job_created or self.created, self.job_key)

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
        """Re-counted from its running trials. A reservation made on incomplete facts (its MaxParallel
        unknown) counts every trial seen running: its configuration cannot bound them."""
        trials = list(running)
        slots = max(self.slots, len(trials)) if self.incomplete else self.slots
        on_demand, spot = recount(self.per_trial_on_demand, self.per_trial_spot, slots, trials)
        return Reservation(**{**self.__dict__, "on_demand": on_demand, "spot": spot})


@dataclass(frozen=True)
class Ledger:
    """Every admitted tuning job's reservation, at one version of the ledger item: those running
    (``reservations``) and those that ended recently (``ended``, kept for judgements as of a
    CreationTime before their end; see docs/reference/policy.md, "Order of admission")."""

    version: int
    reservations: Mapping[str, Reservation]
    ended: Mapping[str, Reservation] = field(default_factory=dict)

    def holders(self) -> list[Holder]:
        """What the running reservations hold now (ended ones hold nothing)."""
        return [r.holder() for _, r in sorted(self.reservations.items())]

    def before(self, order: tuple[str, str]) -> Ledger:
        """What a job at ``order`` (CreationTime, key) is judged against: the reservations of the jobs
        created before it that had not ended by its CreationTime, whether they run now or ended since."""
        created = order[0]
        held = {k: r for k, r in self.reservations.items() if r.order < order}
        held |= {k: r for k, r in self.ended.items() if r.order < order and r.ended > created}
        return Ledger(self.version, held)

    def expired(self, cutoff: str) -> list[str]:
        """The ended reservations whose end is before ``cutoff`` (ISO): no judgement still to come can
        be of a job created before their end, so they are pruned."""
        return sorted(k for k, r in self.ended.items() if r.ended < cutoff)
