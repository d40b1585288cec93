"""The arrivals the queue simulation replays: several teams sharing one instance type under a tight
quota, drawn from a seed so every mode sees the same jobs."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from tuning_governor.domain.shares import ShareTerms, Strategy

START = datetime(2026, 12, 1, tzinfo=UTC)
ITYPE = "ml.g5.xlarge"
QUOTA = 16
# Team -> (share of the quota, mean hours between its arrivals): together they offer about 1.1x the
# quota's instance-hours over the day, unevenly (bursts), so the quota is tight at times, idle at others.
TEAMS: dict[str, tuple[int, float]] = {"vision": (8, 1.8), "nlp": (5, 2.0), "speech": (3, 3.0)}
HOURS = 24


@dataclass(frozen=True)
class Job:
    """One tuning job as submitted: ``trials`` trials of ``trial_minutes``, ``max_parallel`` at a time."""

    key: str
    team: str
    arrives: datetime
    max_parallel: int
    instances: int
    trials: int
    trial_minutes: int
    priority: int


def arrivals(seed: int) -> list[Job]:
    """A day of arrivals for every team, in arrival order (keys unique, stable for the seed)."""
    rng = random.Random(seed)
    jobs: list[Job] = []
    for team, (share, mean_gap) in TEAMS.items():
        at = START + timedelta(hours=rng.expovariate(1 / mean_gap))
        while at < START + timedelta(hours=HOURS):
            # Each request fits its team's share (the check refuses the others before they queue).
            instances = rng.choice((1, 1, 2)) if share >= 2 else 1
            jobs.append(
                Job(
                    key=f"{team}-{len([j for j in jobs if j.team == team]) + 1:03d}",
                    team=team,
                    arrives=at,
                    max_parallel=rng.randint(1, share // instances),
                    instances=instances,
                    trials=rng.randint(6, 24),
                    trial_minutes=rng.randint(20, 60),
                    priority=rng.choice((0, 0, 1)),
                )
            )
            at += timedelta(hours=rng.expovariate(1 / mean_gap))
    return sorted(jobs, key=lambda j: (j.arrives, j.key))


def shares(strategy: Strategy, *, preemptible: bool = False) -> dict[str, ShareTerms]:
    """Every team's share of ``ITYPE`` with one strategy (borrowing up to 100 % of the share)."""
    limit = 100 if strategy == "LEND_AND_BORROW" else -1
    return {team: ShareTerms({ITYPE: share}, strategy, limit, preemptible) for team, (share, _) in TEAMS.items()}
