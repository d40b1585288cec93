"""Every region priced: the daily refresh from the AWS Price List into DynamoDB, and what handlers do with it.

The Price List Query API is answered by a botocore Stubber with pages in AWS's format (moto has no
Pricing service); DynamoDB, SageMaker (the AMT stand-in) and SNS are moto.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import boto3
import pytest
from botocore.exceptions import ReadTimeoutError
from botocore.stub import Stubber

import price_refresh
from governor_client.amt import AmtStandIn, VirtualClock
from governor_client.offline.environment import OfflineEnvironment, build_environment
from governor_client.simulator.runner import deliver_all
from governor_client.simulator.scenarios import seed_tuning_request
from tests.price_list import answer, product, row
from tuning_governor.adapters.pricing import PriceListGateway
from tuning_governor.app.prices import RefreshServices
from tuning_governor.app.services import Services, StoredPrices
from tuning_governor.errors import TransientError
from tuning_governor.policy import parse_policy

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
REFRESHED_AT = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
STOCKHOLM = "eu-north-1"
# Figures for the tests only (the bundled catalog has ml.m5.xlarge at 0.23 in us-east-1, 0.242 in ap-south-1).
EUN1_M5_XLARGE = "0.2180000000"


class Context:
    function_name = "price-refresh"
    memory_limit_in_mb = 256
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:price-refresh"
    aws_request_id = "00000000-0000-0000-0000-000000000000"

    def get_remaining_time_in_millis(self) -> int:
        return 300_000


@pytest.fixture
def pricing(mocked_aws: None) -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client("pricing", region_name="us-east-1")
    stubber = Stubber(client)
    with stubber:
        yield client, stubber
    stubber.assert_no_pending_responses()


def refresh_services(env: OfflineEnvironment, client: Any, regions: tuple[str, ...]) -> RefreshServices:
    return RefreshServices(
        pricing=PriceListGateway(client), store=env.services.store, clock=lambda: REFRESHED_AT, regions=regions
    )


def stockholm_pages() -> list[list[str]]:
    broken = product("EUN1-Train:ml.g5.xlarge", "1.6", region=STOCKHOLM)
    del broken["terms"]
    return [
        [
            row("EUN1-Train:ml.m5.xlarge", EUN1_M5_XLARGE, region=STOCKHOLM),
            row("EUN1-TrSpt:ml.m5.xlarge", "0.0654000000", region=STOCKHOLM),  # spot: not a list price
        ],
        [json.dumps(broken), row("EUN1-Train:ml.c5.xlarge", "0.1940000000", region=STOCKHOLM)],
    ]


def stored_item(env: OfflineEnvironment, region: str) -> dict[str, Any] | None:
    item: dict[str, Any] | None = env.dynamodb.get_item(
        TableName=env.settings.table_name, Key={"pk": {"S": f"PRICES#{region}"}, "sk": {"S": "CATALOG"}}
    ).get("Item")
    return item


# -- the refresh ------------------------------------------------------------------------------------------
def test_refresh_stores_one_catalog_per_region_with_provenance(pricing: tuple[Any, Stubber]) -> None:
    client, stubber = pricing
    env = build_environment(region="us-east-1", sns=False, quotas=False)
    # Given us-east-1 on one page, eu-north-1 on two pages (with a spot row and a malformed row),
    # and ap-east-1 with no rows at all
    answer(stubber, "us-east-1", [[row("USE1-Train:ml.m5.xlarge", "0.2300000000", region="us-east-1")]])
    answer(stubber, STOCKHOLM, stockholm_pages())
    answer(stubber, "ap-east-1", [[]])

    # When the scheduled function runs
    outcome = price_refresh.handler(
        {}, Context(), services=refresh_services(env, client, ("us-east-1", STOCKHOLM, "ap-east-1"))
    )

    # Then each region with prices has its catalog, the bad rows are counted, the empty region skipped
    assert outcome["stored"] == {"us-east-1": 1, STOCKHOLM: 2}
    assert outcome["empty"] == ["ap-east-1"]
    assert outcome["rejected_rows"] == {STOCKHOLM: 2}
    assert stored_item(env, "ap-east-1") is None
    (catalog,) = [c for c in env.services.store.price_catalogs() if c.region == STOCKHOLM]
    assert catalog.source == "AWS Price List Query API"
    assert catalog.billing_code == "EUN1"
    assert catalog.fetched_at == REFRESHED_AT
    assert catalog.publication_date == "2026-11-20T18:02:11Z"
    m5 = catalog.prices["ml.m5.xlarge"]
    assert (m5.usd_per_hour, m5.usage_type, m5.effective_date) == (
        Decimal("0.218"),
        "EUN1-Train:ml.m5.xlarge",
        "2026-11-01T00:00:00Z",
    )
    assert m5.sku
    assert "ml.g5.xlarge" not in catalog.prices  # the malformed row, left out


def test_an_empty_answer_keeps_the_last_stored_catalog(pricing: tuple[Any, Stubber]) -> None:
    client, stubber = pricing
    env = build_environment(region="us-east-1", sns=False, quotas=False)
    answer(stubber, STOCKHOLM, stockholm_pages())
    answer(stubber, STOCKHOLM, [[]])
    services = refresh_services(env, client, (STOCKHOLM,))

    price_refresh.handler({}, Context(), services=services)
    second = price_refresh.handler({}, Context(), services=services)

    assert second["empty"] == [STOCKHOLM]
    assert [c.region for c in env.services.store.price_catalogs()] == [STOCKHOLM]


def test_a_failing_region_is_reported_and_the_others_stored_only_all_failing_is_retried(
    pricing: tuple[Any, Stubber],
) -> None:
    client, stubber = pricing
    env = build_environment(region="us-east-1", sns=False, quotas=False)
    stubber.add_client_error("get_products", service_error_code="ThrottlingException", http_status_code=400)
    answer(stubber, STOCKHOLM, stockholm_pages())

    outcome = price_refresh.handler({}, Context(), services=refresh_services(env, client, ("us-east-1", STOCKHOLM)))

    assert list(outcome["failed"]) == ["us-east-1"]
    assert list(outcome["stored"]) == [STOCKHOLM]
    stubber.add_client_error("get_products", service_error_code="ThrottlingException", http_status_code=400)
    with pytest.raises(TransientError):
        price_refresh.handler({}, Context(), services=refresh_services(env, client, ("us-east-1",)))


# -- handlers price trials from the stored catalog -----------------------------------------------------------
@pytest.fixture
def stockholm(mocked_aws: None) -> Iterator[tuple[AmtStandIn, OfflineEnvironment]]:
    clock = VirtualClock(T0)
    with AmtStandIn(clock=clock, seed=7, region=STOCKHOLM) as amt:
        env = build_environment(region=STOCKHOLM, clock=clock.now, quotas=False)
        yield amt, env


def run_job(amt: AmtStandIn, services: Services, name: str, **request: Any) -> str:
    boto3.client("sagemaker", region_name=STOCKHOLM).create_hyper_parameter_tuning_job(
        **seed_tuning_request(name, max_jobs=4, max_parallel=2, **request)
    )
    for _ in range(24 * 60):
        amt.advance(60)
        deliver_all(amt.drain_events(), services)
        if amt.idle() and not amt.events:
            break
    return name.lower()


def pricing_decisions(services: Services, job_key: str) -> list[dict[str, Any]]:
    return [d for d in services.store.decisions(job_key) if d["rule"] == "pricing"]


def test_after_a_refresh_a_trial_in_an_otherwise_unpriced_region_is_priced_from_the_stored_catalog(
    stockholm: tuple[AmtStandIn, OfflineEnvironment],
) -> None:
    amt, env = stockholm
    client = boto3.client("pricing", region_name="us-east-1")
    # Given the refresh stored eu-north-1's prices (the bundled catalog has none for that region)
    with Stubber(client) as stubber:
        answer(stubber, STOCKHOLM, stockholm_pages())
        price_refresh.handler({}, Context(), services=refresh_services(env, client, (STOCKHOLM,)))
    env.services.stored_prices = StoredPrices(env.services.store, clock=env.services.clock)

    # When a seed job (3 x ml.m5.xlarge per trial) runs in eu-north-1
    job_key = run_job(amt, env.services, "stockholm-priced")

    # Then every trial is priced at the stored list price, exactly, and the summary is fully priced
    trials = env.services.store.trial_records(job_key)
    assert trials
    for trial in trials:
        assert trial.hourly_usd == Decimal("0.654")  # 3 x $0.218
        assert trial.approximate_types == []
        assert not trial.approximate_price
    summary = env.services.store.get_summary(job_key)
    assert summary is not None
    assert summary.cost.status == "priced"
    assert summary.cost.approximate_instance_types == []
    assert pricing_decisions(env.services, job_key) == []


def test_without_a_refresh_the_trial_is_judged_at_the_highest_known_price_and_warned_once(
    stockholm: tuple[AmtStandIn, OfflineEnvironment],
) -> None:
    amt, env = stockholm

    job_key = run_job(amt, env.services, "stockholm-approx")

    # The fallback: ml.m5.xlarge's highest bundled price (ap-south-1, $0.242), marked approximate
    trials = env.services.store.trial_records(job_key)
    assert trials
    assert all(t.hourly_usd == Decimal("0.726") and t.approximate_types == ["ml.m5.xlarge"] for t in trials)
    summary = env.services.store.get_summary(job_key)
    assert summary is not None
    assert summary.cost.cost_usd is not None  # judged, never unpriced nor $0
    assert summary.cost.approximate_instance_types == ["ml.m5.xlarge"]
    assert any("highest price of the type" in w for w in summary.warnings)
    # One pricing warning for the job, although every event of the job was judged
    (decision,) = pricing_decisions(env.services, job_key)
    assert decision["verdict"] == "warning"
    assert decision["numbers"]["approximate_types"] == ["ml.m5.xlarge"]
    reported = [m for m in env.sns_messages() if str(m.get("Subject", "")).endswith(": pricing")]
    assert len(reported) == 1
    assert "ml.m5.xlarge" in reported[0]["Message"]


def test_a_type_priced_nowhere_stays_unpriced_and_the_budget_silence_is_reported(
    stockholm: tuple[AmtStandIn, OfflineEnvironment],
) -> None:
    amt, env = stockholm
    policy = parse_policy("mode: enforce\ndefaults: {budget_usd: 50}", "test")
    env.services.policy = lambda: policy

    job_key = run_job(amt, env.services, "stockholm-unknown", instance_type="ml.c7i.2xlarge")

    trials = env.services.store.trial_records(job_key)
    assert trials
    assert all(t.cost_usd is None and t.unpriced_types == ["ml.c7i.2xlarge"] for t in trials)
    (decision,) = pricing_decisions(env.services, job_key)
    assert decision["numbers"]["unpriced_types"] == ["ml.c7i.2xlarge"]
    assert decision["numbers"]["budget_judged"] is False
    assert "ml.c7i.2xlarge" in decision["message"]
    # The warning came at arrival, before any money was spent
    assert datetime.fromisoformat(decision["at"]) < T0 + timedelta(minutes=5)


# -- issue 18, finding 11: merge per type, each region and price isolated, implausible prices rejected --------
P4DE = "ml.p4de.24xlarge"


def three_types(region: str = "us-east-1") -> list[list[str]]:
    return [
        [
            row("USE1-Train:ml.m5.xlarge", "0.2300000000", region=region),
            row("USE1-Train:ml.g5.xlarge", "1.4080000000", region=region),
            row(f"USE1-Train:{P4DE}", "45.1200000000", region=region),
        ]
    ]


def test_a_partial_answer_keeps_the_other_types_refreshed_prices(pricing: tuple[Any, Stubber]) -> None:
    client, stubber = pricing
    env = build_environment(region="us-east-1", sns=False, quotas=False)
    services = refresh_services(env, client, ("us-east-1",))
    # Given a refresh that stored three types, p4de at $45.12
    answer(stubber, "us-east-1", three_types())
    price_refresh.handler({}, Context(), services=services)
    # When the next day's Price List answer lists 1 of the 3 types (a new m5 price)
    answer(stubber, "us-east-1", [[row("USE1-Train:ml.m5.xlarge", "0.2400000000", region="us-east-1")]])
    later = RefreshServices(
        pricing=services.pricing,
        store=services.store,
        clock=lambda: REFRESHED_AT + timedelta(days=1),
        regions=("us-east-1",),
    )
    price_refresh.handler({}, Context(), services=later)

    # Then m5 has its new price and the other two keep their refreshed prices (never an estimate)
    (catalog,) = env.services.store.price_catalogs()
    assert {t: r.usd_per_hour for t, r in catalog.prices.items()} == {
        "ml.g5.xlarge": Decimal("1.408"),
        "ml.m5.xlarge": Decimal("0.24"),
        P4DE: Decimal("45.12"),
    }
    quote = StoredPrices(env.services.store, clock=lambda: T0).catalog()
    assert quote is not None
    p4de = quote.quote("us-east-1", P4DE)
    assert p4de is not None
    assert (p4de.usd_per_hour, p4de.approximate) == (Decimal("45.12"), False)
    # and each kept price says when it was last read from the Price List
    entries = catalog.entries()
    assert entries["ml.m5.xlarge"].fetched_at == (REFRESHED_AT + timedelta(days=1)).isoformat()
    assert entries[P4DE].fetched_at == REFRESHED_AT.isoformat()


def test_an_unstorable_price_is_left_out_and_every_other_price_and_region_is_stored(
    pricing: tuple[Any, Stubber],
) -> None:
    client, stubber = pricing
    env = build_environment(region="us-east-1", sns=False, quotas=False)
    # Given us-east-1 lists two prices DynamoDB cannot store (1E+200, 41 digits) beside two good ones
    answer(
        stubber,
        "us-east-1",
        [
            [
                row("USE1-Train:ml.m5.xlarge", "0.2300000000", region="us-east-1"),
                row("USE1-Train:ml.g5.xlarge", "1E+200", region="us-east-1"),
                row("USE1-Train:ml.c5.xlarge", "0.2040000000", region="us-east-1"),
                # plausible, but 41 significant digits: more than a DynamoDB number holds
                row("USE1-Train:ml.m5.2xlarge", "0.4610000000000000000000000000000000000001", region="us-east-1"),
            ]
        ],
    )
    answer(stubber, STOCKHOLM, stockholm_pages())

    # When the refresh runs
    outcome = price_refresh.handler({}, Context(), services=refresh_services(env, client, ("us-east-1", STOCKHOLM)))

    # Then only that price is left out: the region's other prices and the later region are stored
    assert outcome["stored"] == {"us-east-1": 2, STOCKHOLM: 2}
    stored = {c.region: set(c.prices) for c in env.services.store.price_catalogs()}
    assert stored == {"us-east-1": {"ml.m5.xlarge", "ml.c5.xlarge"}, STOCKHOLM: {"ml.m5.xlarge", "ml.c5.xlarge"}}


def test_a_read_timeout_fails_its_region_only_and_the_later_regions_are_refreshed(
    pricing: tuple[Any, Stubber], capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    client, stubber = pricing
    env = build_environment(region="us-east-1", sns=False, quotas=False)

    # Given the Price List times out reading us-east-1 (after the client's own retries) and answers eu-north-1
    def time_out(params: dict[str, Any], **_: Any) -> None:
        if params["Filters"][0]["Value"] == "us-east-1":
            raise ReadTimeoutError(endpoint_url="https://api.pricing.us-east-1.amazonaws.com/")

    client.meta.events.register("provide-client-params.pricing.GetProducts", time_out)
    answer(stubber, STOCKHOLM, stockholm_pages())

    # When the refresh runs
    outcome = price_refresh.handler({}, Context(), services=refresh_services(env, client, ("us-east-1", STOCKHOLM)))

    # Then us-east-1 is reported failed (a warning naming it, a metric) and eu-north-1 is stored
    assert list(outcome["failed"]) == ["us-east-1"]
    assert outcome["stored"] == {STOCKHOLM: 2}
    assert [c.region for c in env.services.store.price_catalogs()] == [STOCKHOLM]
    (failure,) = [r.__dict__ for r in caplog.records if r.getMessage() == "price refresh failed for a region"]
    assert (failure["region"], failure["levelname"]) == ("us-east-1", "WARNING")
    assert '"PriceRegionsFailed":[1.0]' in capsys.readouterr().out


def test_a_price_outside_its_familys_plausible_band_is_rejected_with_a_warning(
    pricing: tuple[Any, Stubber], capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    client, stubber = pricing
    env = build_environment(region="us-east-1", sns=False, quotas=False)
    services = refresh_services(env, client, ("us-east-1",))
    # Given a refresh that stored three plausible prices
    answer(stubber, "us-east-1", three_types())
    price_refresh.handler({}, Context(), services=services)
    capsys.readouterr()
    caplog.clear()
    # When the next answer prices ml.m5.xlarge at 1e-10 $/h and p4de at 45120 $/h (a unit slip)
    answer(
        stubber,
        "us-east-1",
        [
            [
                row("USE1-Train:ml.m5.xlarge", "0.0000000001", region="us-east-1"),
                row("USE1-Train:ml.g5.xlarge", "1.5000000000", region="us-east-1"),
                row(f"USE1-Train:{P4DE}", "45120.0000000000", region="us-east-1"),
            ]
        ],
    )
    outcome = price_refresh.handler({}, Context(), services=services)

    # Then neither implausible price is stored or used: the last plausible ones stay, the plausible one moves
    (catalog,) = env.services.store.price_catalogs()
    assert {t: r.usd_per_hour for t, r in catalog.prices.items()} == {
        "ml.g5.xlarge": Decimal("1.5"),
        "ml.m5.xlarge": Decimal("0.23"),
        P4DE: Decimal("45.12"),
    }
    assert outcome["out_of_band"] == {"us-east-1": 2}
    # and the operator is told: one warning per price, with the band it fell outside, and a metric
    warnings = [r.__dict__ for r in caplog.records if "plausible band" in r.getMessage()]
    assert sorted(w["instance_type"] for w in warnings) == ["ml.m5.xlarge", P4DE]
    assert all(w["levelname"] == "WARNING" and w["region"] == "us-east-1" for w in warnings)
    assert all("per vCPU-hour" in w["band_usd_per_hour"] for w in warnings)
    assert '"PricesOutOfBand":[2.0]' in capsys.readouterr().out


class RunningOut(Context):
    """A context whose run has time for ``regions`` regions only (then under a minute is left)."""

    def __init__(self, regions: int) -> None:
        self.asked = 0
        self.regions = regions

    def get_remaining_time_in_millis(self) -> int:
        self.asked += 1
        return 240_000 if self.asked <= self.regions else 20_000


def test_a_run_short_of_time_defers_the_last_regions_and_the_next_run_starts_with_the_stalest(
    pricing: tuple[Any, Stubber],
) -> None:
    client, stubber = pricing
    env = build_environment(region="us-east-1", sns=False, quotas=False)
    regions = ("us-east-1", STOCKHOLM)
    # Given a run with time for one region only (the Price List was slow)
    answer(stubber, "us-east-1", three_types())
    first = price_refresh.handler({}, RunningOut(1), services=refresh_services(env, client, regions))
    # Then the region it had no time for is deferred, not started and cut off by the function's timeout
    assert (first["stored"], first["deferred"]) == ({"us-east-1": 3}, [STOCKHOLM])

    # When the next run again has time for one region only
    answer(stubber, STOCKHOLM, stockholm_pages())
    second = price_refresh.handler({}, RunningOut(1), services=refresh_services(env, client, regions))

    # Then it refreshed the region never refreshed before the one refreshed yesterday: none stays stale
    assert (second["stored"], second["deferred"]) == ({STOCKHOLM: 2}, ["us-east-1"])
    assert [c.region for c in env.services.store.price_catalogs()] == [STOCKHOLM, "us-east-1"]
