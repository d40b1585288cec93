"""The live-disorder suite (issue 17, "Must show"; extended by issue 25): the same stops whatever the delivery.

Each scenario of :mod:`.scenarios` x seed runs with the sweep every 5 virtual minutes under perfect
delivery and under each of its fault profiles (:mod:`.compare`: delays 0-240 s with 1-3 % duplicates;
20 % drops; every event up to 3 hours late; bursts delivered in every order; tag events lost). Against
perfect delivery with the same seed: no wrong stop, no missed stop beyond one sweep interval + 2
minutes, every job queued again that perfect delivery queued again (and no other), and every job's
dollars (trials and warm-pool retention) equal to what the stand-in billed.

``TODAY`` lists the runs that fail on the code of this commit, each with the mechanism its decisions
show, and a scenario's ``xfail`` the profiles that need a fix made elsewhere; both are strict xfails,
so a fix that makes one pass must take it off the list (and a run that starts failing is not hidden).
Figures: ``python -m tests.integration.disorder.figures``.
"""

from __future__ import annotations

import pytest

from .compare import compare, run
from .scenarios import SCENARIOS

pytestmark = pytest.mark.disorder


def _group(scenario: str, seed: int) -> pytest.MarkDecorator:
    """One xdist worker per scenario and seed: its perfect run (cached in :func:`run`) serves every profile's
    comparison and both checks of a run; the scenarios themselves spread over the workers."""
    return pytest.mark.xdist_group(f"disorder-{scenario}-{seed}")


RUNS = [(name, seed, profile) for name, spec in SCENARIOS.items() for seed in spec.seeds for profile in spec.profiles]

#: Runs with a wrong or missed stop on today's code, and the mechanism (issue 17's numbering) each shows:
#: none since admission judges each job as of its CreationTime (docs/reference/policy.md, "Order of admission").
TODAY: dict[tuple[str, int, str], str] = {}


def _params() -> list[object]:
    params: list[object] = []
    for name, seed, profile in RUNS:
        reason = TODAY.get((name, seed, profile))
        missing = SCENARIOS[name].xfail_reason(profile, seed)
        marks = [pytest.mark.xfail(strict=True, reason=f"issue 17 mechanism {reason}")] if reason else []
        marks += [pytest.mark.xfail(strict=True, reason=f"needs {missing}")] if missing and not reason else []
        marks.append(_group(name, seed))
        params.append(pytest.param(name, seed, profile, id=f"{name}-seed{seed}-{profile}", marks=marks))
    return params


@pytest.mark.parametrize(("scenario", "seed", "profile"), _params())
def test_faulty_delivery_stops_what_perfect_delivery_stops(
    aws_credentials: None, scenario: str, seed: int, profile: str
) -> None:
    # Given the scenario delivered perfectly and under the fault profile, with the same seed
    verdict = compare(scenario, seed, profile)
    # Then the same jobs are stopped, by the same rules, no more than 2 minutes earlier and no later than
    # one sweep interval + 2 minutes
    assert verdict.wrong == [], f"wrong stops: {verdict.wrong}"
    assert verdict.missed == [], f"missed stops: {verdict.missed}"


@pytest.mark.parametrize(
    ("scenario", "seed", "profile"), [pytest.param(n, s, p, marks=_group(n, s)) for n, s, p in RUNS]
)
def test_every_jobs_dollars_equal_the_stand_ins_bill(
    aws_credentials: None, scenario: str, seed: int, profile: str
) -> None:
    verdict = compare(scenario, seed, profile)
    assert verdict.dollars == []


@pytest.mark.parametrize(
    ("scenario", "seed"), [pytest.param(n, s, marks=_group(n, s)) for n, spec in SCENARIOS.items() for s in spec.seeds]
)
def test_perfect_delivery_stops_some_jobs_and_not_others(aws_credentials: None, scenario: str, seed: int) -> None:
    # The comparison means something only if perfect delivery stops jobs (a miss can be seen) and leaves
    # others running (a wrong stop can be seen).
    perfect = run(scenario, seed, "perfect")
    assert perfect.stops, "perfect delivery stopped nothing"
    assert set(perfect.dollars) - set(perfect.stops), "perfect delivery stopped every job"
    assert all(stop.rule is not None for stop in perfect.stops.values())
    # And the jobs the scenario is about are stopped (a mode switch: what monitor recorded as would-stop)
    missing = [job for job in SCENARIOS[scenario].must_stop if job not in perfect.stops]
    assert missing == [], f"perfect delivery did not stop {missing}"
