"""What the demo prints: progress, each act's timeline, the seed job's table, the closing sections."""

from __future__ import annotations

import json
import math
from datetime import datetime
from decimal import Decimal
from typing import Any, TextIO

from governor_sim.demo_acts import SEED_JOB, START, ActResult
from governor_sim.simulation import Progress, SimulationResult
from governor_sim.slack_server import SlackWebhookServer
from tuning_governor.models.records import JobSummary


def _money(value: Decimal | None) -> str:
    return "unpriced" if value is None else f"${value:,.2f}"


def _clock(moment: datetime) -> str:
    return f"+{(moment - START).total_seconds() / 60:5.1f} min"


def progress_printer(out: TextIO) -> Any:
    def show(p: Progress) -> None:
        bar = "#" * min(30, p.trial_events_delivered // 10)
        state = "done" if p.done else f"{p.pending_deliveries} in flight"
        print(
            f"  [{_clock(p.virtual_time)}] {p.deliveries:4d} events delivered"
            f" ({p.trial_events_delivered:4d} trial events) {bar:<30} {state}",
            file=out,
        )

    return show


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
    """The demo's closing sections: the seed job, every job, the table's rows, SNS and Slack."""
    seed = acts[0].summaries[SEED_JOB]
    _print_seed(seed, out)
    _print_jobs(acts, out)
    _print_rows(acts, seed, out)
    _print_sns(acts, out)
    _print_slack(slack, out)


def _print_seed(seed: JobSummary, out: TextIO) -> None:
    print(f"\n=== The seed job: {SEED_JOB} ===", file=out)
    assert seed.objective is not None
    print(f"  best {seed.objective.name}: {seed.objective.value} ({seed.best_training_job})", file=out)
    print(f"  best hyperparameters: {json.dumps(seed.best_hyperparameters, sort_keys=True)}", file=out)
    print(f"  trials: {seed.trials_by_status}", file=out)
    for line in seed_table(seed):
        print(line, file=out)


def _print_jobs(acts: list[ActResult], out: TextIO) -> None:
    print("\n=== Every job ===", file=out)
    print(f"  {'job':<20} {'status':<10} {'trials':>6} {'best AUC':>9} {'cost':>10}  decisions", file=out)
    for act in acts:
        for name, summary in act.summaries.items():
            best = summary.objective.value if summary.objective and summary.objective.value is not None else None
            made = ", ".join(f"{d['rule']}:{d['action']}" for d in act.decisions.get(name, [])) or "-"
            best_text = f"{best:.4f}" if best is not None else "-"
            print(
                f"  {name:<20} {summary.status:<10} {summary.trials_total:>6} {best_text:>9}"
                f" {_money(summary.cost.cost_usd):>10}  {made}",
                file=out,
            )


def _print_rows(acts: list[ActResult], seed: JobSummary, out: TextIO) -> None:
    print("\n=== DynamoDB: decision rows ===", file=out)
    for act in acts:
        for rows in act.decisions.values():
            for row in rows:
                shown = {k: row[k] for k in ("pk", "sk", "rule", "mode", "action", "at", "message") if k in row}
                print("  " + json.dumps(shown, default=str), file=out)
    print(f"\n=== DynamoDB: JOB#{SEED_JOB} / SUMMARY ===", file=out)
    print(seed.model_dump_json(indent=2), file=out)


def _print_sns(acts: list[ActResult], out: TextIO) -> None:
    print("\n=== SNS reports (read back from a queue subscribed to the topic) ===", file=out)
    for act in acts:
        for message in act.sns:
            attributes = {k: v["Value"] for k, v in message.get("MessageAttributes", {}).items()}
            print(f"  - {message.get('Subject')}  {attributes}", file=out)
    for act in acts:
        for message in act.sns:
            if "STOPPED" in str(message.get("Subject")) or SEED_JOB in str(message.get("Subject")):
                print(f"\n  Subject: {message.get('Subject')}\n", file=out)
                print("\n".join("    " + line for line in message["Message"].splitlines()), file=out)


def _print_slack(slack: SlackWebhookServer, out: TextIO) -> None:
    print(f"\n=== Slack (local webhook on 127.0.0.1): {len(slack.messages)} messages ===", file=out)
    for message in slack.messages:
        print(f"  - {message.get('text')}", file=out)
    stopped = next((m for m in slack.messages if "STOPPED" in str(m.get("text"))), None)
    if stopped is not None:
        print("\n  Block Kit of the first stop report:", file=out)
        print("\n".join("    " + line for line in json.dumps(stopped, indent=2).splitlines()), file=out)
