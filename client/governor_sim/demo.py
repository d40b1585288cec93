"""The offline demo: a governed SageMaker account on the AMT stand-in, in under a minute.

    python -m governor_sim.demo          (or: make demo)

Act 1, policy in ``enforce`` mode:
  * the seed's tuning job: built-in XGBoost, 3 x ml.m5.xlarge per trial, Hyperband (MinResource 1,
    MaxResource 30), 30 trials, 4 in parallel, objective validation:auc — it completes, and its summary
    gives the best AUC, billable minutes against the same trials without early stopping, and the wall
    clock against a sequential estimate;
  * two teams on ml.p3.2xlarge with an applied Service Quota of 8: vision runs 4, then speech asks for
    3 x 2 = 6 — a concurrency breach, and speech's job is stopped on arrival;
  * an nlp job tagged governance:budget-usd=50 on 8 x ml.p3.8xlarge — stopped at the trial that spends $50.
Act 2, the same budget guard in ``monitor`` mode: another nlp job goes over budget, is reported as
"would stop", and runs to the end.
Every event SageMaker would emit goes through EventBridge's delivery to the real Lambda handlers,
in-process, against the governor's table in memory (``--store moto``, or TUNING_GOVERNOR_STORE=moto:
the DynamoDB adapter on moto's DynamoDB) and moto (SNS, Secrets Manager); Slack is a local webhook on
127.0.0.1. Nothing leaves the machine. The final table rows (as DynamoDB holds them) and the SNS and
Slack messages are printed last.
"""

from __future__ import annotations

import os

# Fake credentials; Powertools reads its settings when the handlers are imported (just below).
for _key, _value in {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "POWERTOOLS_TRACE_DISABLED": "true",
}.items():
    os.environ.setdefault(_key, _value)

import argparse
import json
import math
import sys
import warnings
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, TextIO

from moto import mock_aws

from governor_sim.amt import DefaultTrialBehaviour
from governor_sim.offline import STORE_KINDS, store_kind
from governor_sim.report import write_report
from governor_sim.scenarios import SeedWorkload, seed_tuning_request
from governor_sim.simulation import CreateTuningJob, Progress, Scenario, Simulation, SimulationResult
from governor_sim.slack_server import SlackWebhookServer
from tuning_governor.models.records import JobSummary
from tuning_governor.policy import parse_policy

START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
SEED_JOB = "xgb-churn-hb"
P3_2X, P3_8X = "ml.p3.2xlarge", "ml.p3.8xlarge"

ENFORCE = """
mode: enforce
team_tag: team
defaults:
  max_runtime_hours: 48
"""
MONITOR = ENFORCE.replace("mode: enforce", "mode: monitor")

ACT_ONE = Scenario(
    actions=[
        CreateTuningJob(0, seed_tuning_request(SEED_JOB)),
        CreateTuningJob(
            120,
            seed_tuning_request(
                "vision-resnet-hpo", team="vision", owner="li@example.com",
                instance_type=P3_2X, instance_count=1, max_parallel=4, max_jobs=12,
            ),
        ),
        CreateTuningJob(
            600,
            seed_tuning_request(
                "speech-asr-hpo", team="speech", owner="sam@example.com",
                instance_type=P3_2X, instance_count=2, max_parallel=3, max_jobs=12,
            ),
        ),
        CreateTuningJob(
            900,
            seed_tuning_request(
                "nlp-bert-hpo", team="nlp", owner="kim@example.com", instance_type=P3_8X,
                instance_count=8, max_parallel=2, max_jobs=50, extra_tags={"governance:budget-usd": "50"},
            ),
        ),
    ]
)  # fmt: skip
ACT_TWO = Scenario(
    actions=[
        CreateTuningJob(
            0,
            seed_tuning_request(
                "nlp-bert-pilot", team="nlp", owner="kim@example.com", instance_type=P3_8X,
                instance_count=8, max_parallel=2, max_jobs=50, extra_tags={"governance:budget-usd": "50"},
            ),
        )
    ]
)  # fmt: skip


