"""``tuning-governor prices fetch`` builds the price catalogue from AWS's public SageMaker offer files (the
Price List Bulk API: the service's region index, then each region's offer file), served here from
tests/data/price-list by a 127.0.0.1 HTTP server (never the network); ``check`` and ``replay`` say which
prices are approximate and the command that fixes it, and price with the fetched catalogue afterwards."""

from __future__ import annotations

import contextlib
import functools
import http.server
import io
import json
import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from governor_client.__main__ import main
from governor_client.check import check_request
from governor_client.check.result import CheckResult
from governor_client.simulator.scenarios import seed_tuning_request
from tuning_governor.domain.pricing import PriceCatalog, bundled_catalog

ROOT = Path(__file__).resolve().parents[2]
OFFERS = ROOT / "tests" / "data" / "price-list"
OFFER_PATH = "/offers/v1.0/aws/AmazonSageMaker/20261120180211/{region}/index.json"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def offers_host() -> Iterator[str]:
    """AWS's pricing host, as a local server of the recorded files (what a request for a file not there gets: 404)."""
    handler = functools.partial(_Quiet, directory=str(OFFERS))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def user_catalogue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "cache" / "prices.json"
    monkeypatch.setenv("TUNING_GOVERNOR_PRICES", str(path))
    return path


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_fetch_writes_each_regions_training_prices_with_their_offer_file_and_sku(
    offers_host: str, tmp_path: Path, user_catalogue: Path
) -> None:
    out = tmp_path / "prices.json"
    code, _, err = _run(
        "prices",
        "fetch",
        "--region",
        "us-west-2",
        "--region",
        "eu-west-1",
        "--out",
        str(out),
        "--offers-host",
        offers_host,
    )
    assert code == 0, err
    catalog = PriceCatalog.from_json(out.read_text())
    assert catalog.regions() == ["eu-west-1", "us-west-2"]
    # training rows only: spot (TrSpt), hosting and notebook rows are not training prices; the $0 row is
    # left out (never $0), its type stays unpriced; an empty instanceName is read from the usage type
    assert {t: e.usd_per_hour for t, e in catalog.types("us-west-2").items()} == {
        "ml.g5.xlarge": Decimal("1.408"),
        "ml.m5.xlarge": Decimal("0.23"),
        "ml.p3.2xlarge": Decimal("3.825"),
    }
    assert catalog.price("us-west-2", "ml.c5.xlarge") is None
    assert catalog.types("eu-west-1")["ml.m5.xlarge"].usage_type == "EU-Train:ml.m5.xlarge"
    entry = catalog.types("us-west-2")["ml.m5.xlarge"]
    assert entry.quality == "price-list"
    assert entry.sku == "TESTUSW2M5XL0001"
    assert entry.as_of == "2026-11-01T00:00:00Z"
    assert entry.source == (
        f"AWS Price List Bulk API offer file {offers_host}{OFFER_PATH.format(region='us-west-2')}"
        " (published 2026-11-20T18:02:11Z), usagetype USW2-Train:ml.m5.xlarge (SKU TESTUSW2M5XL0001)"
    )
    assert "us-west-2: 3 training price(s), 1 row(s) left out" in err
    assert not user_catalogue.exists(), "--out writes only there"


def test_without_out_the_user_catalogue_gathers_the_regions_fetched(offers_host: str, user_catalogue: Path) -> None:
    assert _run("prices", "fetch", "--region", "us-west-2", "--offers-host", offers_host)[0] == 0
    assert _run("prices", "fetch", "--region", "eu-west-1", "--offers-host", offers_host)[0] == 0
    assert PriceCatalog.from_json(user_catalogue.read_text()).regions() == ["eu-west-1", "us-west-2"]


