"""`tuning-governor report`'s HTML page, loaded in headless Chromium: every plot decodes, no script error."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from governor_client.report.page import collect, write_report
from tests.integration.conftest import World
from tests.integration.test_governance import ENFORCE, _budget_job, launch_two_teams

# One worker runs this module: its module-scoped (or cached) runs are built once, not once per worker.
pytestmark = pytest.mark.xdist_group("html_report")

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
    from governor_client.report.pictures.account import account_usage

    usage = account_usage(collect(store))["ml.p3.2xlarge"]
    # ... usage by team and job, the quota the governor applied, and the arrival that breached it
    assert {(h.team, h.job) for h in usage.holdings} == {("vision", "team-a-hpo")}
    [breach] = usage.breaches
    assert (breach.job, breach.team, breach.usage, breach.demand, breach.limit) == ("team-b-hpo", "speech", 4, 6, 8)
    assert usage.level_at(breach.at) == breach.usage, "the stacked usage at the breach is what the governor counted"
    assert [limit for _, limit, _ in usage.limits] == [8]


def test_a_job_stopped_on_arrival_has_no_empty_cost_plot(world: World, tmp_path: Path) -> None:
    _two_teams_on_a_quota_of_8(world)
    # (a folder reused from an earlier run, as demo-report/ is: its stale pictures go)
    (tmp_path / "r").mkdir()
    for stale in ("team-b-hpo-cost.png", "team-b-hpo-instances.png", "account-ml.m5.xlarge.png"):
        (tmp_path / "r" / stale).write_bytes(b"old")
    page = write_report(world.env.services.store, tmp_path / "r", title="t", job="team-b-hpo")
    assert sorted(p.name for p in page.parent.glob("*.png")) == ["account-ml.p3.2xlarge.png"]
    # (one job's page still shows the account: vision's reservation is what speech's arrival did not fit beside)
    from governor_client.report.pictures.account import account_usage, window

    views = collect(world.env.services.store)
    shown = [v for v in views if v.name == "team-b-hpo"]
    assert {h.job for h in account_usage(views, window(shown))["ml.p3.2xlarge"].holdings} == {"team-a-hpo"}
    assert "vision \\u002f team-a-hpo" in page.read_text()  # the chart trace, as Plotly escapes "/"
    assert not (page.parent / "team-b-hpo-cost.png").exists()
    assert "Stopped on arrival, nothing billed" in page.read_text()


# -- the pages as a reader sees them: screenshots in headless Chromium ----------------------------------
REFERENCES = Path(__file__).parent / "references"
"""Small greyscale thumbnails of pictures as they should look; ``REGENERATE_SCREENSHOTS=1`` rewrites them."""
HASH_SIZE = 16
MAX_HASH_DISTANCE = 0.12
"""Share of the 16 x 16 difference-hash bits that may differ from the reference (fonts, anti-aliasing);
a blank picture is about 0.23 from a chart's reference, the chart mirrored about 0.35."""
MAX_MEAN_DIFFERENCE = 0.03
"""Mean absolute grey-level difference (0..1) of 60 x 20 thumbnails; blank vs a chart: about 0.07."""


def page_boxes(chromium: str, page: Path, profile: Path) -> list[dict[str, Any]]:
    """Where the page put each picture, chart, chart legend and chart plot area (its ``data-boxes``)."""
    dom = browse(chromium, page, profile, "--dump-dom", "--window-size=1400,3000")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "Uncaught" not in dom.stderr
    found = re.search(r'data-boxes="([^"]*)"', dom.stdout)
    assert found is not None, "the page's script did not run"
    boxes: list[dict[str, Any]] = json.loads(html.unescape(found.group(1)))
    return boxes


def screenshot(chromium: str, page: Path, out: Path, height: int) -> Any:
    """The page as Chromium draws it, 1400 px wide, as a greyscale PIL image."""
    from PIL import Image

    browse(chromium, page, out.parent / f"profile-{out.stem}", f"--screenshot={out}", f"--window-size=1400,{height}")
    assert out.exists(), "Chromium wrote no screenshot"
    return Image.open(out).convert("L")


def region(image: Any, box: dict[str, Any]) -> Any:
    return image.crop((int(box["x"]), int(box["y"]), int(box["x"] + box["w"]), int(box["y"] + box["h"])))


def inked(picture: Any) -> float:
    """Share of pixels darker than the page's white background (lines, areas, text)."""
    histogram = picture.histogram()
    return 1.0 - sum(histogram[235:]) / max(1, sum(histogram))


