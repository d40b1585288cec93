"""Benchmark: how far past its budget a job gets, event-driven governor + 5-minute sweep vs a 15-minute poller.

    .venv/bin/python benchmarks/overspend.py [--seeds 8] [--scenarios NAME ...] [--write]

Each scenario is one tuning job of long trials on big instances with a budget well below its full cost,
run on the AMT stand-in's virtual clock (``governor_client.amt``) with EventBridge's delivery semantics
(``governor_client.simulator.delivery``: duplicates, delays up to 5 s) and the real handlers, sweep and stop, in
process on moto, once per governor and seed:

* ``event+sweep``: the deployed governor. The budget rule is judged on every event of the job (the
  handlers), on every sweep (``tuning_governor.app.sweep.run.run_sweep``), every 5 minutes: template.yaml's
  ``SweepSchedule`` default, and at the one-time check each judgement asks for at the projected
  crossing (``tuning_governor.app.checks.budget.run_budget_check``, run here when its time comes, as EventBridge
  Scheduler would invoke BudgetCheckFunction);
* ``poller``: the same rule (with the same stop lead), judged only every 15 minutes by the sweep; the
  handlers still record trials (so the poller sees the same billed + accrued spend in DynamoDB) but
  judge no budget, and no check is ever scheduled.

Both governors run the same scenario with the same seed: the same trials at the same times until the
first stop. Per seed, the job's creation time falls at a seeded offset within a 15-minute period, so
the sweep schedules meet the budget crossing at every phase. A stop takes effect the way the stand-in
models it: StopHyperParameterTuningJob puts the running trials in ``Stopping`` and they are
``Stopped``, and billed, ``STOP_LATENCY_S`` later (``AmtStandIn(stop_delay_s=...)``; 120 s is
StopTrainingJob's SIGTERM grace, aws-facts §2.3).

Measured per run, from the stand-in's own trials (not from the governor's accounting):

* **overspend** = the job's billed cost once it has stopped (every trial ``BillableTimeInSeconds`` x
  instances x the bundled catalog's price) minus the budget;
* the moment the billed cost crossed the budget, the decision time (the governor's ``DECISION#budget``
  row) and the lateness between them;
* **bound**: one sweep interval of the job's full-parallel burn (MaxParallel x instances x price) plus
  the same burn over the stop latency. The target is overspend <= bound for every run and a median
  event+sweep / poller overspend ratio <= 0.25.

Writes nothing unless ``--write``: then the section between the overspend markers of
benchmarks/RESULTS.md is replaced (``benchmarks/run.py`` keeps it: it is below the notes marker).
This is a benchmark, not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import io
import random
import statistics
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from results_file import git_head, write_section

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
START_MARKER = "<!-- overspend: written by benchmarks/overspend.py --write -->"
END_MARKER = "<!-- overspend: end -->"

#: The deployed sweep (template.yaml's SweepSchedule default) and the poller's period.
SWEEP_S = 300
POLL_S = 900
#: Seconds between StopHyperParameterTuningJob and the trials' Stopped (billing ends then).
STOP_LATENCY_S = 120.0
#: Every event+sweep run's |bill - budget|, in minutes of its full-parallel burn, is to be at most this.
OFF_BUDGET_TARGET_MIN = 0.5
#: Periods start on the quarter hour; each seed creates the job at an offset within one poll period.
T0 = dt.datetime(2026, 11, 30, 9, 0, tzinfo=dt.UTC)
REGION = "us-east-1"
JOB = "overspend-hpo"
MAX_VIRTUAL_S = 3 * 24 * 3600.0

from governor_client.offline.env_vars import use_offline_environment  # noqa: E402 - imports only os

use_offline_environment(REGION, POWERTOOLS_SERVICE_NAME="tuning-governor", POWERTOOLS_METRICS_DISABLED="true")


@dataclass(frozen=True)
class Case:
    """One tuning job: ``max_jobs`` trials of about ``trial_hours``, ``parallel`` at a time, and its budget."""

    name: str
    instance_type: str
    instances: int
    parallel: int
    max_jobs: int
    trial_hours: float
    budget_usd: Decimal

    def describe(self) -> str:
        length = f"{self.trial_hours:g} h" if self.trial_hours >= 1 else f"{self.trial_hours * 60:.0f} min"
        return (
            f"{self.parallel} x {self.instances} x {self.instance_type}, {self.max_jobs} trials of"
            f" ~{length}, budget ${self.budget_usd}"
        )


CASES: dict[str, Case] = {
    case.name: case
    for case in (
        # The shape: $50 against 4 parallel 8-instance trials of 3 h (about $1,470 in all).
        Case("p3.2xl-3h-$50", "ml.p3.2xlarge", 8, 4, 12, 3.0, Decimal(50)),
        # The same budget burnt four times faster: it is crossed minutes after the trials start.
        Case("p3.8xl-3h-$50", "ml.p3.8xlarge", 8, 4, 12, 3.0, Decimal(50)),
        # Fewer, bigger trials, a larger budget crossed well after start-up.
        Case("p3.16xl-3h-$300", "ml.p3.16xlarge", 8, 2, 6, 3.0, Decimal(300)),
        # Shorter trials: the budget is crossed by finished and running trials together, among trial events.
        Case("p3.2xl-40m-$250", "ml.p3.2xlarge", 8, 4, 16, 2 / 3, Decimal(250)),
    )
}


@dataclass(frozen=True)
class Governor:
    """How often the budget is judged by the sweep, and whether the event handlers judge it too."""

    name: str
    sweep_s: int
    judges_events: bool


def governors(sweep_s: int = SWEEP_S) -> tuple[Governor, Governor]:
    """The deployed governor (events + a sweep every ``sweep_s``) and the 15-minute poller."""
    return Governor("event+sweep", sweep_s, True), Governor("poller", POLL_S, False)


# -- one run ----------------------------------------------------------------------------------------------


@dataclass
class FixedLengthTrials:
    """Trials that train for ``hours`` +- 10 % (seeded), complete and report an objective; no failures."""

    hours: float

    def plan(self, tuning_job_config: Any, definition: Any, hyperparameters: Any, rng: random.Random) -> Any:
        from governor_client.amt.plans import TrialPlan  # noqa: PLC0415

        return TrialPlan(duration_s=self.hours * 3600 * rng.uniform(0.9, 1.1), objective_value=rng.uniform(0.8, 0.95))


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The handlers' Powertools logger at ERROR and their stdout (EMF lines) discarded."""
    from tuning_governor.observability import logger  # noqa: PLC0415

    previous = logger.log_level
    logger.setLevel("ERROR")
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        logger.setLevel(previous)


