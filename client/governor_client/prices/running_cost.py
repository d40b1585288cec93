"""What running Tuning Governor costs per month, computed from stated usage and stated prices.

    .venv/bin/python -m governor_client.prices.running_cost        # the README table (1k / 10k / 100k trials a month)
    .venv/bin/python -m governor_client.prices.running_cost 25000  # any other volumes

Usage per trial and per month is an assumption written here (``Usage``), from what the handlers do
(see README "How it works" and benchmarks/RESULTS.md); prices are us-east-1 list prices (``PRICES``,
each with its source), without the free tier, so the figures are an upper bound for a new account.
The training instances the governor watches are not in it: this is the governor's own bill.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

MILLION = Decimal(1_000_000)


@dataclass(frozen=True)
class Price:
    usd: Decimal
    unit: str
    source: str


#: us-east-1 list prices (no free tier), as published on each service's pricing page.
PRICES: dict[str, Price] = {
    "lambda_gb_second": Price(
        Decimal("0.0000133334"), "GB-second, arm64", "aws.amazon.com/lambda/pricing (Arm, first 7.5 billion GB-s)"
    ),
    "lambda_request": Price(Decimal("0.20") / MILLION, "request", "aws.amazon.com/lambda/pricing"),
    "dynamodb_write": Price(
        Decimal("0.625") / MILLION, "write request unit", "aws.amazon.com/dynamodb/pricing/on-demand (Nov 2024)"
    ),
    "dynamodb_read": Price(
        Decimal("0.125") / MILLION, "read request unit", "aws.amazon.com/dynamodb/pricing/on-demand (Nov 2024)"
    ),
    "dynamodb_storage": Price(Decimal("0.25"), "GB-month", "aws.amazon.com/dynamodb/pricing/on-demand"),
    "xray_trace": Price(Decimal("5.00") / MILLION, "trace recorded", "aws.amazon.com/xray/pricing"),
    "scheduler_invocation": Price(Decimal("1.00") / MILLION, "invocation", "aws.amazon.com/eventbridge/pricing"),
    "sns_publish": Price(Decimal("0.50") / MILLION, "publish", "aws.amazon.com/sns/pricing"),
    "logs_ingest": Price(Decimal("0.50"), "GB ingested", "aws.amazon.com/cloudwatch/pricing"),
    "secret": Price(Decimal("0.40"), "secret-month", "aws.amazon.com/secrets-manager/pricing"),
    "alarm": Price(Decimal("0.10"), "standard alarm-month", "aws.amazon.com/cloudwatch/pricing"),
    "custom_metric": Price(Decimal("0.30"), "metric-month (EMF)", "aws.amazon.com/cloudwatch/pricing"),
    "dashboard": Price(
        Decimal("3.00"), "dashboard-month (beyond the account's first 3)", "aws.amazon.com/cloudwatch/pricing"
    ),
}


@dataclass(frozen=True)
class Usage:
    """What the governor does, per trial and per month (assumptions; change them to your account's)."""

    events_per_trial: int = 5
    """Training-job state changes per trial (InProgress status changes + the terminal one)."""
    trials_per_job: int = 50
    tuning_events_per_job: int = 3
    memory_gb: Decimal = Decimal("0.25")
    """MemorySize 256 in template.yaml."""
    event_seconds: Decimal = Decimal("0.15")
    """Billed duration of a warm event invocation (a few DynamoDB calls, sometimes one SageMaker call)."""
    cold_start_share: Decimal = Decimal("0.02")
    cold_start_seconds: Decimal = Decimal("1.5")
    writes_per_trial: int = 12
    """Write request units per trial over its events (transactions count 2 per item)."""
    reads_per_trial: int = 10
    item_kb_per_trial: Decimal = Decimal("2")
    """Stored per trial (trial record, its share of the job and decision rows), before any TTL."""
    sweeps_per_month: int = 8640
    """rate(5 minutes): 12 an hour, 720 hours."""
    sweep_seconds: Decimal = Decimal("1.0")
    sweep_reads: int = 6
    sweep_writes: int = 2
    budget_checks_per_job: int = 2
    check_wait_seconds: Decimal = Decimal("60")
    """A check waits for its second: Scheduler invokes it in the minute before (30-118 s, about 60)."""
    reports_per_job: int = 2
    """Job summary + at most one decision, per channel (SNS counted; Slack is a webhook, free)."""
    log_kb_per_invocation: Decimal = Decimal("2")
    price_refresh_runs: int = 30
    price_refresh_seconds: Decimal = Decimal("60")
    alarms: int = 22
    """The Operations section's alarms in template.yaml."""
    custom_metrics: int = 35
    """Distinct EMF metric/dimension pairs the handlers emit (about 25, plus one per team and two per rule)."""
    dashboards: int = 1
    secrets: int = 1
    """The queue's name key (its reads: one per consumer cold start, within the free 10,000 calls)."""


def monthly_cost(trials: int, usage: Usage = Usage()) -> dict[str, Decimal]:
    """USD per month by line, for ``trials`` finished trials a month."""
    jobs = max(1, -(-trials // usage.trials_per_job))
    event_invocations = trials * usage.events_per_trial + jobs * usage.tuning_events_per_job
    check_invocations = jobs * usage.budget_checks_per_job
    invocations = event_invocations + check_invocations + usage.sweeps_per_month + usage.price_refresh_runs
    seconds = (
        (event_invocations + check_invocations) * usage.event_seconds
        + (event_invocations + check_invocations) * usage.cold_start_share * usage.cold_start_seconds
        + check_invocations * usage.check_wait_seconds
        + usage.sweeps_per_month * usage.sweep_seconds
        + usage.price_refresh_runs * usage.price_refresh_seconds
    )
    p = {name: price.usd for name, price in PRICES.items()}
    return {
        "Lambda (requests + GB-seconds)": invocations * p["lambda_request"]
        + seconds * usage.memory_gb * p["lambda_gb_second"],
        "DynamoDB (on-demand reads, writes, storage)": (
            (trials * usage.writes_per_trial + usage.sweeps_per_month * usage.sweep_writes) * p["dynamodb_write"]
            + (trials * usage.reads_per_trial + usage.sweeps_per_month * usage.sweep_reads) * p["dynamodb_read"]
            + trials * usage.item_kb_per_trial / Decimal(1024 * 1024) * p["dynamodb_storage"]
        ),
        "X-Ray (one trace per invocation)": invocations * p["xray_trace"],
        "EventBridge Scheduler (budget checks)": check_invocations * p["scheduler_invocation"],
        "SNS (reports)": jobs * usage.reports_per_job * p["sns_publish"],
        "Secrets Manager (the queue's name key)": usage.secrets * p["secret"],
        "CloudWatch (logs, alarms, metrics, dashboard)": (
            invocations * usage.log_kb_per_invocation / Decimal(1024 * 1024) * p["logs_ingest"]
            + usage.alarms * p["alarm"]
            + usage.custom_metrics * p["custom_metric"]
            + usage.dashboards * p["dashboard"]
        ),
    }


def money(value: Decimal) -> str:
    if 0 < value < Decimal("0.005"):
        return "< $0.01"
    return f"${value.quantize(Decimal('0.01'), ROUND_HALF_UP):,.2f}"


def table(volumes: list[int]) -> str:
    costs = [monthly_cost(v) for v in volumes]
    header = "| per month | " + " | ".join(f"{v:,} trials" for v in volumes) + " |"
    rows = [header, "|---|" + "---:|" * len(volumes)]
    for name in costs[0]:
        rows.append(f"| {name} | " + " | ".join(money(c[name]) for c in costs) + " |")
    rows.append("| **total** | " + " | ".join(f"**{money(sum(c.values(), Decimal(0)))}**" for c in costs) + " |")
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    volumes = [int(a) for a in argv] or [1_000, 10_000, 100_000]
    print(table(volumes))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
