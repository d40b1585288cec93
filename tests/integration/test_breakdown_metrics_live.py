"""The dashboard's breakdowns as the handlers emit them: spend once per finished job on its team, decisions
and stops on the rule that made them."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from decimal import Decimal
from typing import Any

import boto3
import pytest
from moto import mock_aws

from governor_client.amt import AmtStandIn, VirtualClock
from governor_client.offline.environment import build_environment
from governor_client.simulator.runner import deliver_all
from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.replay.conftest import REGION, T0, capture
from tuning_governor.policy import parse_policy

P3_2X = "ml.p3.2xlarge"


def _emf(text: str, metric: str) -> list[dict[str, Any]]:
    blobs = [json.loads(line) for line in text.splitlines() if line.startswith("{") and '"_aws"' in line]
    return [b for b in blobs if any(m["Name"] == metric for d in b["_aws"]["CloudWatchMetrics"] for m in d["Metrics"])]


def test_each_finished_job_adds_its_cost_to_its_team_once(capsys: pytest.CaptureFixture[str]) -> None:
    # Given two teams' jobs delivered live to the handlers (duplicate-free, so each summary is reported once)
    captured = capture(
        [
            (0, seed_tuning_request("vision-hpo", team="vision", max_jobs=4, max_parallel=2)),
            (60, seed_tuning_request("speech-hpo", team="speech", max_jobs=3, max_parallel=1)),
        ],
        live=True,
    )

    # Then one TeamSpendUSD line per job, on its team, worth the job's priced cost
    spend: dict[str, list[Decimal]] = defaultdict(list)
    for blob in _emf(capsys.readouterr().out, "TeamSpendUSD"):
        assert blob["service"] == "tuning-governor"
        spend[blob["team"]].extend(Decimal(str(v)) for v in blob["TeamSpendUSD"])
    expected = {s.team: [s.cost.priced_cost_usd] for s in captured.live.values()}
    assert set(expected) == {"vision", "speech"}
    assert {team: [round(v, 6) for v in values] for team, values in spend.items()} == {
        team: [round(v, 6) for v in values] for team, values in expected.items()
    }
    assert all(v > 0 for values in expected.values() for v in values)


def test_stops_and_decisions_are_counted_by_the_rule_that_made_them(capsys: pytest.CaptureFixture[str]) -> None:
    # Given two teams sharing an ml.p3.2xlarge quota of 8 under an enforcing policy, delivered live
    policy = parse_policy(f"mode: enforce\nquotas:\n  {P3_2X}: 8\n", "policy.yaml")
    launches = [
        seed_tuning_request("team-a-hpo", team="vision", instance_type=P3_2X, max_parallel=4, max_jobs=4),
        seed_tuning_request(
            "team-b-hpo", team="speech", instance_type=P3_2X, instance_count=2, max_parallel=3, max_jobs=3
        ),
    ]
    events: list[dict[str, Any]] = []
    with mock_aws():
        clock = VirtualClock(T0)
        with AmtStandIn(clock=clock, seed=7) as amt:
            env = build_environment(clock=clock.now, region=REGION, policy=policy, quotas=False)
            sagemaker = boto3.client("sagemaker", region_name=REGION)
            for request in launches:
                sagemaker.create_hyper_parameter_tuning_job(**request)
                amt.advance(60)
            for _ in range(24 * 60):
                amt.advance(60)
                batch = amt.drain_events()
                events.extend(batch)
                deliver_all(batch, env.services)
                if amt.idle():
                    break

    # Then each stop is counted once, on the rule that made it, and every decision on its rule
    out = capsys.readouterr().out
    stopped_jobs = {
        e["detail"]["HyperParameterTuningJobName"]
        for e in events
        if e["detail"].get("HyperParameterTuningJobStatus") == "Stopped"
    }
    stops = Counter(blob["rule"] for blob in _emf(out, "StopsByRule") for _ in blob["StopsByRule"])
    by_rule = sum(len(blob["DecisionsByRule"]) for blob in _emf(out, "DecisionsByRule"))
    decisions = sum(sum(blob["Decisions"]) for blob in _emf(out, "Decisions"))
    assert stopped_jobs
    assert stops == Counter({"concurrency": len(stopped_jobs)})
    assert by_rule == decisions >= len(stopped_jobs)
