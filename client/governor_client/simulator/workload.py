"""A busy account as a simulator scenario: many small tuning jobs, sized by trial events.

Used by the benchmarks (``benchmarks/run.py``, ``benchmarks/replay_store.py``) and by tests that need a
long, varied event log.
"""

from __future__ import annotations

from governor_client.simulator.requests import training_job_request, tuning_request
from governor_client.simulator.simulation import CreateTrainingJob, CreateTuningJob, Scenario

TEAMS = ("churn", "vision", "fraud", "search", "ads")
STRATEGIES = ("Bayesian", "Random", "Hyperband", "Grid")
INSTANCE_TYPES = ("ml.m5.xlarge", "ml.m5.2xlarge", "ml.g4dn.xlarge", "ml.c5.2xlarge")
#: Trial events per tuning job of the mix below, its standalone jobs included (measured: 56 at 5,000 and 50,000).
TRIAL_EVENTS_PER_JOB = 56


def many_jobs(trial_events: int) -> Scenario:
    """Many small tuning jobs (one every minute; 10 trials, 3 in parallel; 5 teams, every strategy, some
    managed spot, some warm pools, 5 % failed trials) and a standalone training job for every tenth, for
    about ``trial_events`` "SageMaker Training Job State Change" events."""
    jobs = max(1, round(trial_events / TRIAL_EVENTS_PER_JOB))
    actions: list[CreateTuningJob | CreateTrainingJob] = []
    for i in range(jobs):
        team = TEAMS[i % len(TEAMS)]
        owner = f"{team}-ds{i % 3}@example.com"
        actions.append(
            CreateTuningJob(
                60.0 * i,
                tuning_request(
                    f"bench-{i:05d}",
                    strategy=STRATEGIES[i % len(STRATEGIES)],  # type: ignore[arg-type]
                    team=team,
                    owner=owner,
                    instance_type=INSTANCE_TYPES[i % len(INSTANCE_TYPES)],
                    instance_count=1 + i % 3,
                    max_jobs=10,
                    max_parallel=3,
                    spot=i % 3 == 0,
                    keep_alive_s=300 if i % 4 == 1 else 0,
                    early_stopping="Auto" if i % 8 == 0 else "Off",
                ),
            )
        )
        if i % 10 == 5:
            actions.append(
                CreateTrainingJob(
                    60.0 * i + 30, training_job_request(f"bench-solo-{i:05d}", team=team, keep_alive_s=600)
                )
            )
    return Scenario(actions, failure_rate=0.05, spot_interruption_rate=0.3, launch_delay_s=20.0, finish_delay_s=30.0)