@dataclass
class _Rig:
    """One governed run's moving parts: the stand-in, the handlers' services, the delivery, the checks."""

    amt: Any
    services: Any
    clock: Any
    deliverer: Any
    checks: Any
    in_force: list[Any]
    policies: tuple[Any, Any]
    """(the policy a sweep judges with, the one events are judged with)"""

    def deliver_due(self, now: dt.datetime) -> None:
        from governor_client.simulator.runner import deliver_event  # noqa: PLC0415

        while True:
            for event in self.amt.drain_events():
                self.deliverer.submit(event, emitted_at=now)
            due = self.deliverer.due(now)
            if not due:
                return
            for delivery in due:
                deliver_event(delivery.event, self.services)

    def sweep(self, now: dt.datetime) -> None:
        from tuning_governor.app.sweep.run import run_sweep  # noqa: PLC0415

        self.in_force[0] = self.policies[0]  # the poller judges the budget here, and only here
        try:
            run_sweep(self.services)
        finally:
            self.in_force[0] = self.policies[1]
        self.deliver_due(now)

    def run_checks(self, now: dt.datetime, inputs: tuple[dict[str, Any], ...]) -> None:
        from tuning_governor.app.checks.budget import run_budget_check  # noqa: PLC0415

        for check in inputs:
            run_budget_check(check, self.services)
        self.deliver_due(now)

    def drive(self, created: dt.datetime, governor: Governor, name: str) -> int:
        """Run the stand-in, deliveries, checks and sweeps until the job ended; the sweeps it took.

        The sweep and the checks keep the deployed schedule (``governor_client.simulator.schedule``); the poller's
        checks are never asked for (its services have none)."""
        from governor_client.simulator.schedule import Schedule  # noqa: PLC0415
        from tuning_governor.adapters.checks import PendingChecks  # noqa: PLC0415

        checks = self.checks if self.checks is not None else PendingChecks()
        schedule = Schedule(every=dt.timedelta(seconds=governor.sweep_s), checks=checks)
        schedule.start(created)
        sweeps = 0
        self.deliver_due(self.clock.now())
        deadline = created + dt.timedelta(seconds=MAX_VIRTUAL_S)
        while not (self.amt.idle() and self.deliverer.pending == 0):
            candidates = [t for t in (self.amt.next_due(), self.deliverer.next_due(), schedule.next_due()) if t]
            now = max(min(candidates), self.clock.now())
            if now > deadline:
                raise RuntimeError(f"{name}: the job did not end")
            self.amt.advance_to(now)
            self.deliver_due(now)
            while (firing := schedule.pop_due(now)) is not None:
                if firing.kind == "checks":
                    self.run_checks(now, firing.inputs)
                else:
                    self.sweep(now)
                    sweeps += 1
        return sweeps


