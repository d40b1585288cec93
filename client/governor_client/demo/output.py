"""What the demo prints: each act's timeline, the seed job's table, every job with its decisions, the reports
sent; and the raw data as a JSON file (``write_raw``)."""

from __future__ import annotations

import json
import math
import re
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, TextIO

from governor_client.demo.acts import SEED_JOB, START, ActResult
from governor_client.offline.slack_server import SlackWebhookServer
from governor_client.simulator.simulation import SimulationResult
from tuning_governor.models.records import JobSummary


def _money(value: Decimal | None) -> str:
    return "unpriced" if value is None else f"${value:,.2f}"


def _clock(moment: datetime) -> str:
    return f"+{(moment - START).total_seconds() / 60:5.1f} min"


def timeline(result: SimulationResult) -> list[str]:
    """The events worth reading: tuning-job status changes, decisions (on events, and those of the
    scheduled sweep and budget checks, marked so), finalisations; in time order."""
    lines: list[tuple[datetime, str]] = []
    for o in result.outcomes:
        payload = o.result
        job = payload.get("job")
        if o.function == "tuning-events" and payload.get("outcome") in {"recorded", "finalised"}:
            status = payload.get("status")
            extra = ""
            if payload.get("demand"):
                extra = " demand " + ", ".join(f"{n} x {t}" for t, n in payload["demand"].items())
            lines.append((o.delivered_at, f"  {_clock(o.delivered_at)}  {job:<20} {status}{extra}"))
        lines += [(o.delivered_at, _decision(o.delivered_at, job, d)) for d in payload.get("decisions") or []]
    for run in result.scheduled:
        lines += [(run.at, _decision(run.at, d.get("job"), d, f" [{run.function}]")) for d in run.decisions]
    return [line for _, line in sorted(lines, key=lambda pair: pair[0]) if line]


def _decision(at: datetime, job: Any, decision: dict[str, Any], by: str = "") -> str:
    if decision["action"] == "already-decided":
        return ""
    return (
        f"  {_clock(at)}  {job or '?':<20} >> {decision['rule']} {decision['verdict']}:"
        f" {decision['action']} ({decision['mode']}){by}"
    )


def seed_table(seed: JobSummary) -> list[str]:
    """The seed's table: billable time and wall clock, with early stopping and without it (estimated)."""
    cost, es, timing = seed.cost, seed.cost.early_stopping, seed.timing
    instances = cost.billable_instance_seconds / cost.billable_seconds if cost.billable_seconds else 1
    without = es.billable_instance_seconds_without_early_stopping
    rounds = math.ceil(seed.trials_total / seed.max_parallel)

    def cell(seconds: float | Decimal | None, *, estimate: bool = False) -> str:
        return f"{'~' if estimate else ''}{float(seconds) / 60:.1f}" if seconds is not None else "n/a"

    label = f"{'':<44}"
    return [
        f"  {label}{'with early stopping':>20}  {'without (estimate)':>19}",
        f"  {'billable minutes (Σ BillableTimeInSeconds)':<44}{cell(cost.billable_seconds):>20}"
        f"  {cell(without / instances, estimate=True):>19}",
        f"  {f'billable instance-minutes (x {instances:g} instances)':<44}"
        f"{cell(cost.billable_instance_seconds):>20}  {cell(without, estimate=True):>19}",
        f"  {'wall clock, minutes':<44}{cell(timing.wall_clock_seconds):>20}"
        f"  {cell(timing.estimate_without_early_stopping_seconds, estimate=True):>19}",
        f"  {'one trial at a time, minutes':<44}{'':>20}  {cell(timing.one_at_a_time_seconds, estimate=True):>19}",
        f"  without early stopping: ceil({seed.trials_total} / {seed.max_parallel}) = {rounds} rounds x a full-length"
        f" trial of {cell(timing.full_trial_seconds)} min (creation to end, start-up included);"
        f" mean trial {cell(timing.mean_trial_seconds)} min",
        f"  {es.trials_stopped_early} trials stopped early by {seed.strategy or 'early stopping'},"
        f" {es.trials_cut_by_job_stop} cut by a stop of the job; cost {_money(cost.cost_usd)},"
        f" early stopping saved ~{_money(es.saved_usd)}",
    ]


def print_results(acts: list[ActResult], slack: SlackWebhookServer, out: TextIO) -> None:
    """The demo's closing sections: the seed job, every job with what the governor decided, the reports sent."""
    _print_seed(acts[0].summaries[SEED_JOB], out)
    _print_jobs(acts, out)
    _print_reports(acts, slack, out)


def _hyperparameters(values: dict[str, str]) -> str:
    def short(text: str) -> str:
        try:
            return f"{float(text):.3g}" if "." in text else text
        except ValueError:
            return text

    return ", ".join(f"{k}={short(v)}" for k, v in sorted(values.items()))


def _print_seed(seed: JobSummary, out: TextIO) -> None:
    print(f"\n=== The seed job: {SEED_JOB} ===", file=out)
    assert seed.objective is not None
    print(f"  best {seed.objective.name}: {seed.objective.value} ({seed.best_training_job})", file=out)
    print(f"  best hyperparameters: {_hyperparameters(dict(seed.best_hyperparameters or {}))}", file=out)
    print(f"  trials: {', '.join(f'{n} {status}' for status, n in sorted(seed.trials_by_status.items()))}", file=out)
    for line in seed_table(seed):
        print(line, file=out)


