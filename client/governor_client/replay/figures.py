"""The figures of the ``--html`` page, from the replay's result (pure: no matplotlib, no table reads):
the stop and would-stop decisions with what decided them, and the savings per stopped job."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

from governor_client.replay.model import ReplayResult
from governor_client.replay.timeline import STOP_ACTIONS
from governor_client.report.html import usd_text

__all__ = ["JobSavings", "StopRow", "decided_by", "job_savings", "stop_rows", "usd_text"]


@dataclass(frozen=True)
class StopRow:
    """One stop or would-stop decision of the replay."""

    number: int
    job: str
    team: str | None
    rule: str
    verdict: str
    action: str
    at: datetime
    accepted: bool
    """A StopHyperParameterTuningJob SageMaker would have accepted (in the result's ``actions``)."""
    decided_by: str
    spent_usd: Decimal | None = None
    """What the rule counted as spent at the decision (budget rules; None for the others)."""
    in_flight_usd: Decimal | None = None
    """What the rule expected billed while the stop takes effect (``at_stop_usd`` - spent)."""
    billed_usd: Decimal | None = None
    """The job's cost with the stop, in the end (``JobSavings.cost_with_stop_usd``); None: unknown."""


def spent_and_in_flight(numbers: Mapping[str, Any]) -> tuple[Decimal | None, Decimal | None]:
    """(spent at the decision, in flight while the stop takes effect) of a budget decision's numbers."""
    spent = numbers.get("spent_usd")
    if spent is None:
        return None, None
    at_stop = numbers.get("at_stop_usd")
    spent_usd = Decimal(str(spent))
    in_flight = max(Decimal(0), Decimal(str(at_stop)) - spent_usd) if at_stop is not None else None
    return spent_usd, in_flight


@dataclass(frozen=True)
class JobSavings:
    """A stopped (or would-stop) job: what it cost in the history, and with the stop."""

    job: str
    team: str | None
    kind: Literal["stopped", "if enforced"]
    at: datetime
    """The stop (the first accepted one), or the first would-stop decision."""
    cost_in_history_usd: Decimal | None
    """What it cost in the captured history, where it ran on: trials + warm pools; None if unpriced."""
    finished_in_history: bool
    """False: the history ends before the job does, so its cost in the history is a lower bound."""
    avoided_usd: Decimal | None
    """The part of its trials' billed cost after ``at`` (docs/reference/replay.md's savings); None if unpriced."""

    @property
    def cost_with_stop_usd(self) -> Decimal | None:
        """Cost in the history less what the stop avoids (warm-pool retention stays: it is not avoided)."""
        if self.cost_in_history_usd is None or self.avoided_usd is None:
            return None
        return self.cost_in_history_usd - self.avoided_usd


def _money(value: float | None) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def decided_by(rule: str, numbers: Mapping[str, Any], message: str) -> str:
    """The figures that decided a decision, in a line: spent vs limit, usage + demand vs limit, ..."""
    if "spent_usd" in numbers and "budget_usd" in numbers:
        bound = " (lower bound: unpriced trials)" if numbers.get("lower_bound") else ""
        return f"spent {usd_text(numbers['spent_usd'])}{bound} vs limit {usd_text(numbers['budget_usd'])}"
    types = numbers.get("instance_types")
    if isinstance(types, Mapping) and types:
        parts = [
            f"{itype}: usage {row.get('usage')} + demand {row.get('demand')} vs limit {row.get('limit')}"
            + (f" ({row['source']})" if row.get("source") else "")
            for itype, row in sorted(types.items())
            if isinstance(row, Mapping)
        ]
        return "; ".join(parts) or message
    if "runtime_seconds" in numbers and "cap_seconds" in numbers:
        return f"runtime {numbers['runtime_seconds'] / 3600:.2f} h vs cap {numbers['cap_seconds'] / 3600:.2f} h"
    if rule == "stagnation" and "measure" in numbers:
        measure = numbers["measure"]
        value = {
            "trials": numbers.get("trials_without_improvement"),
            "minutes": numbers.get("minutes_since_improvement"),
            "usd": numbers.get("usd_since_improvement"),
        }.get(str(measure))
        return f"{measure} without improvement: {value} vs limit {numbers.get('limit')}"
    if "failed" in numbers and "limit" in numbers:
        return f"failed trials {numbers['failed']} vs limit {numbers['limit']}"
    return message


def stop_rows(result: ReplayResult, job_teams: Mapping[str, str | None]) -> list[StopRow]:
    """Every stop and would-stop decision of the result, in time order (then job, rule), numbered from 1."""
    accepted = {(a.job, a.rule, a.at) for a in result.actions}
    found = [
        (name, decision)
        for name, job in result.jobs.items()
        for decision in job.decisions
        if decision.action in STOP_ACTIONS
    ]
    found.sort(key=lambda item: (item[1].at, item[0], item[1].rule, item[1].verdict))
    return [
        StopRow(
            number=number,
            job=name,
            team=job_teams.get(name),
            rule=d.rule,
            verdict=d.verdict,
            action=d.action,
            at=d.at,
            accepted=(name, d.rule, d.at) in accepted,
            decided_by=decided_by(d.rule, d.numbers, d.message),
            spent_usd=spent_and_in_flight(d.numbers)[0],
            in_flight_usd=spent_and_in_flight(d.numbers)[1],
        )
        for number, (name, d) in enumerate(found, start=1)
    ]


def job_savings(
    result: ReplayResult,
    job_teams: Mapping[str, str | None],
    if_enforced: Mapping[str, Decimal | None],
) -> list[JobSavings]:
    """The stopped jobs (the result's ``savings.by_job``) and, for monitor mode, the would-stop jobs
    whose avoidable cost ``if_enforced`` gives; in time order of the stop."""
    out: list[JobSavings] = []
    first_stop: dict[str, datetime] = {}
    for action in result.actions:
        first_stop[action.job] = min(action.at, first_stop.get(action.job, action.at))
    for name, saved in result.savings.by_job.items():
        job = result.jobs[name]
        out.append(
            JobSavings(
                job=name,
                team=job_teams.get(name),
                kind="stopped",
                at=job.stop_requested_at or first_stop[name],
                cost_in_history_usd=_money(job.cost_usd),
                finished_in_history=job.summary == "final",
                avoided_usd=_money(saved),
            )
        )
    for name, avoidable in if_enforced.items():
        if name in result.savings.by_job:
            continue
        job = result.jobs[name]
        at = min(d.at for d in job.decisions if d.action == "would-stop")
        out.append(
            JobSavings(
                job=name,
                team=job_teams.get(name),
                kind="if enforced",
                at=at,
                cost_in_history_usd=_money(job.cost_usd),
                finished_in_history=job.summary == "final",
                avoided_usd=avoidable,
            )
        )
    return sorted(out, key=lambda s: (s.at, s.job))