def run_once(case: Case, governor: Governor, seed: int) -> dict[str, Any]:
    """One governed job on the stand-in; the figures of the module docstring."""
    import boto3  # noqa: PLC0415
    from moto import mock_aws  # noqa: PLC0415

    from governor_client.amt import AmtStandIn, VirtualClock  # noqa: PLC0415
    from governor_client.offline.environment import build_environment  # noqa: PLC0415
    from governor_client.simulator.delivery import Deliverer, DeliveryFaults  # noqa: PLC0415
    from governor_client.simulator.requests import tuning_request  # noqa: PLC0415
    from tuning_governor.adapters.checks import PendingChecks  # noqa: PLC0415
    from tuning_governor.domain.pricing import bundled_catalog  # noqa: PLC0415
    from tuning_governor.policy import Policy  # noqa: PLC0415

    price_entry = bundled_catalog().price(REGION, case.instance_type)
    assert price_entry is not None, case.instance_type
    price = float(price_entry.usd_per_hour)
    created = T0 + dt.timedelta(seconds=random.Random(f"offset|{seed}").uniform(0, POLL_S))
    # The budget is the job's own tag; the poller's handlers read another tag, so they see no budget.
    judging = Policy.model_validate({"mode": "enforce"})
    recording_only = judging.model_copy(update={"budget_tag": "benchmark:budget-not-judged-on-events"})
    in_force = [judging if governor.judges_events else recording_only]

    with mock_aws(), _quiet():
        clock = VirtualClock(created)
        trials_behave = FixedLengthTrials(case.trial_hours)
        stand_in = AmtStandIn(
            clock=clock, seed=seed, behaviour=trials_behave, region=REGION, stop_delay_s=STOP_LATENCY_S
        )
        with stand_in as amt:
            env = build_environment(clock=clock.now, region=REGION, sns=False, quotas=False)
            env.services.policy = lambda: in_force[0]
            # The deployed governor also asks for a one-time check at the projected crossing; the poller
            # has nothing of the kind.
            checks = PendingChecks() if governor.judges_events else None
            env.services.checks = checks
            deliverer = Deliverer(
                DeliveryFaults(same_id_duplicate_rate=0.01, new_id_duplicate_rate=0.02, max_delay_s=5.0, seed=seed)
            )
            request = tuning_request(
                JOB,
                strategy="Bayesian",
                team="nlp",
                instance_type=case.instance_type,
                instance_count=case.instances,
                max_jobs=case.max_jobs,
                max_parallel=case.parallel,
                max_runtime_s=int(case.trial_hours * 3600 * 1.5),
                extra_tags={judging.budget_tag: str(case.budget_usd)},
            )
            env.sagemaker.create_hyper_parameter_tuning_job(**request)
            policies = (judging, judging if governor.judges_events else recording_only)
            rig = _Rig(amt, env.services, clock, deliverer, checks, in_force, policies)
            sweeps = rig.drive(created, governor, f"{case.name}/{governor.name}/{seed}")

            key = JOB.lower()
            decision = next(
                (
                    d
                    for d in env.services.store.decisions(key)
                    if d.get("rule") == "budget" and d.get("verdict") == "breach"
                ),
                None,
            )
            sagemaker = boto3.client("sagemaker", region_name=REGION)
            trials = [sagemaker.describe_training_job(TrainingJobName=name) for name in amt.training_jobs_of(JOB)]
            tuning = sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=JOB)

    bill = _Bill(trials, price)
    crossed = _crossing(bill.at, float(case.budget_usd), created, bill.last_end)
    decided = dt.datetime.fromisoformat(decision["at"]) if decision else None
    burn_per_s = case.parallel * case.instances * price / 3600
    bound = burn_per_s * (governor.sweep_s + STOP_LATENCY_S)
    overspend = bill.total - float(case.budget_usd)
    return {
        "case": case.name,
        "governor": governor.name,
        "seed": seed,
        "created": created.isoformat(),
        "status": tuning["HyperParameterTuningJobStatus"],
        "trials": len(trials),
        "budget_usd": float(case.budget_usd),
        "billed_usd": bill.total,
        "overspend_usd": overspend,
        "crossed": crossed.isoformat() if crossed else None,
        "decided": decided.isoformat() if decided else None,
        "action": decision.get("action") if decision else None,
        "lateness_s": (decided - crossed).total_seconds() if decided and crossed else None,
        "spent_at_decision_usd": bill.at(decided) if decided else None,
        "bound_usd": bound,
        "within_bound": overspend <= bound + 0.01,  # the billing's whole-second rounding
        # |bill - budget| in minutes of the job's full-parallel burn (target <= 0.5 for event+sweep)
        "off_budget_min": abs(overspend) / (burn_per_s * 60),
        "sweeps": sweeps,
    }


