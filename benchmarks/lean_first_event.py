"""Benchmark: a handler's cold start up to the end of its first event (companion of benchmarks/lean.py).

    .venv/bin/python benchmarks/lean_first_event.py [--processes 9]

lean.py's cold init stops before the first event: a module imported on first use, or a pydantic model
whose schema is built on its first validation (``defer_build``), is not in it. This one goes on to the
first event, so moving cost from the import to the first event does not show as a gain.

Each fresh process imports moto, starts ``mock_aws`` and creates the governor's table and the policy
parameter (untimed: moto, which answers no applied Service Quotas, loads boto3, botocore and much of the standard library). Then, timed from that
point: the handler's import, its services and its first event (a sample from events/, the schedule for
the sweep and the queue, an unknown job's budget check). Medians over ``--processes`` processes per
handler, interleaved. The figures are absolute
(no floor: moto has loaded what the floor would); compare them before and after a change, on the same
machine in the same session.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from lean import _env

ROOT = Path(__file__).resolve().parents[1]

#: Handler module, the event it gets first (a sample file, or an inline JSON literal).
FIRST_EVENTS = {
    "tuning_events": ("tuning_events", "events/tuning-inprogress.json"),
    "training_events": ("training_events", "events/training-inprogress.json"),
    "sweep": ("sweep", '{"source": "aws.scheduler", "detail-type": "Scheduled Event", "detail": {}}'),
    # A check for a job SageMaker does not know (moto has none): read, policy loaded, Describe, dropped.
    "budget_check": ("budget_check", '{"budget_check": {"job": "xgb-churn-hb-20261130"}}'),
    # The queue's schedule: admission runs over an empty queue (its queue services are made here).
    "queue_submissions": (
        "queue_submissions",
        '{"source": "aws.scheduler", "detail-type": "Scheduled Event", "detail": {}}',
    ),
}
CHILD = """
import json, time
from pathlib import Path
from moto import mock_aws
import boto3
from moto.servicequotas.responses import ServiceQuotasResponse
# moto has no ListServiceQuotas: no applied quotas (the defaults then apply, as for a new account).
ServiceQuotasResponse.list_service_quotas = lambda self: json.dumps({{"Quotas": []}})
mock = mock_aws()
mock.start()
dynamodb = boto3.client("dynamodb")
dynamodb.create_table(
    TableName="tuning-governor", BillingMode="PAY_PER_REQUEST",
    AttributeDefinitions=[{{"AttributeName": n, "AttributeType": "S"}} for n in ("pk", "sk", "gsi1pk", "gsi1sk")],
    KeySchema=[{{"AttributeName": "pk", "KeyType": "HASH"}}, {{"AttributeName": "sk", "KeyType": "RANGE"}}],
    GlobalSecondaryIndexes=[{{"IndexName": "gsi1", "Projection": {{"ProjectionType": "ALL"}}, "KeySchema": [
        {{"AttributeName": "gsi1pk", "KeyType": "HASH"}}, {{"AttributeName": "gsi1sk", "KeyType": "RANGE"}}]}}],
)
boto3.client("ssm").put_parameter(Name="/tuning-governor/policy", Type="String",
                                  Value=Path("policy.example.yaml").read_text())
event = {event}
class Context:
    function_name = "{module}"
    function_version = "$LATEST"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:{module}"
    aws_request_id = "00000000-0000-0000-0000-000000000001"
    log_group_name = log_stream_name = "bench"
    def get_remaining_time_in_millis(self):
        return 300_000
start, cpu = time.perf_counter(), time.process_time()
import {module} as m
m.default_services()
init, init_cpu = time.perf_counter() - start, time.process_time() - cpu
result = m.handler(event, Context())
total, total_cpu = time.perf_counter() - start, time.process_time() - cpu
print(json.dumps({{"init": init, "total": total, "init_cpu": init_cpu, "total_cpu": total_cpu,
                  "outcome": str(result.get("outcome"))}}))
"""


def _child(module: str, event: str) -> dict[str, float | str]:
    literal = f"json.loads(Path({event!r}).read_text())" if event.endswith(".json") else f"json.loads({event!r})"
    env = {**_env(), "POWERTOOLS_LOG_LEVEL": "WARNING", "POWERTOOLS_METRICS_DISABLED": "true"}
    done = subprocess.run(  # noqa: S603 - this interpreter, our own snippet
        [sys.executable, "-c", CHILD.format(module=module, event=literal)],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )
    if done.returncode != 0:
        raise SystemExit(f"{module}: {done.stderr[-3000:]}")
    result: dict[str, float | str] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=9)
    args = parser.parse_args(argv)
    runs: dict[str, list[dict[str, float | str]]] = {name: [] for name in FIRST_EVENTS}
    for _ in range(args.processes):
        for name, (module, event) in FIRST_EVENTS.items():
            runs[name].append(_child(module, event))
    print("medians, ms: wall (CPU time of the process, steadier on a shared machine)")
    print("handler          init            init+first event  first event      outcome")
    for name, measured in runs.items():
        cells = []
        for suffix in ("", "_cpu"):
            init = statistics.median(float(r["init" + suffix]) for r in measured)
            total = statistics.median(float(r["total" + suffix]) for r in measured)
            cells.append((init, total, total - init))
        (wi, wt, we), (ci, ct, ce) = cells
        outcomes = ", ".join(sorted({str(r["outcome"]) for r in measured}))
        print(
            f"{name:<16} {wi * 1000:5.0f} ({ci * 1000:4.0f})    {wt * 1000:5.0f} ({ct * 1000:4.0f})"
            f"      {we * 1000:5.0f} ({ce * 1000:4.0f})     {outcomes}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