def test_a_region_aws_does_not_publish_or_without_training_prices_is_an_error(
    offers_host: str, user_catalogue: Path
) -> None:
    code, _, err = _run("prices", "fetch", "--region", "xx-nowhere-1", "--offers-host", offers_host)
    assert (code, err.count("\n")) == (2, 1), err
    assert "no SageMaker offer file for xx-nowhere-1" in err
    code, _, err = _run("prices", "fetch", "--region", "us-east-1", "--offers-host", offers_host)
    assert code == 2
    assert "no training price in us-east-1's offer file" in err


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_aws_unreachable_is_one_line_and_exit_3(user_catalogue: Path) -> None:
    code, _, err = _run(
        "prices", "fetch", "--region", "us-west-2", "--offers-host", f"http://127.0.0.1:{_closed_port()}"
    )
    assert code == 3
    assert err.strip().count("\n") == 0 and "cannot read http://127.0.0.1:" in err, err
    assert not user_catalogue.exists()


def test_an_offer_file_read_from_disk_gives_the_same_catalogue() -> None:
    from governor_client.prices.fetch import offer_catalog

    path = OFFERS / OFFER_PATH.format(region="us-west-2").lstrip("/")
    catalog = offer_catalog(json.loads(path.read_text()), "us-west-2", str(path), datetime(2026, 12, 2, tzinfo=UTC))
    assert sorted(catalog.prices) == ["ml.g5.xlarge", "ml.m5.xlarge", "ml.p3.2xlarge"]
    assert catalog.rejected_rows == 1
    assert catalog.publication_date == "2026-11-20T18:02:11Z"


def _approximate_notes(result: CheckResult) -> list[str]:
    return [f.message for f in result.findings if f.code == "approximate-price"]


def test_check_names_the_approximate_price_and_the_command_that_fixes_it() -> None:
    # ml.m5.xlarge has no bundled price in us-west-2: judged at its highest price elsewhere
    result = check_request(seed_tuning_request(), None, region="us-west-2")
    (note,) = _approximate_notes(result)
    assert "ml.m5.xlarge in us-west-2" in note
    assert "fix: tuning-governor prices fetch --region us-west-2" in note


def test_check_calls_a_third_party_figure_in_the_region_approximate_too() -> None:
    # us-east-1's bundled ml.p3.2xlarge is a 'secondary' figure (a third-party copy of the pricing page)
    assert bundled_catalog().types("us-east-1")["ml.p3.2xlarge"].quality == "secondary"
    result = check_request(seed_tuning_request(instance_type="ml.p3.2xlarge"), None, region="us-east-1")
    (note,) = _approximate_notes(result)
    assert "ml.p3.2xlarge in us-east-1" in note and "third-party" in note
    assert "fix: tuning-governor prices fetch --region us-east-1" in note


def test_after_fetch_check_prices_with_awss_figure_and_notes_nothing(offers_host: str, user_catalogue: Path) -> None:
    request = ROOT / "docs" / "examples" / "check" / "seed.json"
    code, before, _ = _run("check", str(request), "--region", "us-west-2")
    assert "prices fetch --region us-west-2" in before
    assert _run("prices", "fetch", "--region", "us-west-2", "--offers-host", offers_host)[0] == 0
    code, after, _ = _run("check", str(request), "--region", "us-west-2", "--json")
    assert code == 0
    result = json.loads(after)
    assert [f for f in result["findings"] if f["code"] == "approximate-price"] == []
    # 30 trials x 3 instances x 1 h x $0.23 (the fetched us-west-2 figure)
    assert Decimal(str(result["cost"]["worst_case_usd"])) == Decimal("20.70")


def test_a_fetched_catalogue_that_cannot_be_read_is_an_error_not_the_bundled_prices(user_catalogue: Path) -> None:
    user_catalogue.parent.mkdir(parents=True)
    user_catalogue.write_text("{not json")
    code, _, err = _run("check", str(ROOT / "docs" / "examples" / "check" / "seed.json"), "--region", "us-west-2")
    assert code == 2
    assert "prices fetch" in err and str(user_catalogue) in err


