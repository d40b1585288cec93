"""Duplicated and disordered delivery changes nothing users see (issue 8, "Must show", property-based).

Hypothesis draws how EventBridge delivers the simulator's events (``governor_client.simulator.delivery``): every
event delivered once, twice or three times (a copy with the same ``id``, as EventBridge's at-least-once
delivery, and a copy with a new ``id``, as SageMaker's several events per state change), delays of up
to ten minutes, and deliveries shuffled in blocks of up to the whole log (the block is held until it
fills). The scenario (two small tuning jobs under a monitor-mode budget both overspend, one failing
trial in three) then runs against the real handlers, and is compared with the same scenario delivered
once, in order: the same summaries, the same decisions (rule, verdict, action), the same set of
reports per job, and not a cent more or less in total.

Each example is a whole simulation in a fresh moto world (~3 s): the example counts keep each test
under a minute; ``derandomize`` makes the examples the same on every run, so a failure is reproducible.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from moto import mock_aws

from governor_client.offline.slack_server import SlackWebhookServer
from governor_client.simulator.delivery import DeliveryFaults
from governor_client.simulator.simulation import Simulation, SimulationResult
from tests.integration.test_faults import JOBS, MONITOR, SCENARIO

# One worker runs this module: its module-scoped (or cached) runs are built once, not once per worker.
pytestmark = pytest.mark.xdist_group("delivery_properties")

#: About 40 events are emitted: a window of 64 deliveries can hold the whole log with its copies.
WHOLE_LOG = 64


def _reports_by_job(subjects: list[tuple[str, str]]) -> dict[str, set[tuple[str, str]]]:
    return {job: {(channel, subject) for channel, subject in subjects if f" {job} " in f"{subject} "} for job in JOBS}


@functools.cache
def _run(faults: DeliveryFaults | None) -> tuple[dict[str, Any], SimulationResult]:
    """Summaries, decisions, reports and total cost per job after delivering under ``faults``."""
    with SlackWebhookServer() as slack, mock_aws():
        # The handlers' own order-independence, without the sweep: what the sweep judges under disorder is
        # the live-disorder suite's (tests/integration/disorder).
        simulation = Simulation(
            SCENARIO,
            seed=3,
            faults=faults,
            slack_url=slack.url,
            quiet_handlers=True,
            environment={"policy": MONITOR},
            sweep_every=None,
        )
        with simulation as sim:
            result = sim.run()
            store = sim.env.services.store
            summaries = {}
            cost = Decimal(0)
            for job in JOBS:
                summary = store.get_summary(job)
                summaries[job] = summary.model_dump(mode="json", exclude={"finalised_at"}) if summary else None
                cost += (summary.cost.cost_usd if summary else None) or Decimal(0)
            decisions = {
                job: sorted((d["rule"], d["verdict"], d.get("action")) for d in store.decisions(job)) for job in JOBS
            }
            subjects = [("sns", str(m.get("Subject"))) for m in sim.env.sns_messages()]
            subjects += [("slack", str(m.get("text"))) for m in slack.messages]
    seen = {
        "summaries": summaries,
        "decisions": decisions,
        "reports": _reports_by_job(subjects),
        "cost": cost,
    }
    return seen, result


@pytest.fixture
def fresh(aws_credentials: None) -> None:
    """Fake credentials; each example opens its own moto world."""


def _copies(result: SimulationResult) -> Counter[str]:
    stats = result.delivery_stats
    return Counter(same_id=stats.same_id_duplicates, new_id=stats.new_id_duplicates, overtaken=stats.overtaken)


#: The one difference delivery order may make, by the issue's own rule ("a decision on an ended job is
#: recorded as already-ended"): a breach decided on a trial whose event came after its job's terminal
#: event is recorded and reported as ``already-ended`` where in-order delivery stopped the running job
#: (or, in monitor mode, said it would). The rule, the verdict and that one report per channel must
#: still be the same; nothing else may differ.
LATE = "already-ended"
ACTED = frozenset({"stopped", "would-stop", "exempt"})
_ACTED_SUBJECT = re.compile(r"^\[tuning-governor\] (?:STOPPED|WOULD STOP) (\S+) .*: (\S+)$")
_LATE_SUBJECT = re.compile(r"^\[tuning-governor\] (\S+) breached (\S+) \(already ended\): \S+$")


def _late_as_in_order(seen: dict[str, Any], expected: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """``seen`` with each late decision (and its reports) read as the in-order action it stands for,
    where in-order delivery acted on the same rule and verdict; and how many were."""
    decisions = {job: list(found) for job, found in seen["decisions"].items()}
    reports = {job: set(found) for job, found in seen["reports"].items()}
    late = 0
    for job, found in decisions.items():
        in_order = {(rule, verdict): action for rule, verdict, action in expected["decisions"][job]}
        for index, (rule, verdict, action) in enumerate(found):
            if action != LATE or in_order.get((rule, verdict)) not in ACTED:
                continue
            late += 1
            found[index] = (rule, verdict, in_order[(rule, verdict)])
            subjects = {
                subject
                for _, subject in expected["reports"][job]
                if (m := _ACTED_SUBJECT.match(subject)) and m.groups() == (job, rule)
            }
            for channel, subject in sorted(reports[job]):
                if (m := _LATE_SUBJECT.match(subject)) and m.groups() == (job, rule) and len(subjects) == 1:
                    reports[job].remove((channel, subject))
                    reports[job].add((channel, next(iter(subjects))))
        found.sort()
    return seen | {"decisions": decisions, "reports": reports}, late


def _compare(faults: DeliveryFaults) -> None:
    expected, clean = _run(None)
    seen, result = _run(faults)
    seen, late = _late_as_in_order(seen, expected)
    print(  # figures for docs/explanation/reliability.md (run with -s)
        f"\n{faults}: deliveries {result.deliveries} of {result.events_emitted} events, {dict(_copies(result))}, "
        f"outcomes {dict(result.outcome_counts)}, late decisions {late}"
    )
    assert result.delivery_stats.dropped == 0
    assert result.dead_lettered == []
    assert clean.deliveries == clean.events_emitted
    # Every difference at once, so a failure names all that changed.
    differences = {
        key: (seen[key], expected[key])
        for key in ("cost", "summaries", "decisions", "reports")
        if seen[key] != expected[key]
    }
    assert not differences, f"differs from in-order delivery (cost: dollars double-counted or lost): {differences}"


durations = st.sampled_from([0.0, 5.0, 60.0, 600.0])


@settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    same=st.sampled_from([0.0, 0.5, 1.0]),
    new=st.sampled_from([0.0, 0.5, 1.0]),
    seed=st.integers(0, 2**16),
)
@example(same=1.0, new=1.0, seed=0)  # every event three times
def test_duplicates_in_order_change_nothing(fresh: None, same: float, new: float, seed: int) -> None:
    # Given every event delivered 1-3 times, with the same id and with a new one, at once
    _compare(DeliveryFaults(same_id_duplicate_rate=same, new_id_duplicate_rate=new, seed=seed))


@settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    faults=st.builds(
        DeliveryFaults,
        same_id_duplicate_rate=st.sampled_from([0.0, 0.5, 1.0]),
        new_id_duplicate_rate=st.sampled_from([0.0, 0.5, 1.0]),
        max_delay_s=durations,
        reorder_window=st.sampled_from([0, 2, 8, WHOLE_LOG]),
        reorder_hold_s=st.just(7200.0),
        seed=st.integers(0, 2**16),
    )
)
# The whole log, every event three times, shuffled as one block.
@example(
    faults=DeliveryFaults(
        same_id_duplicate_rate=1.0, new_id_duplicate_rate=1.0, reorder_window=WHOLE_LOG, reorder_hold_s=7200.0, seed=1
    )
)
def test_duplicates_delays_and_shuffles_change_nothing(fresh: None, faults: DeliveryFaults) -> None:
    # Given every event delivered 1-3 times, delayed and shuffled in windows of up to the whole log
    _compare(faults)
