"""The rules' declarations (``policy.rules.base.RuleSpec``), one module per rule module of
``governance.rules``, and what the policy derives from them: the ``defaults`` model composing every
rule's settings, and the grace-period key ``defaults.grace_minutes.<rule>``.

Every module of this package is imported below, so a new rule's declaration is its own module: nothing
here, in the policy model or in the client names it.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

from pydantic import BaseModel, BeforeValidator, Field, create_model
from pydantic_core import PydanticCustomError

from tuning_governor.policy.fields import none_to_empty
from tuning_governor.policy.rules.base import RuleSettings, RuleSpec, Scope, SpecRegistry, register, specs

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")


def compose_defaults[M: BaseModel](core: type[M], name: str) -> type[M]:
    """``core`` (the keys several rules share) with every registered rule's settings, as one model
    ``name``: its fields come in ``core``'s order, then each rule's in judging order."""
    models = [spec.settings for spec in specs if spec.settings is not None]
    clash = sorted(set(core.model_fields) & {key for model in models for key in model.model_fields})
    if clash:
        raise ValueError(f"defaults keys {clash} are declared both by the policy and by a rule")
    # Fields follow the reversed method resolution order: core's first, then the rules' in order.
    bases = (*reversed(models), core)
    return cast(type[M], create_model(name, __base__=bases, __module__=core.__module__, __doc__=core.__doc__))


def trial_rules() -> tuple[str, ...]:
    """The rules that read a job's trials (``RuleSpec.reads_trials``), in judging order."""
    return tuple(spec.name for spec in specs if spec.reads_trials)


# -- grace periods: defaults.grace_minutes.<rule>: <minutes> ------------------------------------------
GRACE_RULES = tuple(spec.name for spec in specs if spec.grace_able)
"""The rules a grace period may delay: those that stop one job on what it has done so far."""
_NO_GRACE = {spec.name: spec.no_grace for spec in specs if spec.no_grace is not None}
# A month: longer than any sensible notice, and keeps stop times far inside datetime's range.
_MAX_GRACE_MINUTES = 43_200

if TYPE_CHECKING:
    GraceRule = str
else:
    GraceRule = Literal[GRACE_RULES]


def _grace_rules(value: Any) -> Any:
    value = none_to_empty(value)
    if isinstance(value, dict):
        for key in value:
            if key in _NO_GRACE:
                raise PydanticCustomError("no_grace", "{rule}: {why}", {"rule": key, "why": _NO_GRACE[key]})
    return value


GraceMinutes = Annotated[
    dict[GraceRule, Annotated[float, Field(ge=0, le=_MAX_GRACE_MINUTES, strict=True, allow_inf_nan=False)]],
    BeforeValidator(_grace_rules),
]

__all__ = [
    "GRACE_RULES",
    "GraceMinutes",
    "GraceRule",
    "RuleSettings",
    "RuleSpec",
    "Scope",
    "SpecRegistry",
    "compose_defaults",
    "register",
    "specs",
    "trial_rules",
]
