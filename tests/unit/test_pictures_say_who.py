"""The job and team pictures say who did what: a would-stop is not a stop, Hyperband's early stops are
Hyperband's, a budget far above a team's spend does not flatten it. Read off the matplotlib figures."""

from __future__ import annotations

from decimal import Decimal

import pytest

from governor_client.replay.timeline import SpendPoint
from tests.unit.test_pictures import assert_legends_off_the_data, at, decision, trial, view
from tuning_governor.policy import parse_policy

pytest.importorskip("matplotlib")


def test_a_would_stop_in_monitor_mode_is_drawn_as_a_would_stop_not_a_stop() -> None:
    from governor_client.report.pictures.job import cost_figure

    # Given nlp-bert-pilot in monitor mode: a budget would-stop at 09:31, nothing stopped, the job ran on
    job = view(
        [trial(n, end=10 + 4 * n) for n in range(12)],
        [decision("budget", "would-stop", at(31), budget_usd=50, spent_usd=47.68)],
        status="Completed",
    )
    figure = cost_figure(job)
    assert figure is not None
    labels = [line.get_label() for line in figure.axes[0].get_lines()]
    # Then its marker says would-stop, and no label claims a stop
    assert any(label.startswith("would-stop 09:31:00Z (budget") for label in labels), labels
    assert not any(label.startswith("stop ") for label in labels), labels
    assert_legends_off_the_data(figure)


def test_trials_are_cut_by_the_jobs_stop_only_when_the_job_was_really_stopped_while_they_ran() -> None:
    from governor_client.report.pictures.job import trial_kind

    stop = at(49)
    running_at_stop = trial(1, status="Stopped", end=50)  # started 09:40, ended after the stop
    started_after = trial(2, status="Stopped", end=62)  # started 09:52: after the stop
    # A stopped job: the trial running at the stop was cut by it; one started later was Hyperband's
    assert trial_kind(running_at_stop, stop) == "cut by the job's stop"
    assert trial_kind(started_after, stop) == "stopped early"


def test_a_replayed_stop_cuts_no_trial_of_the_history_that_ran_on() -> None:
    from governor_client.report.pictures.job import objective_figure

    # Given a replay: the policy stopped the job at 09:49, but the captured history ran on (Completed),
    # and Hyperband stopped trials early after that time
    trials = [trial(1, end=20, value=0.6), trial(2, status="Stopped", end=50, value=0.5), trial(3, end=70, value=0.7)]
    trials.append(trial(4, status="Stopped", end=75, value=0.55))
    job = view(trials, [decision("budget", "stopped", at(49), budget_usd=50, spent_usd=51)], status="Completed")
    figure = objective_figure(job)
    assert figure is not None
    series = {line.get_label(): len(line.get_xdata()) for line in figure.axes[0].get_lines()}
    # Then every Stopped trial is drawn as Hyperband's early stop, none as cut by the job's stop
    assert series.get("stopped early") == 2, series
    assert "cut by the job's stop" not in series


def test_a_small_teams_panel_keeps_its_own_scale_when_its_budget_is_far_above_and_still_says_the_budget() -> None:
    from governor_client.report.pictures.spend import spend_figure

    policy = parse_policy("teams: {vision: {monthly_budget_usd: 20000}}", "t")
    points = [
        SpendPoint(
            at=at(m), month="2026-11", finished_usd=Decimal("0.03") * m, accrued_usd=Decimal(0), lower_bound=False
        )
        for m in range(0, 60, 5)
    ]
    figure = spend_figure({"vision": points}, [], policy)
    assert figure is not None
    [axes] = figure.axes
    # $1.65 of $20,000: the line fills the panel, and the budget is still named on it
    assert axes.get_ylim()[1] < 10, axes.get_ylim()
    said = [t.get_text() for t in axes.texts] + [t.get_text() for t in axes.get_legend().get_texts()]
    assert any("$20,000" in text for text in said), said
    assert_legends_off_the_data(figure)
