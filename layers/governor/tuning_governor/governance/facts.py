"""What a rule may look at: a snapshot of one tuning job, and of the account's capacity."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from pydantic import ConfigDict, Field

from tuning_governor.domain.capacity import AdmissionPlan, LimitSource
from tuning_governor.domain.stagnation import StagnationState
from tuning_governor.model_base import GovernorModel
from tuning_governor.models.objectives import DefinitionObjective
from tuning_governor.policy import Budget, Policy
from tuning_governor.policy.rules.base import JudgedOn

Trigger = JudgedOn
"""When rules run: a job arriving; a trial finishing; an event of a trial still running (spend accrues,
nothing finished, so only the rules that read time or spend run); the scheduled sweep."""


class Frozen(GovernorModel):
    model_config = ConfigDict(frozen=True)


class JobFacts(Frozen):
    """One tuning job as the governor knows it at the moment of a decision."""

    job_key: str
    job_name: str
    team: str | None
    tags: dict[str, str]
    roles: list[str] = Field(default_factory=list)
    """The execution roles the job runs as (they may name its team: ``Policy.team_identity``)."""
    status: str
    created_at: datetime | None
    now: datetime
    """The time the decision is made at: the deciding event's time, or the sweep's clock."""
    max_parallel: int
    max_trials: int | None
    demand: dict[str, int]
    spent_usd: Decimal | None
    """Cost of the finished trials; None when any of them is unpriced."""
    trials_finished: int
    trials_failed: int
    objective_type: str | None
    stagnation: StagnationState | None = None
    """The best objective and what passed since it last improved (kept on the job item; None: no
    completed trial with an objective yet)."""
    spent_finished_usd: Decimal | None = None
    """Billed cost of the finished trials (None when any is unpriced). Unset: ``spent_usd`` is all finished."""
    running_trials: int = 0
    """Trials billing now (from TrainingStartTime) and not finished."""
    spent_accrued_usd: Decimal | None = Decimal(0)
    """Cost accrued so far by the running trials (elapsed x instances x price); None when any is unpriced."""
    running_accrued_usd: list[Decimal] = Field(default_factory=list)
    """What each running trial has accrued (for the projection)."""
    burn_usd_per_hour: Decimal = Decimal(0)
    """What the priced running trials add per hour now (spot at the observed discount)."""
    unpriced_running_types: list[str] = Field(default_factory=list)
    """Instance types of running trials that have no price anywhere."""
    spend_approximate: bool = False
    """True when a running trial's accrual rests on a fallback price (or an approximate catalog figure)."""
    team_month: TeamMonthFacts | None = None
    """The job's team's spend in the current calendar month; None when its team has no monthly budget."""
    objectives: list[DefinitionObjective] = Field(default_factory=list)
    """The job's objectives, per training job definition (what its trials are judged against)."""
    admission: list[AdmissionPlan] = Field(default_factory=list)
    """The plans the job may run on, in AMT's priority order (empty: ``demand`` as on-demand)."""
    arrival_facts_incomplete: bool = False
    """Its item was written from facts lacking its configuration (``TuningJob.lacks_arrival_facts``
    after Describe, e.g. a replay of a thin capture): an admission on them is made again on full ones."""
    # -- pricing (what the ``pricing`` rule reports; see domain.cost.pricing_facts) ------------------
    region: str | None = None
    unpriced_types: list[str] = Field(default_factory=list)
    """The job's instance types priced nowhere (no region, no policy): its spend is unknown, never $0."""
    approximate_types: list[str] = Field(default_factory=list)
    """Types with no price in the job's region, judged at their highest price in any region."""
    price_notes: dict[str, str] = Field(default_factory=dict)
    """Per unpriced or approximate type: the price used and where it comes from."""

    batch_request: dict[str, Any] = Field(default_factory=dict)
    """The parts of its request the large-batch checks read (``domain.large_batch.arrival``; empty: none)."""
    budget: Budget | None = None
    """The job's budget as the policy sets it, loaded once per judgement (None: not loaded yet)."""
    stop_lead_seconds: int | None = None
    """How long a stop of this job takes to end its billing, learned from the account's own stops of its
    instance families (``domain.stop_latency``; None: the policy's fixed lead)."""

    def budget_in(self, policy: Policy) -> Budget:
        """The job's budget: as loaded for this judgement, else as ``policy`` sets it from its tags."""
        return self.budget if self.budget is not None else policy.budget_for(self.tags, self.roles)

    def admission_plans(self) -> list[AdmissionPlan]:
        return list(self.admission) or [AdmissionPlan(on_demand=dict(self.demand))]


class TeamMonthFacts(Frozen):
    """A team's spend over all its tuning jobs in one calendar month (UTC): finished + accrued."""

    team: str
    month: str
    """``YYYY-MM``."""
    month_start: datetime
    month_end: datetime
    finished_usd: Decimal
    """Billed cost of the team's trials that finished in the month (a trial spanning two months is split
    pro rata over its billed interval); excludes unpriced trials (see ``unpriced_trials``)."""
    accrued_usd: Decimal
    """Accrued by the team's running trials since the month began (or they started)."""
    running_trials: int = 0
    burn_usd_per_hour: Decimal = Decimal(0)
    """What the team's priced running trials add per hour (when its month crosses its budget)."""
    unpriced_trials: int = 0
    """Trials of the month with no price: while any, the spend is a lower bound."""
    unpriced_running_types: list[str] = Field(default_factory=list)

    @property
    def spent_usd(self) -> Decimal:
        return self.finished_usd + self.accrued_usd

    @property
    def lower_bound(self) -> bool:
        return bool(self.unpriced_trials or self.unpriced_running_types)


class CapacityFacts(Frozen):
    """Concurrent training instances per instance type, excluding the job being decided on."""

    usage: dict[str, int]
    """On-demand instances per type held by others."""
    team_usage: dict[str, int]
    """Instances per type (on-demand and spot) held by the job's team."""
    account_limits: dict[str, LimitSource]
    """The effective account limit per type: the lower of the policy quota and the applied Service Quota."""
    team_limits: dict[str, int]
    unknown_limits: list[str] = []
    # Managed spot is counted by AWS against its own quotas ("<type> for spot training job usage").
    spot_usage: dict[str, int] = {}
    spot_limits: dict[str, LimitSource] = {}
    unknown_spot_limits: list[str] = []
    # Account-wide instance counts ("Number of instances across all [spot] training jobs").
    total_usage: int = 0
    total_limit: LimitSource | None = None
    spot_total_usage: int = 0
    spot_total_limit: LimitSource | None = None
