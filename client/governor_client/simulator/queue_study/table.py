"""The Must-show table of issue 20: each mode on the same arrivals, summed or pooled over seeds."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from datetime import timedelta

from governor_client.simulator.queue_study.engine import MODES, Mode, Outcome, simulate
from governor_client.simulator.queue_study.workload import HOURS, QUOTA, START, TEAMS, arrivals


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def _usage_over_share(outcome: Outcome, team: str) -> tuple[float, float]:
    """Mean and peak of the team's held instances over its share, across the arrival day, hour by hour."""
    series = outcome.usage.get(team, [])
    samples = []
    for hour in range(HOURS):
        at = START + timedelta(hours=hour)
        held = next((h for t, h in reversed(series) if t <= at), 0)
        samples.append(held / TEAMS[team][0])
    return statistics.fmean(samples), max(samples)


def _day_use(outcome: Outcome) -> float:
    """Instance-hours held during the arrival day over the quota's (QUOTA x HOURS)."""
    end = START + timedelta(hours=HOURS)
    total = 0.0
    for series in outcome.usage.values():
        for (at, held), (nxt, _) in zip(series, [*series[1:], (end, 0)], strict=True):
            span = (min(nxt, end) - at) / timedelta(hours=1)
            total += held * max(0.0, span)
    return total / (QUOTA * HOURS)


def measure(seeds: Sequence[int]) -> dict[Mode, dict[str, object]]:
    """Per mode: jobs, killed, refused, preempted, trials wasted, useful and held instance-hours,
    quota use over the drained run, and per team p50/p95 wait (minutes) and use against share."""
    rows: dict[Mode, dict[str, object]] = {}
    outcomes: dict[Mode, list[Outcome]] = {mode: [] for mode in MODES}
    jobs = 0
    for seed in seeds:
        day = arrivals(seed)
        jobs += len(day)
        for mode in MODES:
            outcomes[mode].append(simulate(mode, day))
    for mode, runs in outcomes.items():
        span = sum(r.makespan / timedelta(hours=1) for r in runs)
        teams = {}
        for team in TEAMS:
            waits = [w for r in runs for w in r.waits.get(team, [])]
            use = [_usage_over_share(r, team) for r in runs]
            teams[team] = {
                "p50_wait_min": _percentile(waits, 0.5),
                "p95_wait_min": _percentile(waits, 0.95),
                "mean_use_of_share": statistics.fmean(u[0] for u in use),
                "peak_use_of_share": max(u[1] for u in use),
            }
        rows[mode] = {
            "jobs": jobs,
            "killed": sum(len(r.killed) for r in runs),
            "refused": sum(len(r.refused) for r in runs),
            "preempted": sum(r.preempted for r in runs),
            "trials_wasted": sum(r.trials_wasted for r in runs),
            "trials_never_run": sum(r.trials_never_run for r in runs),
            "useful_instance_hours": sum(r.useful_instance_hours for r in runs),
            "quota_use_day": statistics.fmean(_day_use(r) for r in runs),
            "quota_use_drained": sum(r.held_instance_hours for r in runs) / (QUOTA * span) if span else 0.0,
            "drain_hours": span / len(runs),
            "teams": teams,
        }
    return rows


def render(rows: dict[Mode, dict[str, object]], seeds: Sequence[int]) -> str:
    """The table as Markdown."""
    head = f"{len(seeds)} seeds ({', '.join(map(str, seeds))}); quota {QUOTA}; shares " + ", ".join(
        f"{t} {s}" for t, (s, _) in TEAMS.items()
    )
    lines = [
        head,
        "",
        "| mode | jobs | killed | refused | preempted | trials wasted | trials never run | useful inst-h | quota use, day |"
        " quota use, to drained | drain h |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for mode, row in rows.items():
        lines.append(
            f"| {mode} | {row['jobs']} | {row['killed']} | {row['refused']} | {row['preempted']} |"
            f" {row['trials_wasted']} | {row['trials_never_run']} | {row['useful_instance_hours']:.0f} | {row['quota_use_day']:.0%} |"
            f" {row['quota_use_drained']:.0%} |"
            f" {row['drain_hours']:.1f} |"
        )
    lines += ["", "| mode | team | p50 wait min | p95 wait min | mean use / share | peak use / share |"]
    lines.append("|---|---|---:|---:|---:|---:|")
    for mode, row in rows.items():
        teams = row["teams"]
        assert isinstance(teams, dict)
        for team, t in teams.items():
            lines.append(
                f"| {mode} | {team} | {t['p50_wait_min']:.0f} | {t['p95_wait_min']:.0f} |"
                f" {t['mean_use_of_share']:.2f} | {t['peak_use_of_share']:.2f} |"
            )
    return "\n".join(lines)
