"""One live-disorder run, and its comparison with perfect delivery of the same scenario and seed.

A run is the :class:`~governor_client.simulator.simulation.Simulation` in enforce mode with the deployed schedule
(the sweep every 5 virtual minutes, the one-time budget checks at their time), under one delivery
profile. What it yields is read from the stand-in, not from logs:

* **stops**: each StopHyperParameterTuningJob call the stand-in served (job, virtual time), with the
  rule of the job's ``stopped`` decision item;
* **dollars**: per tuning job, the governor's summary cost and the stand-in's truth: every trial's
  ``BillableTimeInSeconds`` x instances x the bundled price.

Against perfect delivery (same scenario, same seed):

* a **wrong stop**: a job stopped that perfect delivery did not stop, or stopped by another rule, or
  stopped more than :data:`EARLY_S` before perfect delivery's stop;
* a **missed stop**: a job perfect delivery stopped that is not stopped, or stopped more than
  :data:`LATE_S` (one sweep interval + 2 minutes) after it; not one when the run recorded the same
  rule's breach as ``passed`` and, by the stand-in's own trials, it had passed: at the moment the
  governor came to act (the decision's claim), the other jobs' trials in progress plus the job's demand
  were within the limit for every instance type the breach named (a breach that no longer holds at the
  moment of acting stops nobody);
* a **dollars mismatch**: a job whose summary cost differs from the stand-in's truth (or has none).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from moto import mock_aws

from governor_client.amt.tuning_job import SimTuningJob
from governor_client.simulator.delivery import DeliveryFaults
from governor_client.simulator.schedule import DEFAULT_SWEEP_EVERY
from governor_client.simulator.simulation import Simulation
from tuning_governor.app.events.tags import is_tag_event
from tuning_governor.domain.resume import resume_name
from tuning_governor.policy import parse_policy

from .scenarios import SCENARIOS, DisorderScenario

MICRO = Decimal("0.000001")
SWEEP = DEFAULT_SWEEP_EVERY
EARLY_S = 120.0
LATE_S = SWEEP.total_seconds() + 120.0


#: Each fault profile's delivery (``perfect``: none, each event once, at once, in order).
FAULTS: dict[str, Callable[[int], DeliveryFaults]] = {
    # 0-240 s, uniform, so out of order; 1 % same-id and 2 % new-id duplicates
    "delays": lambda seed: DeliveryFaults(
        max_delay_s=240.0, same_id_duplicate_rate=0.01, new_id_duplicate_rate=0.02, seed=seed
    ),
    "drops": lambda seed: DeliveryFaults(drop_rate=0.2, seed=seed),  # 20 % dropped
    # every event up to 3 hours late (so the sweep judges nearly all of it)
    "hours-late": lambda seed: DeliveryFaults(max_delay_s=3 * 3600.0, same_id_duplicate_rate=0.01, seed=seed),
    # delays as ``delays``; the tag events are dropped besides (see ``run``)
    "tags-lost": lambda seed: DeliveryFaults(max_delay_s=240.0, seed=seed),
    # no delay, but deliveries shuffled in blocks of 8: one order of a burst per seed
    "same-second": lambda seed: DeliveryFaults(reorder_window=8, reorder_hold_s=1.0, seed=seed),
    # a burst of 8 handled one at a time, the newest first
    "newest-first": lambda seed: DeliveryFaults(reorder_window=8, reorder_hold_s=1.0, newest_first=True, seed=seed),
}


def profile_faults(profile: str, seed: int) -> DeliveryFaults | None:
    """The delivery of a profile: ``perfect`` or one of :data:`FAULTS`."""
    if profile == "perfect":
        return None
    if profile not in FAULTS:
        raise ValueError(f"unknown profile {profile!r}")
    return FAULTS[profile](seed)


PROFILES = ("delays", "drops")


@dataclass(frozen=True)
class Stop:
    at: datetime
    rule: str | None
    """The rule of the job's ``stopped`` decision item (None: a stop call without one)."""


