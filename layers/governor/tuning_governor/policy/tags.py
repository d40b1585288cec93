"""Governance tags on a job as the policy reads them: a budget amount as people write it, and keys that
match the policy's tag only when case is ignored (never read as it, but reported)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation

from pydantic import BaseModel, ConfigDict

from tuning_governor.models.limits import dynamodb_number_problem
from tuning_governor.policy.errors import render_value
from tuning_governor.policy.fields import MAX_BUDGET_USD

# A budget as people write it: 50, 50.00, $50, 50 USD, USD 50 (any case), 1,000 (thousands grouped by 3).
_BUDGET_TAG = re.compile(
    r"^(?:(?P<pre>usd)\s*)?\$?\s*(?P<whole>[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?P<fraction>\.[0-9]+)?\s*(?P<post>usd)?$",
    re.IGNORECASE | re.ASCII,
)


def parse_budget_tag(raw: str) -> Decimal | None:
    """The USD amount a budget tag value spells, or None when it spells none.

    Accepted: a non-negative amount with an optional fraction (``50``, ``50.00``), optionally
    prefixed by ``$`` and/or ``USD``, or followed by ``USD`` (``USD`` in any case, spaces optional),
    with optional thousands separators grouped by three (``1,000``, ``$1,250,000.50``). Rejected:
    anything else, e.g. negatives, exponents, other currencies, ``USD 50 USD``, a decimal comma
    (``50,5``), ``1,00``, spaces inside the number, digits other than 0-9. (SageMaker's tag value
    pattern has no ``$`` or ``,``; those spellings are accepted for tags that reach the governor
    another way, e.g. a replayed event log.)
    """
    amount = _amount(raw)
    # The budget is recorded with the decision: an amount DynamoDB cannot hold is not a budget, and
    # neither is one above the policy's own bound (no arithmetic on it may overflow).
    return None if amount is None or dynamodb_number_problem(amount) or amount > MAX_BUDGET_USD else amount


def _amount(raw: str) -> Decimal | None:
    match = _BUDGET_TAG.match(raw.strip())
    if match is None or (match["pre"] and match["post"]):
        return None
    try:
        return Decimal(match["whole"].replace(",", "") + (match["fraction"] or ""))
    except InvalidOperation:  # pragma: no cover - the pattern admits only valid decimals
        return None


class TagWarning(BaseModel):
    """A governance tag the governor does not honour as written: which tag, its value, and why."""

    model_config = ConfigDict(frozen=True)

    key: str
    value: str
    problem: str

    @property
    def message(self) -> str:
        return f"tag {self.key}={render_value(self.value)} {self.problem}"


def near_misses(tags: Mapping[str, str], key: str) -> list[TagWarning]:
    # People type Governance:Exempt; AWS tag keys are case-sensitive, so it is not the tag the policy names.
    wanted = key.strip().casefold()
    return [
        TagWarning(
            key=other,
            value=value,
            problem=f"ignored: tag keys are case-sensitive and the policy's tag is {key}",
        )
        for other, value in sorted(tags.items())
        if other != key and other.strip().casefold() == wanted
    ]


def bad_budget(key: str, raw: str) -> TagWarning:
    amount = _amount(raw)
    if amount is not None and amount > MAX_BUDGET_USD:
        problem = f"ignored: above the largest budget, ${MAX_BUDGET_USD:,}; the next budget source applies"
    else:
        problem = (
            "ignored: not an amount of USD (e.g. 250, 99.50, 250 USD or USD 1,000); the next budget source applies"
        )
    return TagWarning(key=key, value=raw, problem=problem)


def tag_lookup(tags: Mapping[str, str], key: str) -> tuple[str | None, str | None]:
    """The value of tag ``key`` (exact, case-sensitive match, as AWS tag keys are), and a warning naming
    any other key that matches ``key`` only when case (or surrounding space) is ignored; those are
    never read as ``key``."""
    misses = near_misses(tags, key)
    return tags.get(key), "; ".join(w.message for w in misses) or None
