"""`tuning-governor report`'s HTML page, loaded in headless Chromium: every plot decodes, no script error."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from governor_sim.report import collect, write_report
from tests.integration.conftest import World
from tests.integration.test_governance import ENFORCE, _budget_job, launch_two_teams

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--virtual-time-budget=5000",
]


@pytest.fixture(scope="module")
def chromium() -> str:
    return chromium_path()


def chromium_path() -> str:
    """Debian's Chromium; without it the test fails in CI (env CI set: .ci/run installs it) and is skipped locally."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        message = "chromium not found: apt-get install chromium"
        if os.environ.get("CI", "").lower() not in {"", "0", "false"}:
            pytest.fail(message)
        pytest.skip(message)
    return found


def browse(chromium: str, page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - the machine's Chromium on a file this test wrote
        [
            chromium,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            *extra,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_report_of_a_governed_account_shows_every_plot_in_a_browser(
    world: World, chromium: str, tmp_path: Path
) -> None:
    # Given an account with a job stopped on its budget and one stopped on arrival (concurrency)
    stops, _ = _budget_job(world, ENFORCE, {"governance:budget-usd": "50"})
    assert stops == ["p3-budget"]
    store = world.env.services.store
    # When the report is written for the whole account
    page = write_report(store, tmp_path / "report", title="governed account")
    views = collect(store)
    # Then the page names every job, one PNG per plot is beside it ...
    assert {v.key for v in views} == {"p3-budget"}
    text = page.read_text()
    assert "p3-budget" in text and "budget" in text
    pngs = sorted(p.name for p in page.parent.glob("*.png"))
    assert pngs == ["account-ml.p3.8xlarge.png", "p3-budget-cost.png", "p3-budget-objective.png"]
    # ... and Chromium decodes every plot, with no script error
    dom = browse(chromium, page, tmp_path / "profile", "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    expected = re.search(r'data-plots-expected="(\d+)"', dom.stdout)
    loaded = re.search(r'data-plots-loaded="(\d+)"', dom.stdout)
    assert expected is not None and loaded is not None
    assert int(expected.group(1)) == 2
    assert loaded.group(1) == expected.group(1), "the browser did not decode every plot"
    assert "Uncaught" not in dom.stderr
    shot = tmp_path / "report.png"
    browse(chromium, page, tmp_path / "profile-shot", f"--screenshot={shot}", "--window-size=1400,1800")
    assert shot.exists() and shot.stat().st_size > 10_000
    print(f"screenshot of the report page: {shot}")


def test_a_team_or_month_narrows_the_report_and_a_concurrency_limit_is_drawn(world: World, tmp_path: Path) -> None:
    world.amt.set_applied_quota("ml.p3.2xlarge", 8)
    from tests.integration.test_governance import use_policy

    use_policy(world, ENFORCE)
    launch_two_teams(world)
    for _ in range(30):
        world.pump(60)
    store = world.env.services.store
    every = collect(store)
    teams = {v.team for v in every}
    assert len(teams) == 2
    [team] = sorted(t for t in teams if t)[:1]
    assert {v.team for v in collect(store, team=team)} == {team}
    assert collect(store, month="1999-01") == []
    stopped = [v for v in every if any(d.get("rule") == "concurrency" for d in v.decisions)]
    assert stopped and stopped[0].limits() == {"ml.p3.2xlarge": 8}
    # a plot with nothing to draw is left out, and the page says which are missing
    page = write_report(store, tmp_path / "r", title="t", job=stopped[0].name)
    text = page.read_text()
    drawn = sorted(
        p.name.removeprefix(f"{stopped[0].key}-").removesuffix(".png")
        for p in page.parent.glob(f"{stopped[0].key}-*.png")
    )
    assert f'data-plots-expected="{len(drawn)}"' in text
    assert "objective" not in drawn, "the job stopped on arrival has no finished trial with an objective"
    assert "Not drawn: objective" in text


def _two_teams_on_a_quota_of_8(world: World) -> None:
    """vision runs 4 x ml.p3.2xlarge; speech arrives asking for 3 x 2 = 6 and is stopped on arrival."""
    world.amt.set_applied_quota("ml.p3.2xlarge", 8)
    from tests.integration.test_governance import use_policy

    use_policy(world, ENFORCE)
    launch_two_teams(world)
    for _ in range(30):
        world.pump(60)


def test_the_account_view_stacks_every_team_against_the_quota_and_marks_the_breaching_arrival(
    world: World, tmp_path: Path
) -> None:
    # Given vision's 4 instances running when speech's job asks for 6 more against a quota of 8
    _two_teams_on_a_quota_of_8(world)
    store = world.env.services.store
    # When the account's report is written
    page = write_report(store, tmp_path / "r", title="account")
    text = page.read_text()
    # Then one account view per instance type is drawn, beside the page and on it
    assert (page.parent / "account-ml.p3.2xlarge.png").exists()
    assert "Instances against the quota" in text
    from governor_sim.pictures.account import account_usage

    usage = account_usage(collect(store))["ml.p3.2xlarge"]
    # ... usage by team and job, the quota the governor applied, and the arrival that breached it
    assert {(h.team, h.job) for h in usage.holdings} == {("vision", "team-a-hpo")}
    [breach] = usage.breaches
    assert (breach.job, breach.team, breach.usage, breach.demand, breach.limit) == ("team-b-hpo", "speech", 4, 6, 8)
    assert usage.level_at(breach.at) == breach.usage, "the stacked usage at the breach is what the governor counted"
    assert [limit for _, limit, _ in usage.limits] == [8]


def test_a_job_stopped_on_arrival_has_no_empty_cost_plot(world: World, tmp_path: Path) -> None:
    _two_teams_on_a_quota_of_8(world)
    page = write_report(world.env.services.store, tmp_path / "r", title="t", job="team-b-hpo")
    assert not (page.parent / "team-b-hpo-cost.png").exists()
    assert "Stopped on arrival, nothing billed" in page.read_text()