@dataclass
class Run:
    """What one run did: the stops the stand-in served, and each job's dollars (governor, truth)."""

    stops: dict[str, Stop] = field(default_factory=dict)
    dollars: dict[str, tuple[Decimal | None, Decimal]] = field(default_factory=dict)
    decisions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    requeued: dict[str, str] = field(default_factory=dict)
    """Per stopped job queued again (``on_over_capacity: requeue``, preemptions): its entry's state."""
    windows: dict[str, tuple[datetime, datetime | None, dict[str, int]]] = field(default_factory=dict)
    """Per tuning job, as the stand-in ran it: created, ended (None: still running), and its demand
    (MaxParallelTrainingJobs x instances, per type)."""

    def in_use(self, instance_type: str, at: datetime, *, besides: str) -> int:
        """What the tuning jobs SageMaker ran at ``at`` (InProgress or Stopping), other than ``besides``
        and than those this run stopped on arrival for concurrency (they never held their demand), hold
        of ``instance_type``."""
        return sum(
            demand.get(instance_type, 0)
            for job, (created, ended, demand) in self.windows.items()
            if job != besides
            and created <= at
            and (ended is None or ended > at)
            and not (job in self.stops and self.stops[job].rule == "concurrency")
        )

    def passed_by_then(self, job: str, rule: str | None) -> bool:
        """The run recorded ``job``'s ``rule`` breach as passed, and by the stand-in it had: see the module."""
        for decision in self.decisions.get(job, []):
            if decision.get("rule") != rule or decision.get("action") != "passed":
                continue
            at = datetime.fromisoformat(str(decision.get("claimed_at") or decision["at"]))
            types = ((decision.get("numbers") or {}).get("instance_types") or {}).items()
            if types and all(
                self.in_use(kind, at, besides=job) + int(row["demand"]) <= int(row["limit"]) for kind, row in types
            ):
                return True
        return False


@contextmanager
def _recording_stops(sim: Simulation) -> Iterator[list[tuple[str, datetime]]]:
    """Every StopHyperParameterTuningJob the stand-in serves, with its virtual time."""
    engine = sim.amt.engine
    served: list[tuple[str, datetime]] = []
    original = engine.stop_tuning_job

    def stop(job: SimTuningJob) -> None:
        if not job.is_terminal and not job.stop_requested:
            served.append((str(job.hyper_parameter_tuning_job_name), sim.clock.now()))
        original(job)

    # The stand-in keeps no log of its Stop calls: the engine's own entry point is wrapped while the run lasts.
    engine.stop_tuning_job = stop  # type: ignore[method-assign]
    try:
        yield served
    finally:
        engine.stop_tuning_job = original  # type: ignore[method-assign]


def _truth(sim: Simulation, job: str) -> Decimal:
    """What the stand-in billed the job's trials: BillableTimeInSeconds x instances x price."""
    total = Decimal(0)
    catalog, region = sim.env.services.catalog, sim.env.region
    for name in sim.amt.training_jobs_of(job):
        described = sim.env.sagemaker.describe_training_job(TrainingJobName=name)
        resource = described["ResourceConfig"]
        entry = catalog.price(region, resource["InstanceType"])
        assert entry is not None, resource["InstanceType"]
        rate = Decimal(entry.usd_per_hour) * resource["InstanceCount"] / 3600
        retained = (described.get("WarmPoolStatus") or {}).get("ResourceRetainedBillableTimeInSeconds") or 0
        for seconds in (described.get("BillableTimeInSeconds") or 0, retained):  # billed as two lines
            total += (rate * Decimal(seconds)).quantize(MICRO)
    return total


def _window(sim: Simulation, job: str) -> tuple[datetime, datetime | None, dict[str, int]]:
    """The tuning job as the stand-in ran it: created, ended (None: still running), demand per type."""
    described = sim.env.sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=job)
    parallel = described["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxParallelTrainingJobs"]
    resource = described["TrainingJobDefinition"]["ResourceConfig"]
    demand = {resource["InstanceType"]: int(resource["InstanceCount"]) * int(parallel)}
    return described["CreationTime"], described.get("HyperParameterTuningEndTime"), demand


