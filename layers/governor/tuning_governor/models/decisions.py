"""A governance decision as rules make it and the store keeps it (a value: no behaviour)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import ConfigDict

from tuning_governor.model_base import GovernorModel

#: breach: the rule wants the job stopped; warning: report only; grace: a breach whose stop waits for
#: the rule's grace period (governance/grace.py); enforced: a breach decided while the policy was
#: monitor, judged again under enforce (governance/enforce.py ``under_enforce``): the stop; passed: a
#: breach that no longer held when the governor came to act on it (governance/fresh.py): no stop.
Verdict = Literal["breach", "warning", "grace", "enforced", "passed"]


class Decision(GovernorModel):
    """What a rule found. ``numbers`` are the figures that decided it, for the audit trail and the report."""

    model_config = ConfigDict(frozen=True)

    rule: str
    verdict: Verdict
    job_key: str
    job_name: str
    team: str | None
    message: str
    numbers: dict[str, Any]
    at: datetime

    @property
    def wants_stop(self) -> bool:
        return self.verdict in {"breach", "enforced"}
