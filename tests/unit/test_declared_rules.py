"""A rule may be its declaration alone: a ``RuleSpec`` with a ``judge`` over the job's own counts is made a
governance rule by ``governance.rules.declared`` (no module under governance/rules/ names it), judged on
the triggers it names, its breach a stop of the job."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import job_facts
from tuning_governor.governance.rules import STOP_PERMISSION, DeclaredRule, declared
from tuning_governor.policy import Policy
from tuning_governor.policy.rules import RuleSpec
from tuning_governor.policy.rules.base import Finding, JobView


def _judge(defaults: Any, job: JobView) -> Finding | None:
    cap = getattr(defaults, "max_widgets", 3)
    return Finding(f"{job.trials_failed} >= {cap}", {"failed": job.trials_failed}) if job.trials_failed >= cap else None


SPEC = RuleSpec(name="widget-cap", order=999, description="widgets", judge=_judge, judged_on=frozenset({"trial"}))


def test_a_judging_spec_becomes_a_rule_that_stops_on_its_triggers() -> None:
    rule_class = declared(SPEC)
    assert issubclass(rule_class, DeclaredRule) and rule_class.__name__ == "WidgetCapRule"
    rule = rule_class()
    assert (rule.name, rule.triggers, rule.permissions, rule.late_ok) == (
        "widget-cap",
        frozenset({"trial"}),
        frozenset({STOP_PERMISSION}),
        False,
    )
    assert rule.evaluate(Policy(), job_facts(trials_failed=2)) is None
    decision = rule.evaluate(Policy(), job_facts(trials_failed=3))
    assert decision is not None
    assert (decision.rule, decision.verdict, decision.message, decision.numbers) == (
        "widget-cap",
        "breach",
        "3 >= 3",
        {"failed": 3},
    )


def test_a_judge_without_triggers_and_a_late_judgement_off_trials_are_refused() -> None:
    with pytest.raises(ValueError, match="a judge is judged on some triggers"):
        RuleSpec(name="x", order=1, description="x", judge=_judge)
    with pytest.raises(ValueError, match="a judge is judged on some triggers"):
        RuleSpec(name="x", order=1, description="x", judged_on=frozenset({"sweep"}))
    with pytest.raises(ValueError, match="a judge is judged on some triggers"):
        RuleSpec(name="x", order=1, description="x", judge=_judge, judged_on=frozenset({"sweep"}), late_ok=True)
