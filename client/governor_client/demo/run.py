"""The offline demo: a governed SageMaker account on the AMT stand-in, in under a minute.

    python -m governor_client.demo.run          (or: make demo)

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
Act 3, hold, don't kill (docs/explanation/queue.md): Act 1's vision and speech jobs on the same quota of 8, but speech
submits its job to the governor's queue (SubmitTuningJob) instead of creating it: it waits (reported
with its position), is created when vision's job ends and frees the quota, and runs to completion.
Act 4, an organisation (``demo_org``): the hub governs three member accounts in two regions on moto;
team vision's month counts across its two accounts and stops the job that crosses it, in its own account
and region; the third member's role refuses the hub: its events fail (retried), nothing is acted on.
Every event SageMaker would emit goes through EventBridge's delivery to the real Lambda handlers,
in-process, against the governor's table in memory (``--store moto``, or TUNING_GOVERNOR_STORE=moto:
the DynamoDB adapter on moto's DynamoDB) and moto (SNS, Secrets Manager); Slack is a local webhook on
127.0.0.1. Nothing leaves the machine. The final table rows (as DynamoDB holds them) and the SNS and
Slack messages are printed last.
"""

from __future__ import annotations

# Fake credentials; Powertools reads its settings when the handlers are imported (just below).
from governor_client.offline.env_vars import use_offline_environment

use_offline_environment()

import argparse
import sys
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from moto import mock_aws

from governor_client.amt import DefaultTrialBehaviour
from governor_client.demo import acts as acts_
from governor_client.demo import org as demo_org
from governor_client.demo.acts import ACT_ONE, ENFORCE, MONITOR, P3_2X, P3_8X, START, ActResult
from governor_client.demo.arguments import DESCRIPTION, add_arguments
from governor_client.demo.output import print_results, queue_lines, timeline, write_raw
from governor_client.demo.progress import act_progress
from governor_client.offline.environment import store_kind
from governor_client.offline.slack_server import SlackWebhookServer
from governor_client.report.page import applied_limits, write_report
from governor_client.simulator.scenarios import SeedWorkload
from governor_client.simulator.simulation import Scenario, Simulation
from tuning_governor.models.records import JobSummary
from tuning_governor.policy import Policy, parse_policy


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
        act_progress(title, scenario, out) as progress,
        Simulation(
            scenario,
            seed=seed,
            start=START,
            slack_url=slack_url,
            environment={"policy": policy, "store": store_kind(table)},
            on_progress=progress,
            progress_every_s=300,
            quiet_handlers=True,
        ) as sim,
    ):
        progress.sagemaker = sim.env.sagemaker
        # The account's applied Service Quotas, as Service Quotas would answer them.
        sim.amt.set_applied_quota(P3_2X, 8)
        sim.amt.set_applied_quota(P3_8X, 16)
        result = sim.run()
        queued = sorted({o["job_name"] for o in sim.queue.outcomes if o.get("outcome") == "queued"})
        requests = [r for name in queued if (r := sim.env.services.store.get_request(name)) is not None]
        summaries, decisions, items = _read_jobs(sim, scenario.tuning_jobs + queued)
        sns = sim.env.sns_messages()
        page = _page(sim, report_dir, f"Tuning Governor demo: {title} (policy mode {policy.mode})", policy, requests)
    print("\n  Timeline (virtual minutes since 09:00 UTC):", file=out)
    for line in timeline(result):
        print(line, file=out)
    act = ActResult(title, policy.mode, result, summaries, decisions, sns, items, page, requests)
    for line in queue_lines(act):
        print(line, file=out)
    return act


def _page(sim: Simulation, report_dir: Path | None, title: str, policy: Policy, requests: list[Any]) -> Path | None:
    """The act's page, with the account's applied limits over the whole window and the queue's waits."""
    if report_dir is None:
        return None
    limits = applied_limits(policy, sim.env.services.quotas, (P3_2X, P3_8X, "ml.m5.xlarge"))
    return write_report(sim.env.services.store, report_dir, title=title, limits=limits, queue=requests)