@dataclass
class ActResult:
    title: str
    mode: str
    result: SimulationResult
    summaries: dict[str, JobSummary]
    decisions: dict[str, list[dict[str, Any]]]
    sns: list[dict[str, Any]]
    items: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    report: Path | None = None
    """The act's HTML report (``tuning-governor report`` of the act's account), when one was asked for."""


def _money(value: Decimal | None) -> str:
    return "unpriced" if value is None else f"${value:,.2f}"


def _minutes(seconds: int | Decimal | None) -> str:
    return "n/a" if seconds is None else f"{int(seconds) / 60:,.1f} min"


def _clock(moment: datetime) -> str:
    return f"+{(moment - START).total_seconds() / 60:5.1f} min"


def _progress_printer(out: TextIO) -> Any:
    def show(p: Progress) -> None:
        bar = "#" * min(30, p.trial_events_delivered // 10)
        state = "done" if p.done else f"{p.pending_deliveries} in flight"
        print(
            f"  [{_clock(p.virtual_time)}] {p.deliveries:4d} events delivered"
            f" ({p.trial_events_delivered:4d} trial events) {bar:<30} {state}",
            file=out,
        )

    return show


def _timeline(result: SimulationResult) -> list[str]:
    """The events worth reading: tuning-job status changes, decisions, finalisations."""
    lines: list[str] = []
    for o in result.outcomes:
        payload = o.result
        job = payload.get("job")
        if o.function == "tuning-events" and payload.get("outcome") in {"recorded", "finalised"}:
            status = payload.get("status")
            extra = ""
            if payload.get("demand"):
                extra = " demand " + ", ".join(f"{n} x {t}" for t, n in payload["demand"].items())
            lines.append(f"  {_clock(o.delivered_at)}  {job:<20} {status}{extra}")
        for decision in payload.get("decisions") or []:
            if decision["action"] == "already-decided":
                continue
            lines.append(
                f"  {_clock(o.delivered_at)}  {job:<20} >> {decision['rule']} {decision['verdict']}:"
                f" {decision['action']} ({decision['mode']})"
            )
    return lines


def _run_act(
    title: str,
    scenario: Scenario,
    policy_text: str,
    *,
    slack_url: str,
    seed: int,
    out: TextIO,
    report_dir: Path | None = None,
    table: str | None = None,
) -> ActResult:
    policy = parse_policy(policy_text, f"demo {title}")
    print(f"\n=== {title} (policy mode: {policy.mode}) ===", file=out)
    with (
        mock_aws(),
        Simulation(
            scenario,
            seed=seed,
            start=START,
            slack_url=slack_url,
            environment={"policy": policy, "store": store_kind(table)},
            on_progress=_progress_printer(out),
            progress_every_s=900,
            quiet_handlers=True,
        ) as sim,
    ):
        # The account's applied Service Quotas, as Service Quotas would answer them.
        sim.amt.set_applied_quota(P3_2X, 8)
        sim.amt.set_applied_quota(P3_8X, 16)
        result = sim.run()
        store = sim.env.services.store
        summaries = {}
        decisions = {}
        items = {}
        for name in scenario.tuning_jobs:
            summary = store.get_summary(name)
            if summary is not None:
                summaries[name] = summary
            decisions[name] = store.decisions(name)
            items[name] = store.items(name)
        sns = sim.env.sns_messages()
        page = (
            write_report(store, report_dir, title=f"Tuning Governor demo: {title} (policy mode {policy.mode})")
            if report_dir is not None
            else None
        )
    print("\n  Timeline (virtual minutes since 09:00 UTC):", file=out)
    for line in _timeline(result):
        print(line, file=out)
    return ActResult(title, policy.mode, result, summaries, decisions, sns, items, page)


def _seed_table(seed: JobSummary) -> list[str]:
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


def _print_results(acts: list[ActResult], slack: SlackWebhookServer, out: TextIO) -> None:
    seed = acts[0].summaries[SEED_JOB]
    print(f"\n=== The seed job: {SEED_JOB} ===", file=out)
    assert seed.objective is not None
    print(f"  best {seed.objective.name}: {seed.objective.value} ({seed.best_training_job})", file=out)
    print(f"  best hyperparameters: {json.dumps(seed.best_hyperparameters, sort_keys=True)}", file=out)
    print(f"  trials: {seed.trials_by_status}", file=out)
    for line in _seed_table(seed):
        print(line, file=out)

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

    print("\n=== DynamoDB: decision rows ===", file=out)
    for act in acts:
        for rows in act.decisions.values():
            for row in rows:
                shown = {k: row[k] for k in ("pk", "sk", "rule", "mode", "action", "at", "message") if k in row}
                print("  " + json.dumps(shown, default=str), file=out)
    print(f"\n=== DynamoDB: JOB#{SEED_JOB} / SUMMARY ===", file=out)
    print(seed.model_dump_json(indent=2), file=out)

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
    print(f"\n=== Slack (local webhook on 127.0.0.1): {len(slack.messages)} messages ===", file=out)
    for message in slack.messages:
        print(f"  - {message.get('text')}", file=out)
    stopped = next((m for m in slack.messages if "STOPPED" in str(m.get("text"))), None)
    if stopped is not None:
        print("\n  Block Kit of the first stop report:", file=out)
        print("\n".join("    " + line for line in json.dumps(stopped, indent=2).splitlines()), file=out)


def run(
    out: TextIO = sys.stdout, seed: int = 7, report_dir: Path | None = None, store: str | None = None
) -> dict[str, Any]:
    """Run both acts; print the timeline and results to ``out``; return what was printed, as data.
    With ``report_dir``, each act's account is also written as an HTML report (one folder per act).
    ``store``: ``memory`` or ``moto`` (default ``$TUNING_GOVERNOR_STORE``, else ``memory``)."""
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    print("Tuning Governor offline demo: a governed SageMaker account on a virtual clock", file=out)
    with SlackWebhookServer() as slack:
        # The seed job's trials are timed as the seed reported them; the other jobs keep the stand-in's.
        act_one = replace(ACT_ONE, behaviour=SeedWorkload(DefaultTrialBehaviour(seed=seed)))
        acts = [
            _run_act(
                "Act 1: enforce",
                act_one,
                ENFORCE,
                slack_url=slack.url,
                seed=seed,
                out=out,
                report_dir=report_dir / "act-1-enforce" if report_dir else None,
                table=store,
            ),
            _run_act(
                "Act 2: the same guard in monitor mode",
                ACT_TWO,
                MONITOR,
                slack_url=slack.url,
                seed=seed,
                out=out,
                report_dir=report_dir / "act-2-monitor" if report_dir else None,
                table=store,
            ),
        ]
        _print_results(acts, slack, out)
        for act in acts:
            if act.report is not None:
                print(f"\nHTML report of {act.title}: {act.report}", file=out)
        return {
            "summaries": {name: s for act in acts for name, s in act.summaries.items()},
            "decisions": {name: d for act in acts for name, d in act.decisions.items()},
            "sns": [m for act in acts for m in act.sns],
            "slack": list(slack.messages),
            "errors": sum(act.result.errors for act in acts),
            "reports": [act.report for act in acts if act.report is not None],
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m governor_sim.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=7, help="seed of the simulated trials (default 7)")
    parser.add_argument(
        "--report-dir",
        type=Path,
        default=Path("demo-report"),
        help="where the HTML report of each act's account is written (default demo-report/)",
    )
    parser.add_argument(
        "--store",
        choices=STORE_KINDS,
        default=None,
        help="the governor's table: memory (default, or $TUNING_GOVERNOR_STORE) or moto (DynamoDB on moto)",
    )
    args = parser.parse_args(argv)
    data = run(seed=args.seed, report_dir=args.report_dir.resolve(), store=args.store)
    return 1 if data["errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
