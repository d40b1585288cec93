"""Fuzzed events interleaved with a valid stream, through the real handlers on moto.

Issue 8: >= 10,000 fuzzed events interleaved with a valid stream -> 0 exceptions other than the
governor's own retryable ones, and the valid stream unaffected.

The valid stream is the seed job (XGBoost, Hyperband, 30 trials of 3 x ml.m5.xlarge, 4 in parallel)
run by the AMT stand-in on a virtual clock, under a monitor-mode policy whose budget the job
overspends (so it makes decisions and reports). It runs twice, each time in a fresh moto world:
alone, then with the fuzzed events (``tests/fuzzing.py``, mutated from every sample in ``events/``)
delivered to the real Lambda handlers between its events. Fuzzed events go to the handler of the
sample they came from, whatever their detail-type says, so even events EventBridge would not route
reach a handler. The two runs must leave the same DynamoDB items for the job, the same handler
outcomes for its events and the same SNS reports.

The policy sets no quotas and the environment has no Service Quotas, so the concurrency rule cannot
decide: a fuzzed event that is valid is a real arrival of another job, and would legitimately change
an arrival judgement through the account's capacity. Everything else a job's decisions depend on is
its own.

``FUZZ_EVENTS`` and ``FUZZ_SEED`` (environment) change the count and the seed; the defaults are what
docs/explanation/reliability.md reports. Each run prints its figures.
"""

from __future__ import annotations

import math
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from moto import mock_aws

import training_events
import tuning_events
from governor_client.amt import AmtStandIn, VirtualClock
from governor_client.offline.environment import OfflineEnvironment, build_environment
from governor_client.simulator.runner import FakeLambdaContext, deliver_event
from governor_client.simulator.scenarios import seed_tuning_request
from governor_client.simulator.simulation.quiet import quiet_handlers
from tests.fuzzing import EventFuzzer, Fuzzed
from tuning_governor.errors import Disposition, GovernorError
from tuning_governor.models.events import TUNING_DETAIL_TYPE
from tuning_governor.policy import Policy

JOB = "xgb-valid-seed"
T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
FUZZ_EVENTS = int(os.environ.get("FUZZ_EVENTS", "10000"))
FUZZ_SEED = int(os.environ.get("FUZZ_SEED", "8"))
# Monitor mode: decide and report, never stop, so the stand-in emits the same events in both runs.
POLICY = Policy.model_validate(
    {"mode": "monitor", "defaults": {"job_budget_usd": 1, "stagnation_trials": 8, "max_failed_trials": 0}}
)


@dataclass
class Run:
    valid_outcomes: list[dict[str, Any]] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)
    reports: list[tuple[str, str]] = field(default_factory=list)
    fuzz_outcomes: Counter[str] = field(default_factory=Counter)
    fuzz_mutations: Counter[str] = field(default_factory=Counter)
    retryable: list[str] = field(default_factory=list)
    crashes: list[tuple[tuple[str, ...], str, str]] = field(default_factory=list)


def _deliver_fuzzed(fuzzed: Fuzzed, env: OfflineEnvironment, run: Run) -> None:
    handler = tuning_events.handler if fuzzed.sample_detail_type == TUNING_DETAIL_TYPE else training_events.handler
    function = "tuning-events" if handler is tuning_events.handler else "training-events"
    run.fuzz_mutations.update(fuzzed.mutations)
    try:
        outcome = handler(fuzzed.event, FakeLambdaContext(function), services=env.services)
    except GovernorError as exc:
        if exc.disposition is not Disposition.RETRY:
            raise  # a DROP error escaping the handler would be a bug of its own
        run.retryable.append(type(exc).__name__)
        run.fuzz_outcomes["retried"] += 1
    except Exception as exc:  # every other exception is what this test counts
        run.crashes.append((fuzzed.mutations, type(exc).__name__, str(exc)[:300]))
        run.fuzz_outcomes["crash"] += 1
    else:
        run.fuzz_outcomes[str(outcome.get("outcome"))] += 1