def test_replay_names_the_approximate_prices_and_after_fetch_uses_awss(
    offers_host: str, user_catalogue: Path, tmp_path: Path
) -> None:
    # Given the golden seed history moved to us-west-2, where the bundled catalogue has no ml.m5.xlarge price
    events = tmp_path / "seed-us-west-2.jsonl"
    events.write_text(
        (ROOT / "tests" / "golden" / "inputs" / "seed.jsonl").read_text().replace("us-east-1", "us-west-2")
    )
    replay = ("replay", str(events), "--policy", str(ROOT / "tests" / "golden" / "inputs" / "seed-policy.yaml"))
    code, before, _ = _run(*replay, "--out", str(tmp_path / "before.json"))
    assert code == 0
    (line,) = [x for x in before.splitlines() if x.startswith("Approximate prices: ")]
    assert "ml.m5.xlarge in us-west-2" in line
    assert line.endswith("fix: tuning-governor prices fetch --region us-west-2)")
    # When the fix is run, the replay prices with the fetched figure and says nothing is approximate
    assert _run("prices", "fetch", "--region", "us-west-2", "--offers-host", offers_host)[0] == 0
    code, after, _ = _run(*replay, "--out", str(tmp_path / "after.json"))
    assert code == 0
    assert "Approximate prices" not in after
    costs = [
        json.loads((tmp_path / f"{n}.json").read_text())["jobs"]["xgb-churn-hb"]["cost_usd"]
        for n in ("before", "after")
    ]
    assert costs[1] < costs[0]  # $0.23/h (AWS's us-west-2 figure in the offer file) instead of $0.242/h


def test_replay_calls_a_third_party_figure_in_the_jobs_own_region_approximate_too(
    user_catalogue: Path, tmp_path: Path
) -> None:
    # Given the golden seed history on ml.p3.2xlarge in us-east-1, whose bundled price is a third-party copy
    # of the pricing page: priced in the job's own region, so the governor's pricing rule does not warn
    assert bundled_catalog().types("us-east-1")["ml.p3.2xlarge"].quality == "secondary"
    events = tmp_path / "seed-p3.jsonl"
    events.write_text(
        (ROOT / "tests" / "golden" / "inputs" / "seed.jsonl").read_text().replace("ml.m5.xlarge", "ml.p3.2xlarge")
    )
    out = tmp_path / "result.json"
    replay = ("replay", str(events), "--policy", str(ROOT / "tests" / "golden" / "inputs" / "seed-policy.yaml"))
    code, summary, _ = _run(*replay, "--out", str(out))
    assert code == 0
    result = json.loads(out.read_text())
    assert not [d for d in result["jobs"]["xgb-churn-hb"]["decisions"] if d["rule"] == "pricing"]
    # Then the summary names it, why, and the one command that replaces it with AWS's figure
    (line,) = [x for x in summary.splitlines() if x.startswith("Approximate prices: ")]
    assert line.startswith("Approximate prices: ml.p3.2xlarge in us-east-1: $3.825/h, a third-party copy")
    assert line.endswith(
        "(not AWS Price List prices for the region; fix: tuning-governor prices fetch --region us-east-1)"
    )
    # and the result file keeps its schema: what the summary reads is not in the JSON
    assert "trial_types" not in out.read_text()


def test_replay_names_no_approximate_price_where_the_policy_fills_the_gap(user_catalogue: Path, tmp_path: Path) -> None:
    # Given the seed history in us-west-2 (no bundled ml.m5.xlarge price there) and a policy pricing the type
    # in that region: the policy's price is the policy's, not an approximation
    events = tmp_path / "seed-us-west-2.jsonl"
    events.write_text(
        (ROOT / "tests" / "golden" / "inputs" / "seed.jsonl").read_text().replace("us-east-1", "us-west-2")
    )
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        (ROOT / "tests" / "golden" / "inputs" / "seed-policy.yaml").read_text()
        + "prices:\n  us-west-2:\n    ml.m5.xlarge: 0.23\n"
    )
    code, summary, _ = _run("replay", str(events), "--policy", str(policy), "--out", str(tmp_path / "r.json"))
    assert code == 0
    assert "Approximate prices" not in summary
