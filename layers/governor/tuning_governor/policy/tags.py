"""Governance tags on a job as the policy reads them: a budget amount as people write it, and keys one
slip away from the policy's tag (case, spaces, ``_`` for ``-``, one typo: never read as it, but reported)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from pydantic import ConfigDict

from tuning_governor.model_base import GovernorModel
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


class TagWarning(GovernorModel):
    """A governance tag the governor does not honour as written: which tag, its value, and why."""

    model_config = ConfigDict(frozen=True)

    key: str
    value: str
    problem: str

    @property
    def message(self) -> str:
        return f"tag {self.key}={render_value(self.value)} {self.problem}"


#: Keys at least this long (once normalised) are near misses at one typo too; shorter ones (``team``)
#: only by case, spaces and ``_`` for ``-``: one letter off a short key is another word (``term``).
TYPO_MIN_LENGTH = 8


def near_misses(tags: Mapping[str, str], key: str) -> list[TagWarning]:
    """Keys that are not ``key`` but one slip away from it: another case or surrounding spaces (AWS tag
    keys are case-sensitive, so ``Governance:Exempt`` is not the policy's tag), ``_`` for ``-``, or, for
    a key of at least ``TYPO_MIN_LENGTH`` characters, one typo (a letter dropped, added, changed, or
    two neighbours swapped). Each is reported naming ``key``; none is ever read as it."""
    out: list[TagWarning] = []
    for other, value in sorted(tags.items()):
        problem = _slip(other, key)
        if problem is not None:
            out.append(TagWarning(key=other, value=value, problem=problem))
    return out


@lru_cache(maxsize=4096)
def _slip(other: str, key: str) -> str | None:
    """Why tag key ``other`` is a near miss of ``key``, or None (remembered: every event asks the same
    few pairs of keys, and the edit distance is the costly part)."""
    if other == key:
        return None
    if other.strip().casefold() == key.strip().casefold():
        return f"ignored: tag keys are case-sensitive and the policy's tag is {key}"
    wanted = _normalised(key)
    if _normalised(other) == wanted or (
        len(wanted) >= TYPO_MIN_LENGTH and edit_distance(_normalised(other), wanted) <= 1
    ):
        return f"ignored: close to the policy's tag {key}, but tag keys must match it exactly"
    return None


def _normalised(key: str) -> str:
    return key.strip().casefold().replace("_", "-")


def edit_distance(a: str, b: str) -> int:
    """Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
    neighbouring characters, each costing 1 (no substring edited twice)."""
    previous: list[int] = []
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        before, previous, row = previous, row, [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], before[j - 2] + 1)
    return row[len(b)]


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
    any other key one slip away from ``key`` (see ``near_misses``); those are never read as ``key``."""
    misses = near_misses(tags, key)
    return tags.get(key), "; ".join(w.message for w in misses) or None
