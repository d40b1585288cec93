"""The offline demo: the seed's tuning job on the AMT stand-in, governed in-process.

    python -m governor_sim.demo          (or: make demo)

Built-in XGBoost, 3 x ml.m5.xlarge per trial, Hyperband (MinResource 1, MaxResource 30), 30 trials,
4 in parallel, objective validation:auc. SageMaker's events are delivered to the real handlers as
they are emitted; the DynamoDB summary, the SNS report and the Slack message are printed at the end
(Slack is a local webhook server on 127.0.0.1). Nothing leaves the machine.
"""

from __future__ import annotations

import os

# Fake credentials, and quiet handlers: the demo prints its own timeline, and the handlers' JSON logs
# and EMF metrics would drown it. Powertools reads these when the handlers are imported, just below.
for _key, _value in {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "POWERTOOLS_LOG_LEVEL": "CRITICAL",
    "POWERTOOLS_METRICS_DISABLED": "true",
    "POWERTOOLS_TRACE_DISABLED": "true",
}.items():
    os.environ.setdefault(_key, _value)

import argparse
import contextlib
import io
import json
import sys
import warnings
from datetime import UTC, datetime
from typing import Any, TextIO

from moto import mock_aws

from governor_sim.amt import AmtStandIn, VirtualClock
from governor_sim.offline import build_environment
from governor_sim.runner import deliver_event
from governor_sim.scenarios import seed_tuning_request
from governor_sim.slack_server import SlackWebhookServer

JOB = "xgb-churn-hb"
START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def _status(event: dict[str, Any]) -> str:
    detail = event["detail"]
    return str(detail.get("HyperParameterTuningJobStatus") or detail.get("TrainingJobStatus"))


def _name(event: dict[str, Any]) -> str:
    detail = event["detail"]
    return str(detail.get("HyperParameterTuningJobName") or detail.get("TrainingJobName"))


def run(out: TextIO = sys.stdout, seed: int = 7) -> dict[str, Any]:
    """Run the scenario; print the timeline and results to ``out``; return what was printed as data."""
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    with mock_aws(), SlackWebhookServer() as slack:
        clock = VirtualClock(START)
        with AmtStandIn(clock=clock, seed=seed) as amt:
            env = build_environment(slack_url=slack.url, clock=clock.now)
            print(f"Tuning Governor offline demo (virtual clock starts {START:%Y-%m-%d %H:%M} UTC)\n", file=out)
            env.sagemaker.create_hyper_parameter_tuning_job(**seed_tuning_request(JOB))
            print(f"{'time':>8}  {'event':<36} {'status':<11} handler outcome", file=out)
            finished = 0
            for _ in range(48 * 60):
                amt.advance(60)
                for event in amt.drain_events():
                    with contextlib.redirect_stdout(io.StringIO()):  # the handlers' EMF metric lines
                        outcome = deliver_event(event, env.services).outcome
                    status = _status(event)
                    is_tuning = "HyperParameterTuningJobStatus" in event["detail"]
                    if is_tuning or status != "InProgress":
                        elapsed = clock.now() - START
                        label = _name(event) if is_tuning else _name(event).removeprefix(JOB + "-")
                        print(
                            f"{str(elapsed).split('.')[0]:>8}  {label:<36} {status:<11} {outcome['outcome']}",
                            file=out,
                        )
                    if not is_tuning and status in {"Completed", "Stopped", "Failed"}:
                        finished += 1
                if amt.idle():
                    break
            summary = env.services.store.get_summary(JOB)
            if summary is None:
                raise SystemExit("demo failed: no summary was written")
            sns = env.sns_messages()
            print("\n== DynamoDB: JOB#xgb-churn-hb / SUMMARY ==", file=out)
            print(summary.model_dump_json(indent=2), file=out)
            print("\n== SNS report (as delivered to a subscribed queue) ==", file=out)
            for message in sns:
                attributes = {k: v["Value"] for k, v in message.get("MessageAttributes", {}).items()}
                print(f"Subject: {message.get('Subject')}\nAttributes: {attributes}\n\n{message['Message']}", file=out)
            print(f"\n== Slack (local webhook at 127.0.0.1, {len(slack.messages)} message) ==", file=out)
            for message in slack.messages:
                print(json.dumps(message, indent=2), file=out)
            return {
                "summary": json.loads(summary.model_dump_json()),
                "sns": sns,
                "slack": slack.messages,
                "trials_finished": finished,
            }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m governor_sim.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=7, help="seed of the simulated trials (default 7)")
    args = parser.parse_args(argv)
    run(seed=args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