def short_reason(message: str) -> str:
    """A decision's message without its parenthesised details (sources, breakdowns): the comparison itself."""
    previous = None
    while previous != message:
        previous, message = message, re.sub(r"\s*\([^()]*\)", "", message)
    head = message.split(": ")[0]
    # "projected $112.61 > budget $50.00: spent ..., 1 trials finished ...": the comparison says it all
    return " ".join((head if re.search(r"[<>]", head) else message).split())


def _action(row: dict[str, Any]) -> str:
    action = str(row.get("action", ""))
    return "would stop (monitor)" if action == "would-stop" else action.replace("-", " ")


def decision_lines(rows: list[dict[str, Any]]) -> list[str]:
    """One line per decision, in time order: when, the rule and verdict, what was done, and why."""
    seen: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        seen.setdefault((row.get("sk"), row.get("action"), row.get("at")), row)
    lines = []
    for row in sorted(seen.values(), key=lambda r: str(r.get("at", ""))):
        at = datetime.fromisoformat(str(row["at"])).strftime("%H:%M:%S") if row.get("at") else "--:--:--"
        verdict = row.get("verdict") or str(row.get("sk", "")).rsplit("#", 1)[-1]
        reason = short_reason(str(row.get("message", "")))
        lines.append(f"      {at}  {row.get('rule')} {verdict}: {_action(row)}  {reason}")
    return lines


def _print_jobs(acts: list[ActResult], out: TextIO) -> None:
    print("\n=== Every job, and what the governor decided (times UTC) ===", file=out)
    print(f"  {'job':<20} {'status':<10} {'trials':>6} {'best AUC':>9} {'cost':>10}  team", file=out)
    for act in acts:
        print(f"  {act.title}", file=out)
        for name, summary in act.summaries.items():
            best = summary.objective.value if summary.objective and summary.objective.value is not None else None
            best_text = f"{best:.4f}" if best is not None else "-"
            print(
                f"  {name:<20} {summary.status:<10} {summary.trials_total:>6} {best_text:>9}"
                f" {_money(summary.cost.cost_usd):>10}  {summary.team or '-'}",
                file=out,
            )
            for line in decision_lines(act.decisions.get(name, [])) or ["      no rule fired"]:
                print(line, file=out)


def _print_reports(acts: list[ActResult], slack: SlackWebhookServer, out: TextIO) -> None:
    sns = [m for act in acts for m in act.sns]
    print(
        f"\n=== Reports sent: {len(sns)} to SNS, {len(slack.messages)} to Slack (local webhook on 127.0.0.1) ===",
        file=out,
    )
    for message in sns:
        print(f"  {str(message.get('Subject')).removeprefix('[tuning-governor] ')}", file=out)


def write_raw(data: dict[str, Any], path: Path) -> Path:
    """The demo's results as JSON (summaries as the table holds them) at ``path``; the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        **data,
        "summaries": {name: summary.model_dump(mode="json") for name, summary in data["summaries"].items()},
        "reports": [str(page) for page in data["reports"]],
    }
    path.write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")
    return path


def _created_at(result: SimulationResult, job: str) -> datetime | None:
    """When the governor first saw ``job`` in a tuning-job event (its creation, as EventBridge delivered it)."""
    return next(
        (o.delivered_at for o in result.outcomes if o.function == "tuning-events" and o.result.get("job") == job),
        None,
    )


def _position(act: ActResult, job_name: str) -> str:
    for message in act.sns:
        found = re.search(rf"{re.escape(job_name)} \([^)]*\): queued, position (\d+)", str(message.get("Subject")))
        if found:
            return found.group(1)
    return "?"


def queue_lines(act: ActResult) -> list[str]:
    """An act's closing lines on its submissions: when each was queued and at which position, when it was
    created, how it ended, and whether the governor stopped it."""
    lines = []
    for entry in act.queue:
        job = entry.job_name.lower()
        created = _created_at(act.result, job)
        summary = act.summaries.get(job) or act.summaries.get(entry.job_name)
        stops = [d for d in act.decisions.get(entry.job_name, []) if d.get("action") == "stopped"]
        waited = f"waited {(created - entry.enqueued_at).total_seconds() / 60:.1f} min" if created else "never created"
        lines += [
            f"\n  The queue: {entry.client_token} ({entry.team}) submitted at {_clock(entry.enqueued_at)},"
            f" queued at position {_position(act, entry.job_name)}; {entry.state}"
            + (
                f" and created as {entry.job_name} at {_clock(created)} when capacity freed ({waited})"
                if created
                else ""
            ),
            f"  {entry.job_name}: {summary.status if summary else 'not finished'},"
            f" {summary.trials_total if summary else 0} trials; stopped by the governor: {len(stops) or 'never'}.",
            f"  In Act 1 the same request, created directly, was stopped on arrival for concurrency; submitted to the"
            f" queue it {'waited and ran instead: no launch thrown away' if created and not stops else 'did not run'}.",
        ]
    return lines
