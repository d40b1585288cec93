"""What a rule declares where the policy and the client can read it: its spec and its own settings.

A rule's judgement lives in ``governance.rules.<module>`` (it reads the job's facts); its declaration
lives here, in ``policy.rules.<module>``, one layer down, so that the policy model can compose the
rule's settings, ``tuning-governor validate`` can name them, and governance, app and client derive
their lists of rules from one registry instead of spelling names by hand.

Pure: pydantic models and frozen records, no AWS, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Protocol, Self

from pydantic import BaseModel, ConfigDict

from tuning_governor.model_base import GovernorModel

Scope = Literal["job", "team"]
#: When the engine judges a rule (``governance.facts.Trigger``).
JudgedOn = Literal["arrival", "trial", "trial-progress", "sweep"]


class JobView(Protocol):
    """What a rule judged in its declaration (``RuleSpec.judge``) reads of a job: the counts of
    ``governance.facts.JobFacts`` that need nothing but the job itself."""

    @property
    def status(self) -> str: ...
    @property
    def max_parallel(self) -> int: ...
    @property
    def max_trials(self) -> int | None: ...
    @property
    def trials_finished(self) -> int: ...
    @property
    def trials_failed(self) -> int: ...
    @property
    def running_trials(self) -> int: ...


class Finding(NamedTuple):
    """A breach a declared judgement found: what the notice says, and its numbers."""

    message: str
    numbers: Mapping[str, Any]


#: ``judge(defaults, job)``: a breach, or None when the job is within the rule.
Judge = Callable[[Any, JobView], Finding | None]


class RuleSettings(GovernorModel):
    """A rule's own keys under ``defaults``: the policy's ``Defaults`` model composes every registered
    rule's settings (``policy.rules.compose_defaults``), so the keys users write stay where they were."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def of(cls, defaults: BaseModel) -> Self:
        """These settings within a policy's ``defaults`` (typed: ``RuntimeSettings.of(policy.defaults)``)."""
        if not isinstance(defaults, cls):
            raise TypeError(f"{type(defaults).__name__} does not compose {cls.__name__}: is its spec registered?")
        return defaults


@dataclass(frozen=True)
class RuleSpec:
    """One rule's declaration: who it is, what it reads and how the others treat it.

    - ``settings``: the rule's own keys under ``defaults`` (a ``RuleSettings`` model), or None;
    - ``reads``: keys it reads that other parts of the policy own too (budgets, tags, prices, quotas);
    - ``switches``: the keys of ``settings`` any of which, set non-zero, switches the rule on (None:
      all of them; ``()``: nothing in ``defaults`` switches it off, e.g. a budget a job's tag may set);
    - ``scope``: ``job`` (a decision acts on the job judged) or ``team`` (on all the team's jobs);
    - ``reads_trials``: it judges a job's trials (their accrual, outcomes, failures), so the sweep
      reconciles those trials with SageMaker and a stop on it is judged again on the truth first;
    - ``grace_unless``: set, a breach may wait ``defaults.grace_minutes.<name>`` before its stop, and
      the notice says it will unless this happens (``{budget_tag}`` is the policy's budget tag);
    - ``no_grace``: why a grace period is refused for it (a grace key for any other rule is a typo);
    - ``requeued_as``: set, its stop means "no room" and ``defaults.on_over_capacity: requeue`` queues
      the job again, its owner told "<requeued_as> and queued as <name>";
    - ``judge``: set, the rule is its declaration alone: a breach on the job's own counts (``JobView``),
      judged ``judged_on`` these triggers (``late_ok``: on a job already ended too), its stop needing
      only the stop permission; ``governance.rules`` makes its rule, no module there names it.
    """

    name: str
    order: int
    """Where the rule is judged among the others (ascending): its decisions come out in this order."""
    description: str
    settings: type[RuleSettings] | None = None
    reads: tuple[str, ...] = ()
    switches: tuple[str, ...] | None = None
    scope: Scope = "job"
    reads_trials: bool = False
    grace_unless: str | None = None
    no_grace: str | None = None
    requeued_as: str | None = None
    judge: Judge | None = field(default=None, compare=False)
    judged_on: frozenset[JudgedOn] = frozenset()
    late_ok: bool = False

    def __post_init__(self) -> None:
        if (self.judge is None) != (not self.judged_on) or (self.late_ok and "trial" not in self.judged_on):
            raise ValueError(f"rule {self.name!r}: a judge is judged on some triggers (on trials, to judge late)")
        if self.grace_unless is not None and (self.no_grace is not None or self.scope != "job"):
            raise ValueError(f"rule {self.name!r}: a grace period is for a job-scoped rule that does not refuse one")
        unknown = set(self.switches or ()) - set(self.own_keys)
        if unknown:
            raise ValueError(f"rule {self.name!r}: switches {sorted(unknown)} are not keys of its settings")

    @property
    def own_keys(self) -> tuple[str, ...]:
        """The rule's own keys under ``defaults`` (its settings' fields, in their order)."""
        return tuple(self.settings.model_fields) if self.settings is not None else ()

    @property
    def policy_keys(self) -> tuple[str, ...]:
        """Every policy key that configures the rule: its own (``defaults.<key>``), then those it reads."""
        return tuple(f"defaults.{key}" for key in self.own_keys) + self.reads

    @property
    def grace_able(self) -> bool:
        return self.grace_unless is not None

    def guards(self, defaults: BaseModel) -> list[str]:
        """The rule's switch keys that ``defaults`` sets (non-zero), as ``defaults.<key>``."""
        keys = self.own_keys if self.switches is None else self.switches
        return [f"defaults.{key}" for key in keys if getattr(defaults, key)]

    def switched_on(self, defaults: BaseModel) -> bool:
        """Whether ``defaults`` leaves the rule on: a switch key set, or none to set."""
        keys = self.own_keys if self.switches is None else self.switches
        return not keys or bool(self.guards(defaults))


class SpecRegistry:
    """Every rule's spec by name, in judging order. ``policy.rules`` imports each module of the package,
    whose ``register(RuleSpec(...))`` adds its rule."""

    def __init__(self) -> None:
        self._specs: dict[str, RuleSpec] = {}

    def register(self, spec: RuleSpec) -> RuleSpec:
        if spec.name in self._specs:
            raise ValueError(f"rule {spec.name!r} declared twice")
        if any(other.order == spec.order for other in self._specs.values()):
            raise ValueError(f"rule {spec.name!r}: another rule is judged at order {spec.order}")
        owned = {key: other.name for other in self._specs.values() for key in other.own_keys}
        clash = sorted(key for key in spec.own_keys if key in owned)
        if clash:
            raise ValueError(f"rule {spec.name!r}: defaults keys {clash} belong to another rule")
        self._specs[spec.name] = spec
        return spec

    def __iter__(self) -> Iterator[RuleSpec]:
        return iter(sorted(self._specs.values(), key=lambda spec: spec.order))

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def get(self, name: str) -> RuleSpec | None:
        return self._specs.get(name)


specs = SpecRegistry()
register = specs.register
