"""What a person reads after a replay: :func:`render_summary`."""

from __future__ import annotations

from collections import Counter

from governor_client.prices import approximate as approximate_prices
from governor_client.replay.model import ReplayResult
from governor_client.replay.schedule import interval_text, utc_text
from tuning_governor.domain.pricing import PriceCatalog


def _usd(value: float | None) -> str:
    return "unpriced" if value is None else f"${value:,.2f}"


def render_summary(
    result: ReplayResult, *, events_source: str, out: str | None = None, prices: PriceCatalog | None = None
) -> str:
    """What a person reads after a replay: events, jobs, cost, stops by rule, savings, where the result went.

    ``prices``: the catalogue the replay priced with, the policy's prices filling its gaps; given it, the
    summary also names the trials' prices that are a third-party or hosting figure in their own region."""
    lines = [
        *_history_lines(result, events_source, prices),
        *_facts_lines(result),
        *_decision_lines(result),
        *_record_lines(result),
    ]
    if out:
        lines.append(f"Result: {'standard output' if out == '-' else out}")
    return "\n".join(lines) + "\n"


def _history_lines(result: ReplayResult, events_source: str, prices: PriceCatalog | None) -> list[str]:
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
    approximate = _approximate(result, prices)
    if approximate:
        lines.append(f"Approximate prices: {approximate}")
    if result.sweeps.every_seconds:
        interval = interval_text(result.sweeps.every_seconds)
        lines.append(f"Sweeps: {result.sweeps.runs} (every {interval}, on the events' timeline)")
    else:
        lines.append("Sweeps: none (--sweep-every 0)")
    return lines


def _approximate(result: ReplayResult, prices: PriceCatalog | None) -> str:
    """The approximate prices: those the governor's ``pricing`` warnings name (no price in the job's region),
    and, from ``prices``, every type the trials ran on whose price in their region is not AWS's figure."""
    found = {
        (p.instance_type, p.region): p
        for p in approximate_prices.from_decisions(
            d.numbers
            for job in result.jobs.values()
            for d in job.decisions
            if d.rule == "pricing" and d.verdict == "warning"
        )
    }
    if prices is not None:
        for region, types in result.trial_types.items():
            found |= {
                (p.instance_type, p.region): p for p in approximate_prices.approximate_prices(prices, region, types)
            }
    return approximate_prices.describe([found[key] for key in sorted(found, key=lambda k: (k[1], k[0]))])


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
