"""Each rule's declaration (``policy.rules``) is the one place its settings and traits are written: the
governance rule, the policy's ``defaults``, the grace key, the rules that read trials, the requeued stops
and the grace notice are all read from it. The checks hold for every registered rule."""

from __future__ import annotations

from typing import Any, ClassVar, get_args

import pytest

from tuning_governor.app.queue.requeue import HOW
from tuning_governor.app.queue.shares import PREEMPT_RULE
from tuning_governor.governance import grace
from tuning_governor.governance.facts import CapacityFacts, JobFacts
from tuning_governor.governance.rules import Rule, RuleRegistry, registry
from tuning_governor.governance.trial_truth import TRIAL_RULES
from tuning_governor.models.decisions import Decision
from tuning_governor.policy import Defaults, GraceRule, Policy, PolicyError, parse_policy
from tuning_governor.policy.model import SharedDefaults
from tuning_governor.policy.rules import RuleSettings, RuleSpec, SpecRegistry, compose_defaults, specs
from tuning_governor.policy.rules.progress import RuntimeSettings


def test_every_governance_rule_judges_a_registered_spec_and_every_spec_is_judged() -> None:
    assert [rule.name for rule in registry] == [spec.name for spec in specs]
    for rule in registry:
        spec = specs.get(rule.name)
        assert rule.spec is spec
        assert (rule.order, rule.description, rule.policy_keys, rule.scope, rule.grace_able) == (
            spec.order,
            spec.description,
            spec.policy_keys,
            spec.scope,
            spec.grace_able,
        )


def test_defaults_compose_the_shared_keys_and_each_rules_own() -> None:
    own = [key for spec in specs for key in spec.own_keys]
    assert list(Defaults.model_fields) == [*SharedDefaults.model_fields, *own]
    defaults = Policy().defaults
    for spec in specs:
        if spec.settings is not None:
            assert spec.settings.of(defaults) is defaults  # each rule reads its own part, typed
    # The keys users write stay under defaults, validated by the rule's model.
    assert RuntimeSettings.of(parse_policy("defaults: {max_runtime_hours: 2}", "t").defaults).max_runtime_hours == 2
    with pytest.raises(PolicyError, match=r"defaults\.max_runtime_hours: expected a number >= 0, got -1"):
        parse_policy("defaults: {max_runtime_hours: -1}", "t")


def test_the_lists_of_rules_are_read_from_the_specs() -> None:
    assert get_args(GraceRule) == tuple(spec.name for spec in specs if spec.grace_able)
    assert tuple(spec.name for spec in specs if spec.reads_trials) == TRIAL_RULES
    assert {PREEMPT_RULE: "preempted"} | {s.name: s.requeued_as for s in specs if s.requeued_as} == HOW
    # The shipped rules keep their traits.
    assert {"budget", "team-budget", "stagnation", "failed-trials"} <= set(TRIAL_RULES)
    assert {"budget", "runtime", "stagnation", "failed-trials"} <= set(get_args(GraceRule))
    assert HOW["concurrency"] == "stopped on arrival"
    for spec in specs:
        if spec.no_grace is not None:
            with pytest.raises(PolicyError, match=f"{spec.name}: "):
                parse_policy(f"defaults: {{grace_minutes: {{{spec.name}: 5}}}}", "t")


def test_the_grace_notice_says_what_the_rules_spec_says_clears_it() -> None:
    policy = parse_policy("budget_tag: cost:cap", "t")
    assert grace.unless("budget", policy).startswith("its budget is raised (tag cost:cap, or the team's")
    assert grace.unless("runtime", policy) == (
        "the runtime cap (defaults.max_runtime_hours) is raised, or it is tagged governance:exempt=true"
    )
    assert grace.unless("no-such-rule", policy) == "the breach clears, or it is tagged governance:exempt=true"


class _Cap(RuleSettings):
    max_widgets: int = 0


class _Clash(RuleSettings):
    max_runtime_hours: float = 0.0  # the runtime rule's own key


def test_a_spec_that_contradicts_itself_is_refused() -> None:
    with pytest.raises(ValueError, match="a grace period is for a job-scoped rule"):
        RuleSpec(name="x", order=1, description="x", scope="team", grace_unless="never")
    with pytest.raises(ValueError, match="a grace period is for a job-scoped rule"):
        RuleSpec(name="x", order=1, description="x", grace_unless="never", no_grace="never")
    with pytest.raises(ValueError, match=r"switches \['max_gadgets'\] are not keys"):
        RuleSpec(name="x", order=1, description="x", settings=_Cap, switches=("max_gadgets",))


def test_the_registry_refuses_a_second_name_order_or_owner_of_a_key() -> None:
    fresh = SpecRegistry()
    fresh.register(RuleSpec(name="a", order=1, description="a", settings=_Cap))
    for spec, problem in [
        (RuleSpec(name="a", order=2, description="a"), "declared twice"),
        (RuleSpec(name="b", order=1, description="b"), "judged at order 1"),
        (RuleSpec(name="b", order=2, description="b", settings=_Cap), r"\['max_widgets'\] belong to another rule"),
    ]:
        with pytest.raises(ValueError, match=problem):
            fresh.register(spec)
    with pytest.raises(ValueError, match=r"\['max_runtime_hours'\] are declared both by the policy and by a rule"):
        compose_defaults(_Clash, "Defaults")


def test_settings_are_read_only_from_a_model_that_composes_them() -> None:
    with pytest.raises(TypeError, match="SharedDefaults does not compose RuntimeSettings"):
        RuntimeSettings.of(SharedDefaults())


def test_a_governance_rule_without_a_registered_spec_is_refused() -> None:
    class Unregistered(Rule):
        spec: ClassVar[RuleSpec] = RuleSpec(name="unregistered", order=999, description="not in policy.rules")
        triggers = frozenset({"sweep"})
        permissions = frozenset()

        def evaluate(self, policy: Policy, job: JobFacts, capacity: CapacityFacts | None = None) -> Decision | None:
            return None

    assert Unregistered.name == "unregistered"  # copied from its spec
    with pytest.raises(ValueError, match=r"must be a registered policy\.rules spec"):
        RuleRegistry().register(Unregistered)


def test_switches_say_when_defaults_leave_a_rule_on() -> None:
    on: dict[str, Any] = {spec.name: spec.switched_on(Policy().defaults) for spec in specs}
    # Off until a key switches them on; the budget may come from a job's tag, so nothing turns it off.
    assert not any(on[name] for name in ("runtime", "stagnation", "failed-trials"))
    assert on["budget"]
    stagnating = parse_policy("defaults: {stagnation_minutes: 30, max_failed_trials: 2}", "t").defaults
    assert [key for spec in specs for key in spec.guards(stagnating)] == [
        "defaults.stagnation_minutes",
        "defaults.max_failed_trials",
    ]