def _read_jobs(
    sim: Simulation, names: list[str]
) -> tuple[dict[str, JobSummary], dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]]:
    """Each tuning job's summary (if finalised), decision rows and table items, as the store holds them."""
    store = sim.env.services.store
    summaries = {}
    decisions = {}
    items = {}
    for name in names:
        summary = store.get_summary(name)
        if summary is not None:
            summaries[name] = summary
        decisions[name] = store.decisions(name)
        items[name] = store.items(name)
    return summaries, decisions, items


def run(
    out: TextIO = sys.stdout,
    seed: int = 7,
    report_dir: Path | None = None,
    store: str | None = None,
    raw_json: Path | None = None,
) -> dict[str, Any]:
    """Run the three acts; print the timeline and a summary of the results to ``out``; return the results as data.
    With ``report_dir``, each act's account is also written as an HTML report (one folder per act), and
    the raw data (decision rows, summaries, SNS and Slack messages) as ``demo-data.json`` there, unless
    ``raw_json`` names another file. ``store``: ``memory`` or ``moto`` (default ``$TUNING_GOVERNOR_STORE``,
    else ``memory``)."""
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    print("Tuning Governor offline demo: a governed SageMaker account on a virtual clock", file=out)
    with SlackWebhookServer() as slack:
        # The seed job's trials are timed as the seed reported them; the other jobs keep the stand-in's.
        act_one = replace(ACT_ONE, behaviour=SeedWorkload(DefaultTrialBehaviour(seed=seed)))
        plays = (
            ("Act 1: enforce", act_one, ENFORCE, "act-1-enforce"),
            ("Act 2: the same guard in monitor mode", acts_.ACT_TWO, MONITOR, "act-2-monitor"),
            (
                "Act 3: hold, don't kill: the same speech job submitted to the queue",
                acts_.ACT_THREE,
                acts_.QUEUE,
                "act-3-queue",
            ),
        )
        acts = [
            _run_act(
                title,
                scenario,
                policy,
                slack_url=slack.url,
                seed=seed,
                out=out,
                report_dir=report_dir / folder if report_dir else None,
                table=store,
            )
            for title, scenario, policy, folder in plays
        ]
        print_results(acts, slack, out)
        data = _data(acts, slack)
        org_dir = report_dir / "act-4-organisation" if report_dir else None
        data["organisation"] = demo_org.play(out, START, seed, org_dir)
        data["errors"] += len(data["organisation"]["errors"])
        raw = raw_json or (report_dir / "demo-data.json" if report_dir is not None else None)
        _print_files(acts, write_raw(data, raw) if raw is not None else None, out)
        return data


def _data(acts: list[ActResult], slack: SlackWebhookServer) -> dict[str, Any]:
    """The acts' results as data: what ``run`` returns and ``--json`` writes."""
    return {
        "summaries": {name: s for act in acts for name, s in act.summaries.items()},
        "decisions": {name: d for act in acts for name, d in act.decisions.items()},
        "sns": [m for act in acts for m in act.sns],
        "slack": list(slack.messages),
        "errors": sum(act.result.errors for act in acts),
        "reports": [act.report for act in acts if act.report is not None],
        "queue": [r.model_dump(mode="json") for act in acts for r in act.queue],
    }


def _print_files(acts: list[ActResult], raw: Path | None, out: TextIO) -> None:
    print("", file=out)
    for act in acts:
        if act.report is not None:
            print(f"HTML report of {act.title}: {act.report}", file=out)
    if raw is not None:
        print(f"Raw data (every decision row, the summaries, the SNS and Slack messages as sent): {raw}", file=out)


def run_with_args(args: argparse.Namespace) -> int:
    """Run the demo as ``tuning-governor demo`` parsed it: 0, or 1 when a handler failed on the way."""
    data = run(seed=args.seed, report_dir=args.report_dir.resolve(), store=args.store, raw_json=args.json)
    return 1 if data["errors"] else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m governor_client.demo.run", description=DESCRIPTION)
    add_arguments(parser)
    return run_with_args(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