class _Bill:
    """What the job's trials were billed: in all, and by any moment (each trial billed from its start)."""

    def __init__(self, trials: Sequence[Mapping[str, Any]], price: float) -> None:
        self.price = price
        self.intervals = [
            (t["TrainingStartTime"], t["TrainingEndTime"], int(t["ResourceConfig"]["InstanceCount"]))
            for t in trials
            if t.get("TrainingStartTime") and t.get("TrainingEndTime")
        ]
        self.total = sum(
            int(t.get("BillableTimeInSeconds") or 0) * int(t["ResourceConfig"]["InstanceCount"]) * price / 3600
            for t in trials
        )
        self.last_end = max(end for _, end, _ in self.intervals)

    def at(self, moment: dt.datetime) -> float:
        total = 0.0
        for start, end, count in self.intervals:
            seconds = (min(moment, end) - start).total_seconds()
            total += max(0.0, seconds) * count * self.price / 3600
        return total


def _crossing(billed_at: Any, budget: float, start: dt.datetime, end: dt.datetime) -> dt.datetime | None:
    """When the billed cost first reached ``budget`` (bisection to the second); None if it never did."""
    if billed_at(end) < budget:
        return None
    low, high = start, end
    while (high - low).total_seconds() > 1:
        middle = low + (high - low) / 2
        if billed_at(middle) >= budget:
            high = middle
        else:
            low = middle
    return high


# -- the table --------------------------------------------------------------------------------------------


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _past(run: dict[str, Any]) -> float:
    """How far past the budget the billed cost was when the governor decided (the stop latency excluded)."""
    spent = run["spent_at_decision_usd"]
    return float(spent) - float(run["budget_usd"]) if spent is not None else float(run["overspend_usd"])


def _ratio(ours: float, theirs: float) -> str:
    return f"{ours / theirs:.2f}" if theirs > 0 else "-"


def _period(seconds: int) -> str:
    return f"{seconds // 60}-minute" if seconds % 60 == 0 else f"{seconds}-second"