def _losing_tag_events(sim: Simulation) -> None:
    """Every tag event CloudTrail would send is lost (the run's deliverer never sees it)."""
    deliverer, submit = sim.deliverer, sim.deliverer.submit

    def keep(event: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        return [] if is_tag_event(event) else submit(event, *args, **kwargs)

    deliverer.submit = keep  # type: ignore[method-assign]


def _policy_in_force(sim: Simulation, spec: DisorderScenario) -> Any:
    """The policy as the governor reads it: ``spec.policy``, or ``spec.switch_to`` from ``spec.switch_at_s``
    virtual seconds on (the operator's edit of the SSM parameter, read by every function from then)."""
    before = parse_policy(spec.policy, f"disorder {spec.name}")
    if spec.switch_to is None:
        return lambda: before
    after = parse_policy(spec.switch_to, f"disorder {spec.name} (switched)")
    switch = sim.start.timestamp() + spec.switch_at_s
    return lambda: after if sim.clock.now().timestamp() >= switch else before


@functools.cache
def run(scenario_name: str, seed: int, profile: str) -> Run:
    """One run (cached: the perfect run serves both profiles' comparisons)."""
    spec: DisorderScenario = SCENARIOS[scenario_name]
    policy = parse_policy(spec.policy, f"disorder {scenario_name}")
    scenario = spec.build(seed)
    simulation = Simulation(
        scenario,
        seed=seed,
        faults=profile_faults(profile, seed),
        quiet_handlers=True,
        sweep_every=SWEEP,
        environment={"policy": policy, "store": "memory"},
        sns=False,
    )
    with mock_aws(), simulation as sim:
        for instance_type, value in spec.quotas.items():
            sim.amt.set_applied_quota(instance_type, value)
        sim.env.services.policy = _policy_in_force(sim, spec)
        if profile == "tags-lost":
            _losing_tag_events(sim)
        with _recording_stops(sim) as served:
            sim.run()
        out = Run()
        store = sim.env.services.store
        for job in scenario.tuning_jobs:
            out.decisions[job] = store.decisions(job)
            summary = store.get_summary(job)
            out.dollars[job] = (summary.cost.cost_usd if summary else None, _truth(sim, job))
            entry = store.get_request(resume_name(job, 1))
            if entry is not None:
                out.requeued[job] = entry.state
            out.windows[job] = _window(sim, job)
        for job, at in served:
            stopped = sorted(
                (d for d in out.decisions[job] if d.get("action") == "stopped"), key=lambda d: str(d.get("at"))
            )
            out.stops.setdefault(job, Stop(at, str(stopped[0]["rule"]) if stopped else None))
    return out


@dataclass
class Verdict:
    """A faulty run against perfect delivery; ``lateness_s`` per job both stopped (faulty - perfect)."""

    wrong: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    dollars: list[str] = field(default_factory=list)
    lateness_s: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not (self.wrong or self.missed or self.dollars)


def compare(scenario_name: str, seed: int, profile: str) -> Verdict:
    """The faulty run of ``profile`` against perfect delivery, by the module docstring's definitions."""
    perfect, faulty = run(scenario_name, seed, "perfect"), run(scenario_name, seed, profile)
    verdict = Verdict()
    for job, stop in sorted(faulty.stops.items()):
        expected = perfect.stops.get(job)
        if expected is None:
            verdict.wrong.append(
                f"{job}: stopped by {stop.rule} at {stop.at:%H:%M:%S}; perfect delivery did not stop it"
            )
        elif stop.rule != expected.rule:
            verdict.wrong.append(f"{job}: stopped by {stop.rule}; perfect delivery by {expected.rule}")
        elif (expected.at - stop.at).total_seconds() > EARLY_S:
            verdict.wrong.append(f"{job}: stopped at {stop.at:%H:%M:%S}, perfect delivery at {expected.at:%H:%M:%S}")
    _missed(perfect, faulty, verdict)
    for job in sorted(set(faulty.requeued) - set(perfect.requeued)):
        verdict.wrong.append(f"{job}: queued again; perfect delivery did not")
    for job, (governor, truth) in sorted(faulty.dollars.items()):
        if governor is None or governor.quantize(MICRO) != truth:
            verdict.dollars.append(f"{job}: governor {governor}, stand-in {truth}")
    return verdict


def _missed(perfect: Run, faulty: Run, verdict: Verdict) -> None:
    """The module docstring's missed stops (and missed requeues) of ``faulty`` against ``perfect``."""
    for job, expected in sorted(perfect.stops.items()):
        seen = faulty.stops.get(job)
        if seen is None and faulty.passed_by_then(job, expected.rule):
            continue  # the breach had passed when the governor came to act: nobody to stop
        if seen is None:
            verdict.missed.append(f"{job}: not stopped; perfect delivery stopped it ({expected.rule})")
            continue
        verdict.lateness_s[job] = (seen.at - expected.at).total_seconds()
        if verdict.lateness_s[job] > LATE_S:
            verdict.missed.append(
                f"{job}: stopped at {seen.at:%H:%M:%S}, {verdict.lateness_s[job]:.0f} s after perfect delivery's"
            )
    for job in sorted(set(perfect.requeued) - set(faulty.requeued)):
        rule = perfect.stops[job].rule if job in perfect.stops else None
        if job not in faulty.stops and faulty.passed_by_then(job, rule):
            continue  # not stopped, as its breach had passed: nothing to queue again
        verdict.missed.append(f"{job}: not queued again; perfect delivery requeued it")


def perfect_stops(scenario_name: str, seed: int) -> dict[str, Stop]:
    return run(scenario_name, seed, "perfect").stops


def max_lateness(verdicts: list[Verdict]) -> float | None:
    values = [late for v in verdicts for late in v.lateness_s.values()]
    return max(values, default=None)