def drawn(picture: Any) -> float:
    """Share of pixels far (> 40 grey levels) from the commonest one: data drawn on a plot area's
    background (gridlines on Plotly's light grey do not count)."""
    histogram = picture.histogram()
    background = max(range(256), key=lambda level: histogram[level])
    far = sum(count for level, count in enumerate(histogram) if abs(level - background) > 40)
    return far / max(1, sum(histogram))


def difference_hash(picture: Any) -> list[bool]:
    """A perceptual hash: is each cell brighter than its right-hand neighbour, on a 17 x 16 thumbnail."""
    small = picture.resize((HASH_SIZE + 1, HASH_SIZE))
    pixels = list(small.tobytes())
    width = HASH_SIZE + 1
    return [pixels[r * width + c] > pixels[r * width + c + 1] for r in range(HASH_SIZE) for c in range(HASH_SIZE)]


def mean_difference(first: Any, second: Any) -> float:
    a, b = (list(p.resize((60, 20)).tobytes()) for p in (first, second))
    return sum(abs(x - y) for x, y in zip(a, b, strict=True)) / len(a) / 255


def assert_looks_like_reference(picture: Any, name: str) -> None:
    """The picture is perceptually ``references/<name>.png`` (a small thumbnail, written when regenerating):
    its difference hash and its grey levels are close (see the tolerances above)."""
    from PIL import Image

    reference = REFERENCES / f"{name}.png"
    thumbnail = picture.resize((240, max(1, round(240 * picture.height / picture.width))))
    if os.environ.get("REGENERATE_SCREENSHOTS") or not reference.exists():
        if os.environ.get("CI", "").lower() not in {"", "0", "false"} and not reference.exists():
            pytest.fail(f"no reference screenshot {reference}")
        REFERENCES.mkdir(exist_ok=True)
        thumbnail.save(reference, optimize=True)
    expected = Image.open(reference).convert("L")
    bits = [a != b for a, b in zip(difference_hash(expected), difference_hash(thumbnail), strict=True)]
    distance = sum(bits) / len(bits)
    grey = mean_difference(expected, thumbnail.resize(expected.size))
    assert distance <= MAX_HASH_DISTANCE and grey <= MAX_MEAN_DIFFERENCE, (
        f"{name} differs from its reference: hash {distance:.0%}, grey levels {grey:.3f}"
    )


def overlaps(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return bool(
        a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"] and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]
    )


def test_the_account_page_in_a_browser_shows_the_breach_against_the_quota_and_no_empty_or_covered_picture(
    world: World, chromium: str, tmp_path: Path
) -> None:
    # Given vision's job holding 4 ml.p3.2xlarge when speech's asks for 6 more against a quota of 8
    _two_teams_on_a_quota_of_8(world)
    page = write_report(world.env.services.store, tmp_path / "report", title="Two teams on a quota of 8")
    # When Chromium lays the page out and draws it
    boxes = page_boxes(chromium, page, tmp_path / "profile")
    shot = screenshot(chromium, page, tmp_path / "account-page.png", 3000)
    # Then the account view of ml.p3.2xlarge is an interactive chart whose legend sits beside its plot area
    charts = {b["name"]: b for b in boxes if b["kind"] == "chart"}
    assert "account-ml-p3-2xlarge" in charts
    for name in charts:
        legends = [b for b in boxes if b["kind"] == "legend" and b["name"] == name]
        areas = [b for b in boxes if b["kind"] == "plotarea" and b["name"] == name]
        assert legends and areas, f"{name}: no legend or plot area drawn"
        assert not any(overlaps(legend, area) for legend in legends for area in areas), f"{name}: legend over the data"
    # ... every picture on the page has something drawn in it (no empty plot) ...
    for box in (b for b in boxes if b["kind"] in {"img", "plotarea"} and b["y"] + b["h"] <= shot.height):
        if box["kind"] == "img":
            assert inked(region(shot, box)) > 0.03, f"{box['name']} is blank"
        else:
            assert drawn(region(shot, box)) > 0.004, f"a plot area of {box['name']} is blank"
    # ... the job stopped on arrival gets a sentence, not a picture ...
    assert not [b for b in boxes if b["kind"] == "img" and b["name"].startswith("team-b-hpo cost")]
    # ... and the account chart looks like the reference: stacked reservation, quota line, the breach bar
    assert_looks_like_reference(region(shot, charts["account-ml-p3-2xlarge"]), "account-ml-p3-2xlarge")