def _lateness(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _money(value: float) -> str:
    return f"${value:,.2f}"


def _minutes(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 60:.1f}"


def render(
    runs: list[dict[str, Any]], *, seeds: int, command: str, code: str, took_s: float, sweep_s: int = SWEEP_S
) -> str:
    """The RESULTS.md section: per scenario medians of both governors, their ratio and the bound check."""
    lines = [
        START_MARKER,
        f"## Overspend: event-driven governor + {_period(sweep_s)} sweep vs a {_period(POLL_S)} poller",
        "",
        f"- command: `{command}` (from the repository root)",
        f"- date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; code: {code}; {seeds} seeds per scenario;"
        f" took {took_s / 60:.1f} min",
        f"- stop latency {STOP_LATENCY_S:.0f} s (StopHyperParameterTuningJob to the trials' Stopped, when"
        " billing ends); EventBridge delivery: 1 % same-id and 2 % new-id duplicates, delays up to 5 s",
        "- overspend = the job's billed cost once stopped - its budget (medians over the seeds);"
        " ratio = median event+sweep / median poller; bound = (sweep interval + stop latency) x the"
        " job's full-parallel burn; lateness = budget decision - the moment billed cost reached the budget",
        "",
        "- off budget = |billed - budget| in minutes of the job's full-parallel burn, event+sweep (target:"
        f" <= {OFF_BUDGET_TARGET_MIN} for every run); the per-run list gives each run's",
        "",
        "| scenario | full-parallel burn $/h | overspend, event+sweep | overspend, poller | ratio (target <= 0.25)"
        f" | past budget at the decision, event+sweep / poller (ratio) | event+sweep within bound ({_period(sweep_s)})"
        " | poller within bound (15 min) | lateness min, event+sweep / poller"
        f" | off budget, event+sweep: worst min, runs <= {OFF_BUDGET_TARGET_MIN} |",
        "|---|---:|---:|---:|---:|---|---|---|---|---|",
    ]
    pooled: dict[str, list[float]] = {"event+sweep": [], "poller": []}
    for name in dict.fromkeys(r["case"] for r in runs):
        case = CASES[name]
        mine = [r for r in runs if r["case"] == name and r["governor"] == "event+sweep"]
        poll = [r for r in runs if r["case"] == name and r["governor"] == "poller"]
        pooled["event+sweep"] += [r["overspend_usd"] for r in mine]
        pooled["poller"] += [r["overspend_usd"] for r in poll]
        ours, theirs = _median([r["overspend_usd"] for r in mine]), _median([r["overspend_usd"] for r in poll])
        at_ours, at_theirs = (_median([_past(r) for r in group]) for group in (mine, poll))
        price = float(mine[0]["bound_usd"]) / (sweep_s + STOP_LATENCY_S) * 3600
        late = [_lateness([r["lateness_s"] for r in group if r["lateness_s"] is not None]) for group in (mine, poll)]
        lines.append(
            f"| {name}: {case.describe()} | {price:,.0f} | {_money(ours)} | {_money(theirs)} |"
            f" {_ratio(ours, theirs)} | {_money(at_ours)} / {_money(at_theirs)} ({_ratio(at_ours, at_theirs)}) |"
            f" {sum(r['within_bound'] for r in mine)}/{len(mine)} (bound {_money(mine[0]['bound_usd'])}) |"
            f" {sum(r['within_bound'] for r in poll)}/{len(poll)} (bound {_money(poll[0]['bound_usd'])}) |"
            f" {_minutes(late[0])} / {_minutes(late[1])} |"
            f" {max(r['off_budget_min'] for r in mine):.2f};"
            f" {sum(r['off_budget_min'] <= OFF_BUDGET_TARGET_MIN for r in mine)}/{len(mine)} |"
        )
    ours, theirs = _median(pooled["event+sweep"]), _median(pooled["poller"])
    lines.append(f"| all runs pooled | | {_money(ours)} | {_money(theirs)} | {_ratio(ours, theirs)} | | | | | |")
    lines += ["", "Per run (overspend $, event+sweep (its off budget, min of burn) / poller, by seed):", ""]
    for name in dict.fromkeys(r["case"] for r in runs):
        pairs = []
        for seed in sorted({r["seed"] for r in runs if r["case"] == name}):
            by = {r["governor"]: r for r in runs if r["case"] == name and r["seed"] == seed}
            pairs.append(
                f"seed {seed}: {by['event+sweep']['overspend_usd']:,.2f}"
                f" ({by['event+sweep']['off_budget_min']:.2f}) / {by['poller']['overspend_usd']:,.2f}"
            )
        lines.append(f"- {name}: " + "; ".join(pairs))
    lines += ["", END_MARKER]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=8, help="seeds per scenario (default 8)")
    parser.add_argument("--scenarios", nargs="+", choices=sorted(CASES), default=list(CASES), metavar="NAME")
    parser.add_argument(
        "--sweep-seconds", type=int, default=SWEEP_S, help="the event+sweep governor's sweep interval (default 300)"
    )
    parser.add_argument("--write", action="store_true", help="replace the overspend section of benchmarks/RESULTS.md")
    parser.add_argument("--results", type=Path, default=RESULTS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.write and args.sweep_seconds != SWEEP_S:
        parser.error("--write records the deployed 5-minute sweep only; print other intervals without it")
    import warnings  # noqa: PLC0415

    warnings.filterwarnings("ignore", message="No application metrics to publish")
    command = " ".join([".venv/bin/python benchmarks/overspend.py", *(argv if argv is not None else sys.argv[1:])])
    code = git_head()
    started = time.perf_counter()
    runs: list[dict[str, Any]] = []
    for name in args.scenarios:
        for seed in range(1, args.seeds + 1):
            for governor in governors(args.sweep_seconds):
                run = run_once(CASES[name], governor, seed)
                runs.append(run)
                print(
                    f"{name:<18} seed {seed} {governor.name:<12} overspend {_money(run['overspend_usd']):>11}"
                    f"  decided {run['decided'] or '-'}  lateness {_minutes(run['lateness_s'])} min"
                    f"  bound {_money(run['bound_usd'])} {'ok' if run['within_bound'] else 'EXCEEDED'}"
                    f"  off budget {run['off_budget_min']:.2f} min",
                    file=sys.stderr,
                    flush=True,
                )
    took = time.perf_counter() - started
    section = render(runs, seeds=args.seeds, command=command, code=code, took_s=took, sweep_s=args.sweep_seconds)
    print(section)
    if args.write:
        write_section(args.results, section, start=START_MARKER, end=END_MARKER)
        print(f"wrote the overspend section of {args.results}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
