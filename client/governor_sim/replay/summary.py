"""What a person reads after a replay: :func:`render_summary`."""

from __future__ import annotations

from collections import Counter

from governor_sim import approximate_prices
from governor_sim.replay.model import ReplayResult
from governor_sim.replay.schedule import interval_text, utc_text


def _usd(value: float | None) -> str:
    return "unpriced" if value is None else f"${value:,.2f}"


def render_summary(result: ReplayResult, *, events_source: str, out: str | None = None) -> str:
    """What a person reads after a replay: events, jobs, cost, stops by rule, savings, where the result went."""
    lines = [
        *_history_lines(result, events_source),
        *_facts_lines(result),
        *_decision_lines(result),
        *_record_lines(result),
    ]
    if out:
        lines.append(f"Result: {'standard output' if out == '-' else out}")
    return "\n".join(lines) + "\n"


def _history_lines(result: ReplayResult, events_source: str) -> list[str]:
    """What was replayed: the inputs, the events, the jobs, their cost and the sweeps."""
    events, jobs = result.events, result.jobs
    finished = sum(1 for job in jobs.values() if job.summary == "final")
    spent = sum(job.cost_usd for job in jobs.values() if job.cost_usd is not None)
    unpriced = sum(1 for job in jobs.values() if job.cost_usd is None)
    span = f", {utc_text(events.first_at)} .. {utc_text(events.last_at)}" if events.first_at else ""
    lines = [
        f"Replay of {events_source} under {result.policy.source} (mode {result.policy.mode})",
        f"Events: {events.lines} read, {events.processed} processed, {events.rejected} rejected,"
        f" {events.failed} failed{span}",
        f"Tuning jobs: {len(jobs)} ({finished} finished, {len(jobs) - finished} unfinished when the history ends)",
        f"Cost in the history: ${spent:,.2f}" + (f" (+ {unpriced} job(s) not fully priced)" if unpriced else ""),
    ]
    approximate = approximate_prices.describe(
        approximate_prices.from_decisions(
            d.numbers for job in jobs.values() for d in job.decisions if d.rule == "pricing" and d.verdict == "warning"
        )
    )
    if approximate:
        lines.append(f"Approximate prices: {approximate}")
    if result.sweeps.every_seconds:
        interval = interval_text(result.sweeps.every_seconds)
        lines.append(f"Sweeps: {result.sweeps.runs} (every {interval}, on the events' timeline)")
    else:
        lines.append("Sweeps: none (--sweep-every 0)")
    return lines


def _facts_lines(result: ReplayResult) -> list[str]:
    """Where the jobs' facts came from, and the jobs judged without some (never silently)."""
    facts, lines = result.facts, []
    if facts.table is not None:
        lines.append(f"Facts from table {facts.table}: {facts.jobs_from_table} of {len(result.jobs)} jobs")
    if facts.incomplete:
        missing = Counter(m for gap in facts.incomplete for m in gap.missing)
        names = [gap.job for gap in facts.incomplete[:5]]
        more = "" if len(facts.incomplete) <= 5 else f" and {len(facts.incomplete) - 5} more"
        lines.append(
            f"Judged on incomplete facts: {len(facts.incomplete)} jobs ("
            + ", ".join(f"{m} {n}" for m, n in sorted(missing.items()))
            + f"): {', '.join(names)}{more}"
        )
        where = "the events" if facts.table is None else f"the events and from {facts.table}"
        hint = "; --facts-from-table TABLE reads what the deployed governor stored" if facts.table is None else ""
        lines.append(f"  (missing from {where}: MaxParallel taken as 1, no instances, no tags{hint})")
    return lines


def _decision_lines(result: ReplayResult) -> list[str]:
    """The decisions by action, the stops by rule, each stop and what the stops would have saved."""
    lines: list[str] = []
    verdicts = Counter(d.action for job in result.jobs.values() for d in job.decisions)
    if verdicts:
        lines.append("Decisions: " + ", ".join(f"{action} {n}" for action, n in sorted(verdicts.items())))
    by_rule = Counter(action.rule for action in result.actions)
    if by_rule:
        lines.append(
            f"Stops: {len(result.actions)} (" + ", ".join(f"{r} {n}" for r, n in sorted(by_rule.items())) + ")"
        )
    elif result.policy.mode == "monitor" and verdicts.get("would-stop"):
        lines.append("Stops: 0 (monitor mode stops nothing; replay with --mode enforce to see what stops would save)")
    else:
        lines.append("Stops: 0")
    for action in result.actions:
        saved = result.savings.by_job.get(action.job)
        lines.append(f"  {utc_text(action.at)}  stop {action.job} ({action.rule}), would have saved {_usd(saved)}")
    lines.append(
        f"Would have saved: ${result.savings.usd:,.2f}"
        + ("" if result.savings.complete else " (stopped jobs with unpriced trials not included)")
    )
    return lines


def _record_lines(result: ReplayResult) -> list[str]:
    """The reports recorded, and the lines the replay could not use."""
    channels = Counter(n.channel for n in result.notifications)
    lines = [
        f"Notifications (recorded, not sent): {len(result.notifications)}"
        + (" (" + ", ".join(f"{c} {n}" for c, n in sorted(channels.items())) + ")" if channels else "")
    ]
    if result.rejected_events:
        numbers = [str(p.line) for p in result.rejected_events[:10]]
        more = "" if len(result.rejected_events) <= 10 else f" and {len(result.rejected_events) - 10} more"
        lines.append(f"Rejected lines: {', '.join(numbers)}{more} (reasons in the result)")
    if result.failed_events:
        lines.append(
            f"Failed events (handler raised): lines {', '.join(str(p.line) for p in result.failed_events[:10])}"
        )
    return lines
