"""The rule registry: each governance check is a class with its declaration (``spec``, a
``policy.rules`` spec: name, order, own settings, traits), its IAM needs and
``evaluate(...) -> Decision | None``.

Rules are pure: they read ``JobFacts`` (and ``CapacityFacts`` for concurrency) and the policy, and
say what they found. Whether a finding stops the job is decided by the engine (``governance.engine``)
from the policy's mode and the job's exemption; every rule that can stop needs the stop permission. How
the engine runs a rule (scope, admission, late judgement, grace, checks) is declared on the rule
(``governance.rules.base.Rule``).
"""

# The engine judges the rules by their declared ``order`` (concurrency, budget, team-budget, runtime,
# stagnation, tags, large-batch, failed-trials, pricing). Every module of this package is imported
# below, so a new rule is its own module here and its declaration's in policy/rules/: nothing here
# names it.
import importlib
import pkgutil

from tuning_governor.governance.rules.base import STOP_PERMISSION, DeclaredRule, Rule, RuleRegistry, declared, registry
from tuning_governor.governance.rules.budgets import BudgetRule, TeamBudgetRule
from tuning_governor.governance.rules.concurrency import ConcurrencyRule
from tuning_governor.governance.rules.failures import FailedTrialsRule
from tuning_governor.governance.rules.pricing import PricingRule
from tuning_governor.governance.rules.progress import RuntimeRule, StagnationRule
from tuning_governor.governance.rules.tags import TagsRule
from tuning_governor.models.decisions import Decision, Verdict
from tuning_governor.policy.rules import specs

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
# A rule whose declaration judges (``RuleSpec.judge``) has no module here: its rule is made from the spec.
for _spec in specs:
    if _spec.judge is not None and _spec.name not in registry:
        registry.register(declared(_spec))

__all__ = [
    "STOP_PERMISSION",
    "BudgetRule",
    "ConcurrencyRule",
    "Decision",
    "DeclaredRule",
    "FailedTrialsRule",
    "PricingRule",
    "Rule",
    "RuleRegistry",
    "RuntimeRule",
    "StagnationRule",
    "TagsRule",
    "TeamBudgetRule",
    "Verdict",
    "registry",
]
