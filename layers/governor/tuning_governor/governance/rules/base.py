"""The rule registry's base: a decision, a rule and what it declares, and the registry.

A rule is two halves: its declaration (``policy.rules.<module>``: name, order, its own settings and the
traits the policy, app and client read) and its judgement here (``evaluate``, with what only the engine
needs: triggers, permissions, ``admission_judged``, ``late_ok``, ``schedules_checks``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any, ClassVar

from tuning_governor.domain.job import JobState
from tuning_governor.governance.facts import CapacityFacts, JobFacts, Trigger
from tuning_governor.models.decisions import Decision, Verdict
from tuning_governor.models.records import TrialRecord
from tuning_governor.policy import Policy
from tuning_governor.policy.rules import RuleSpec, Scope, specs

STOP_PERMISSION = "sagemaker:StopHyperParameterTuningJob"


class Rule(ABC):
    """One governance check, judging what its ``spec`` (``policy.rules``) declares: its name, order,
    description, policy keys, ``scope`` (``job``: a decision is acted on for the job judged; ``team``:
    once per team and month, over all the team's running jobs, governance.team_months) and whether a
    grace period may delay its stop (``grace_able``, from the spec's ``grace_unless``) are copied from
    it. Besides its triggers and permissions, a rule declares how the engine runs it (the engine never
    branches on a rule's name):

    - ``admission_judged``: judged on arrival through the capacity ledger (governance.admission), not
      in the rule loop;
    - ``late_ok``: also judged on a job that had already ended when a trial of it was recorded (the
      decision is recorded as ``already-ended``, no stop call), through ``evaluate_late``;
    - ``schedules_checks``: when it does not breach now, asks for a one-time judgement at ``check_at``.
    """

    spec: ClassVar[RuleSpec]
    name: ClassVar[str]
    order: ClassVar[int]
    """Where the rule is judged among the others (ascending): its decisions come out in this order."""
    description: ClassVar[str]
    policy_keys: ClassVar[tuple[str, ...]]
    """Policy keys that configure the rule (its config schema is the Policy model's part at these keys)."""
    scope: ClassVar[Scope] = "job"
    grace_able: ClassVar[bool] = False
    triggers: ClassVar[frozenset[Trigger]]
    permissions: ClassVar[frozenset[str]]
    admission_judged: ClassVar[bool] = False
    late_ok: ClassVar[bool] = False
    schedules_checks: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        spec: RuleSpec | None = cls.__dict__.get("spec")
        if spec is not None:
            cls.name, cls.order, cls.description, cls.policy_keys = (
                spec.name,
                spec.order,
                spec.description,
                spec.policy_keys,
            )
            cls.scope, cls.grace_able = spec.scope, spec.grace_able

    @abstractmethod
    def evaluate(self, policy: Policy, job: JobFacts, capacity: CapacityFacts | None = None) -> Decision | None:
        """A breach or warning, or None when the job is within the rule."""

    def evaluate_late(
        self, policy: Policy, job: JobFacts, trials: Callable[[], Sequence[TrialRecord]]
    ) -> Decision | None:
        """Judge a job that had ended when a trial of it was recorded (``late_ok`` rules): by default as
        ``evaluate`` does. ``trials`` reads the job's trial records, for a rule that needs their order."""
        return self.evaluate(policy, job, None)

    def switched_on(self, policy: Policy, job: JobState) -> bool:
        """Whether the policy has the rule judge ``job`` at all (the sweep reconciles a job's trials only
        for the ``reads_trials`` rules switched on for it): by default, whether ``defaults`` sets one of
        the spec's switches (``RuleSpec.switched_on``)."""
        return self.spec.switched_on(policy.defaults)

    def check_at(self, policy: Policy, job: JobFacts) -> datetime | None:
        """When to judge the job again if nothing else changes (``schedules_checks`` rules; None: never)."""
        return None

    def _decision(self, verdict: Verdict, job: JobFacts, message: str, **numbers: Any) -> Decision:
        return Decision(
            rule=self.name,
            verdict=verdict,
            job_key=job.job_key,
            job_name=job.job_name,
            team=job.team,
            message=message,
            numbers=numbers,
            at=job.now,
        )


class RuleRegistry:
    def __init__(self) -> None:
        self._rules: dict[str, Rule] = {}
        self._by_trigger: dict[Trigger | None, list[Rule]] = {}  # registry order, per trigger; reset on register

    def register(self, rule_class: type[Rule]) -> type[Rule]:
        spec = rule_class.__dict__.get("spec")
        if spec is None or specs.get(spec.name) is not spec:
            raise ValueError(f"rule {rule_class.__name__}: its spec must be a registered policy.rules spec")
        if rule_class.name in self._rules:
            raise ValueError(f"rule {rule_class.name!r} registered twice")
        self._rules[rule_class.name] = rule_class()
        self._by_trigger.clear()
        return rule_class

    def _ordered(self) -> list[Rule]:
        return list(self._cached(None))

    def _cached(self, trigger: Trigger | None) -> list[Rule]:
        """The rules (of ``trigger``; None: all) in registry order, sorted once per registration."""
        found = self._by_trigger.get(trigger)
        if found is None:
            ordered = sorted(self._rules.values(), key=lambda rule: (rule.order, rule.name))
            found = self._by_trigger[trigger] = [r for r in ordered if trigger is None or trigger in r.triggers]
        return found

    def __iter__(self) -> Iterator[Rule]:
        return iter(self._ordered())

    def for_trigger(self, trigger: Trigger) -> list[Rule]:
        return list(self._cached(trigger))

    def get(self, name: str) -> Rule:
        return self._rules[name]

    def __contains__(self, name: object) -> bool:
        return name in self._rules

    def permissions(self, trigger: Trigger | None = None) -> frozenset[str]:
        rules = self._ordered() if trigger is None else self.for_trigger(trigger)
        return frozenset(p for rule in rules for p in rule.permissions)


class DeclaredRule(Rule):
    """The rule of a spec that judges in its declaration (``RuleSpec.judge``): a breach it finds may stop
    the job (the stop permission), on the triggers the spec names."""

    def evaluate(self, policy: Policy, job: JobFacts, capacity: CapacityFacts | None = None) -> Decision | None:
        judge = self.spec.judge
        finding = judge(policy.defaults, job) if judge is not None else None
        return None if finding is None else self._decision("breach", job, finding.message, **finding.numbers)


def declared(spec: RuleSpec) -> type[Rule]:
    """The rule class judging ``spec`` by its own ``judge``."""
    name = "".join(part.title() for part in spec.name.split("-")) + "Rule"
    traits = {"spec": spec, "triggers": spec.judged_on, "permissions": frozenset({STOP_PERMISSION})}
    return type(name, (DeclaredRule,), {**traits, "late_ok": spec.late_ok, "__module__": __name__})


registry = RuleRegistry()