def _run_seed_job(fuzz: list[Fuzzed], per_valid_event: int) -> Run:
    """The seed job on a fresh moto world, with ``per_valid_event`` fuzzed events after each of its events."""
    run = Run()
    pending = iter(fuzz)
    # Warnings for 10,000 rejections would dominate the runtime: log errors only, no EMF output.
    with mock_aws(), quiet_handlers("ERROR"):
        clock = VirtualClock(T0)
        with AmtStandIn(clock=clock, seed=7) as amt:
            env = build_environment(clock=clock.now, policy=POLICY, quotas=False)
            env.sagemaker.create_hyper_parameter_tuning_job(**seed_tuning_request(JOB))
            for _ in range(48 * 60):
                amt.advance(60)
                for event in amt.drain_events():
                    run.valid_outcomes.append(deliver_event(event, env.services).outcome)
                    for fuzzed in [f for _, f in zip(range(per_valid_event), pending, strict=False)]:
                        _deliver_fuzzed(fuzzed, env, run)
                if amt.idle() and not amt.events:
                    break
            for fuzzed in pending:  # whatever is left after the job's last event
                _deliver_fuzzed(fuzzed, env, run)
            run.items = env.services.store.items(JOB)
            # Fuzzed events that are valid are real events of other jobs, which may be decided on and
            # reported too: compare what was reported about the seed job.
            run.reports = [(m.get("Subject", ""), m["Message"]) for m in env.sns_messages() if JOB in m["Message"]]
    return run


@pytest.mark.usefixtures("aws_credentials")
def test_fuzzed_events_never_crash_a_handler_nor_change_the_valid_stream() -> None:
    # Given the seed job's events alone
    started = time.perf_counter()
    alone = _run_seed_job([], 0)
    assert alone.valid_outcomes, "the seed job emitted no events"
    assert all(o["outcome"] != "error" for o in alone.valid_outcomes)
    assert any(item.get("sk") == "SUMMARY" for item in alone.items)
    assert any(str(item.get("sk", "")).startswith("DECISION#") for item in alone.items), "no decision to compare"
    assert alone.reports
    baseline_s = time.perf_counter() - started

    # When the same events arrive with FUZZ_EVENTS fuzzed events interleaved
    fuzz = EventFuzzer(FUZZ_SEED).events(FUZZ_EVENTS)
    per_valid = math.ceil(FUZZ_EVENTS / len(alone.valid_outcomes))
    started = time.perf_counter()
    mixed = _run_seed_job(fuzz, per_valid)
    mixed_s = time.perf_counter() - started

    print(  # the figures docs/explanation/reliability.md reports
        f"\nfuzz: seed={FUZZ_SEED} valid events={len(alone.valid_outcomes)} fuzzed events={FUZZ_EVENTS}"
        f" ({per_valid} after each valid event) outcomes={dict(sorted(mixed.fuzz_outcomes.items()))}"
        f" retryable={len(mixed.retryable)} exceptions={len(mixed.crashes)}"
        f"\nfuzz: mutations={dict(sorted(mixed.fuzz_mutations.items()))}"
        f"\nfuzz: runtime alone {baseline_s:.1f} s, with the fuzzed events {mixed_s:.1f} s"
    )
    # Then no handler raised anything but the governor's own retryable errors
    assert mixed.crashes == [], mixed.crashes[:5]
    assert sum(mixed.fuzz_outcomes.values()) == FUZZ_EVENTS
    assert mixed.fuzz_outcomes["rejected"] > FUZZ_EVENTS // 4  # most fuzz is refused at the boundary
    # And the valid stream came out exactly as it does alone: outcomes, rows, decisions, reports
    assert mixed.valid_outcomes == alone.valid_outcomes
    assert mixed.items == alone.items
    assert mixed.reports == alone.reports
