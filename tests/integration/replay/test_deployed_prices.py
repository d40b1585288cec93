"""A replay at the prices the deployed governor uses: ``tuning-governor prices export --table T`` writes
the catalogs the price refresh stored in the table, in the bundled catalogue's file format, and
``replay --prices-from-table T`` / ``replay --prices FILE`` price the replay with them (over the bundled
catalogue, as the deployed governor layers them). The table is on moto, read before the replay starts."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from governor_client.__main__ import main
from governor_client.offline.environment import create_table
from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.replay.conftest import capture, write_jsonl
from tuning_governor.adapters.dynamodb import GovernorStore
from tuning_governor.domain.pricing import CatalogFile, PriceListRow, RegionCatalog, bundled_catalog

# One worker runs this module: its module-scoped (or cached) runs are built once, not once per worker.
pytestmark = pytest.mark.xdist_group("replay-deployed_prices")

P3_2X = "ml.p3.2xlarge"
REGION = "us-east-1"
TABLE = "tuning-governor-prod-GovernorTable-ABC"
# An obviously invented figure (the bundled catalogue says 3.825): the test needs one that differs.
REFRESHED = Decimal("10.00")


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    captured = capture(
        [
            (0, seed_tuning_request("a-hpo", team="vision", instance_type=P3_2X, max_parallel=2, max_jobs=3)),
            (60, seed_tuning_request("b-hpo", team="speech", instance_type=P3_2X, max_parallel=2, max_jobs=3)),
        ]
    )
    return write_jsonl(tmp_path_factory.mktemp("prices") / "events.jsonl", captured.events)


@pytest.fixture
def deployed_table(aws_credentials: None) -> Any:
    """The deployed governor's table on moto, holding the catalog its price refresh stored for us-east-1."""
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        create_table(dynamodb, TABLE)
        row = PriceListRow(
            region=REGION,
            instance_type=P3_2X,
            usd_per_hour=REFRESHED,
            usage_type=f"USE1-Train:{P3_2X}",
            sku="FAKESKU0000001",
            effective_date="2026-11-01T00:00:00Z",
        )
        catalog = RegionCatalog(
            region=REGION, billing_code="USE1", fetched_at=datetime(2026, 12, 1, tzinfo=UTC), prices={P3_2X: row}
        )
        GovernorStore(dynamodb, TABLE).put_price_catalog(catalog)
        yield dynamodb


def _replay(history: Path, tmp_path: Path, *extra: str) -> dict[str, Any]:
    policy = tmp_path / "policy.yaml"
    policy.write_text("mode: monitor\n")
    out = tmp_path / f"result{len(extra)}{abs(hash(extra))}.json"
    assert main(["replay", str(history), "--policy", str(policy), "--out", str(out), *extra]) == 0
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def _spent(result: dict[str, Any]) -> Decimal:
    return sum((Decimal(str(job["cost_usd"])) for job in result["jobs"].values()), Decimal(0))


def test_prices_export_writes_the_refreshed_catalog_in_the_bundled_file_format(
    deployed_table: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "prices.json"
    assert main(["prices", "export", "--table", TABLE, "--region", REGION, "--out", str(out)]) == 0
    exported = CatalogFile.model_validate(json.loads(out.read_text(), parse_float=Decimal))
    entry = exported.regions[REGION][P3_2X]
    assert (entry.usd_per_hour, entry.quality, entry.sku) == (REFRESHED, "price-list", "FAKESKU0000001")
    assert f"USE1-Train:{P3_2X}" in entry.source
    assert "1 region(s), 1 price(s)" in capsys.readouterr().err


def test_replay_prices_from_the_table_are_the_deployed_governors(
    deployed_table: Any, history: Path, tmp_path: Path
) -> None:
    bundled = bundled_catalog().price(REGION, P3_2X)
    assert bundled is not None and bundled.usd_per_hour != REFRESHED

    at_bundled = _spent(_replay(history, tmp_path))
    at_table = _spent(_replay(history, tmp_path, "--prices-from-table", TABLE, "--prices-region", REGION))

    # Every trial runs on ml.p3.2xlarge: the spend scales by exactly the ratio of the two prices.
    assert at_bundled > 0
    assert abs(at_table / at_bundled - REFRESHED / bundled.usd_per_hour) < Decimal("0.0001")


def test_replay_with_an_exported_file_equals_the_replay_from_the_table(
    deployed_table: Any, history: Path, tmp_path: Path
) -> None:
    prices = tmp_path / "prices.json"
    assert main(["prices", "export", "--table", TABLE, "--region", REGION, "--out", str(prices)]) == 0
    from_table = _replay(history, tmp_path, "--prices-from-table", TABLE, "--prices-region", REGION)
    from_file = _replay(history, tmp_path, "--prices", str(prices))
    assert from_file["jobs"] == from_table["jobs"]
    assert from_file["savings"] == from_table["savings"]


def test_a_missing_table_is_one_line_and_exit_3(
    aws_credentials: None, history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with mock_aws():
        policy = tmp_path / "policy.yaml"
        policy.write_text("mode: monitor\n")
        status = main(["replay", str(history), "--policy", str(policy), "--prices-from-table", "nope"])
    err = capsys.readouterr().err
    assert status == 3  # docs/reference/cli.md: a table that does not exist is "AWS cannot be used from here"
    assert err.count("\n") == 1 and "nope" in err and "Traceback" not in err
