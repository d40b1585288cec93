"""What the governor's table holds about one tuning job, as the pictures and pages need it (no drawing here)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from tuning_governor.models.records import JobSummary, TrialRecord

STOP_ACTIONS = frozenset({"stopped", "would-stop"})


def stops(decisions: Iterable[dict[str, Any]]) -> list[tuple[datetime, str]]:
    """Every stop and would-stop decision, earliest first, as (time, ``rule: action``)."""
    found = [
        (datetime.fromisoformat(str(d["at"])), f"{d.get('rule')}: {d.get('action')}")
        for d in decisions
        if d.get("action") in STOP_ACTIONS and d.get("at")
    ]
    return sorted(found)


@dataclass
class JobView:
    """What the table holds about one tuning job, as the plots need it."""

    key: str
    name: str
    team: str | None
    status: str
    created: datetime | None
    objective_type: str | None
    trials: list[TrialRecord]
    decisions: list[dict[str, Any]]
    summary: JobSummary | None
    budget_check_at: str | None = None
    """The budget check the governor last scheduled for the job (its table's ``budget_check_at``)."""
    reserved: dict[str, int] = field(default_factory=dict)
    """Instances per type the job asks for at once (its table's ``demand``: per trial x parallel trials),
    which the capacity ledger counts as used from its admission until it ends."""
    plots: dict[str, bytes] = field(default_factory=dict)
    client_token: str | None = None
    """The client token of the submission the queue created the job for (its name is generated from
    it: ``q-`` and a hash the owner never typed); None for a job created directly."""

    @property
    def label(self) -> str:
        """How pages name the job: ``speech-asr-hpo (q-a061...)`` for a submission, else its name."""
        return f"{self.client_token} ({self.name})" if self.client_token else self.name

    @property
    def budget_usd(self) -> Decimal | None:
        for decision in self.decisions:
            value = (decision.get("numbers") or {}).get("budget_usd")
            if value is not None and decision.get("rule") == "budget":
                return Decimal(str(value))
        return None

    @property
    def stop(self) -> tuple[datetime, str] | None:
        """The earliest stop or would-stop decision (time, ``rule: action``), whatever its rule."""
        found = stops(self.decisions)
        return found[0] if found else None

    def limits(self) -> dict[str, int]:
        """The per-type limits of the job's concurrency decision (what the governor compared with)."""
        out: dict[str, int] = {}
        for decision in self.decisions:
            if decision.get("rule") != "concurrency":
                continue
            for itype, figures in ((decision.get("numbers") or {}).get("instance_types") or {}).items():
                if isinstance(figures, dict) and figures.get("limit") is not None:
                    out[str(itype)] = int(figures["limit"])
        return out
