"""The pictures of the report and replay pages, read off the figures matplotlib would save: what is
marked where, the axes' range and labels, and that no legend or label sits on the data."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from governor_client.replay.figures import StopRow
from governor_client.replay.timeline import SpendPoint
from governor_client.report.page import JobView
from tuning_governor.models.records import TrialRecord
from tuning_governor.policy import parse_policy

pytest.importorskip("matplotlib")

T = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def at(minute: float) -> datetime:
    return T + timedelta(minutes=minute)


def trial(
    n: int, *, status: str = "Completed", end: float, value: float | None = 0.5, cost: float = 2.0
) -> TrialRecord:
    return TrialRecord(
        job_key="nlp-bert-hpo",
        training_job_name=f"nlp-bert-hpo-{n:03d}",
        status=status,
        region="us-east-1",
        instances={"ml.p3.8xlarge": 8},
        instance_count=8,
        spot=False,
        training_seconds=600,
        billable_seconds=600,
        billable_instance_seconds=4800,
        warm_pool_seconds=0,
        warm_pool_instance_seconds=0,
        hourly_usd=Decimal("117.50"),
        cost_usd=Decimal(str(cost)),
        warm_pool_cost_usd=Decimal(0),
        spot_savings_usd=Decimal(0),
        objective_name="validation:auc" if value is not None else None,
        objective_value=value,
        start_time=at(end - 10),
        end_time=at(end),
        event_id=f"e{n}",
        event_time=at(end),
    )


def decision(rule: str, action: str, when: datetime, **numbers: Any) -> dict[str, Any]:
    return {"rule": rule, "verdict": "breach", "action": action, "at": when.isoformat(), "numbers": numbers}


def view(trials: list[TrialRecord], decisions: list[dict[str, Any]], **meta: Any) -> JobView:
    job = JobView(
        key="nlp-bert-hpo",
        name="nlp-bert-hpo",
        team="nlp",
        status=meta.get("status", "Stopped"),
        created=meta.get("created", T),
        objective_type="Maximize",
        trials=trials,
        decisions=decisions,
        summary=None,
    )
    job.budget_check_at = meta.get("budget_check_at")
    return job


def boxes_overlap(a: Any, b: Any) -> bool:
    return bool(a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1)


def assert_legends_off_the_data(figure: Any) -> None:
    """Every legend sits outside every plot area, and no two texts drawn on a figure overlap."""
    renderer = figure.canvas.get_renderer()
    areas = [axes.get_window_extent(renderer) for axes in figure.axes]
    legends = [axes.get_legend() for axes in figure.axes if axes.get_legend() is not None] + list(figure.legends)
    for legend in legends:
        box = legend.get_window_extent(renderer)
        assert not any(boxes_overlap(box, area) for area in areas), "a legend is drawn over a plot area"
    texts = [t for axes in figure.axes for t in axes.texts if t.get_visible() and t.get_text()]
    extents = [t.get_window_extent(renderer) for t in texts]
    for i, first in enumerate(extents):
        for j in range(i + 1, len(extents)):
            assert not boxes_overlap(first, extents[j]), f"{texts[i].get_text()!r} overlaps {texts[j].get_text()!r}"


def test_the_cost_plot_marks_the_earliest_stop_not_the_first_in_key_order_and_the_budget_check() -> None:
    # Given nlp-bert-hpo: its budget stop (09:49) comes first in key order, the team-budget stop at 09:43:45
    decisions = [
        decision("budget", "stopped", at(49), budget_usd=50, spent_usd=51),
        decision("team-budget", "stopped", at(43.75), budget_usd=1000, spent_usd=1001),
    ]
    job = view([trial(n, end=20 + 3 * n) for n in range(8)], decisions, budget_check_at=at(47).isoformat())
    # Then the job's stop is the earliest one
    assert job.stop == (at(43.75), "team-budget: stopped")
    from governor_client.report.pictures.job import cost_figure

    figure = cost_figure(job)
    assert figure is not None
    [axes] = figure.axes
    labels = [line.get_label() for line in axes.get_lines()]
    assert any(label.startswith("stop 09:43:45Z (team-budget)") for label in labels), labels
    assert any(label.startswith("budget check") for label in labels), labels
    assert "UTC" in axes.get_xlabel()
    assert_legends_off_the_data(figure)


def test_a_job_stopped_on_arrival_gets_no_cost_plot_but_a_sentence() -> None:
    from governor_client.report.pictures.job import cost_figure, job_note

    job = view([], [decision("concurrency", "stopped", at(10))])
    assert cost_figure(job) is None
    assert job_note(job) == "Stopped on arrival, nothing billed (concurrency: stopped at 2026-11-30 09:10:00Z)."


def test_the_cost_axes_span_the_job_and_start_at_zero_dollars() -> None:
    from governor_client.report.pictures.job import cost_figure

    job = view([trial(1, end=20, cost=0.04), trial(2, end=25, cost=0.02)], [])
    figure = cost_figure(job)
    assert figure is not None
    [axes] = figure.axes
    import matplotlib.dates as mdates

    low, high = (mdates.num2date(x) for x in axes.get_xlim())
    assert T - timedelta(minutes=5) <= low and high <= at(30)
    bottom, top = axes.get_ylim()
    assert bottom == 0 and 0.06 <= top <= 0.1


def test_hyperband_trials_stopped_early_are_drawn_apart_from_completed_ones() -> None:
    from governor_client.report.pictures.job import objective_figure

    trials = [trial(1, end=20, value=0.6), trial(2, status="Stopped", end=22, value=0.52), trial(3, end=30, value=0.8)]
    figure = objective_figure(view(trials, [], status="Completed"))
    assert figure is not None
    [axes] = figure.axes
    series = {line.get_label(): len(line.get_xdata()) for line in axes.get_lines()}
    assert series.get("completed") == 2 and series.get("stopped early") == 1, series
    assert_legends_off_the_data(figure)


def test_team_spend_is_one_panel_per_team_so_a_small_team_is_readable_beside_a_large_one() -> None:
    from governor_client.report.pictures.spend import spend_figure

    policy = parse_policy("teams: {nlp: {monthly_budget_usd: 20000}, speech: {monthly_budget_usd: 40}}", "t")

    def points(scale: float) -> list[SpendPoint]:
        return [
            SpendPoint(
                at=at(m),
                month="2026-11",
                finished_usd=Decimal(str(scale * m)),
                accrued_usd=Decimal(0),
                lower_bound=False,
            )
            for m in range(0, 60, 5)
        ]

    spend = {"nlp": points(400.0), "speech": points(0.8)}
    rows = [
        StopRow(1, "speech-asr", "speech", "team-budget", "breach", "stopped", at(50), True, "spent"),
        StopRow(2, "nlp-bert-hpo", "nlp", "team-budget", "breach", "stopped", at(51), True, "spent"),
    ]
    figure = spend_figure(spend, rows, policy)
    assert figure is not None
    assert len(figure.axes) == 2
    small = next(a for a in figure.axes if "speech" in a.get_title(loc="left"))
    # the small team's line fills its own panel: its budget ($40) is in view, not squashed near $0
    assert small.get_ylim()[1] < 100
    legend = small.get_legend()
    assert legend is not None and "monthly budget $40.00" in [t.get_text() for t in legend.get_texts()]
    assert all("UTC" in a.get_xlabel() for a in figure.axes if a.get_xlabel()) and figure.axes[-1].get_xlabel()
    assert_legends_off_the_data(figure)
