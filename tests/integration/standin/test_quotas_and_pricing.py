"""Service Quotas for SageMaker under moto, and the Price List stub."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from governor_client.amt import AmtStandIn, stub_pricing


@pytest.fixture
def quotas(mocked_aws: None) -> Any:
    return boto3.client("service-quotas", region_name="us-east-1")


def test_per_instance_quota_defaults_and_applied_values(amt: AmtStandIn, quotas: Any) -> None:
    before = quotas.get_service_quota(ServiceCode="sagemaker", QuotaCode="L-CCE2AFA6")["Quota"]
    assert before["QuotaName"] == "ml.m5.xlarge for training job usage"
    assert before["Value"] == 20.0

    code = amt.set_applied_quota("ml.m5.xlarge", 12)

    quota = quotas.get_service_quota(ServiceCode="sagemaker", QuotaCode=code)["Quota"]
    assert code == "L-CCE2AFA6"
    assert quota["Value"] == 12.0
    assert quota["Unit"] == "None"
    assert quota["Adjustable"] is True
    assert quota["QuotaArn"] == "arn:aws:servicequotas:us-east-1:123456789012:sagemaker/L-CCE2AFA6"
    default = quotas.get_aws_default_service_quota(ServiceCode="sagemaker", QuotaCode=code)["Quota"]
    assert default["Value"] == 20.0


def test_spot_and_warm_pool_quotas_by_name(amt: AmtStandIn, quotas: Any) -> None:
    amt.set_applied_quota("ml.g5.2xlarge for spot training job usage", 8)
    amt.set_applied_quota("ml.g5.2xlarge for training warm pool usage", 2)

    spot = quotas.get_service_quota(ServiceCode="sagemaker", QuotaCode="L-CAEE7DB7")["Quota"]
    warm = quotas.get_service_quota(ServiceCode="sagemaker", QuotaCode="L-822C5A39")["Quota"]
    assert (spot["QuotaName"], spot["Value"]) == ("ml.g5.2xlarge for spot training job usage", 8.0)
    assert (warm["QuotaName"], warm["Value"]) == ("ml.g5.2xlarge for training warm pool usage", 2.0)
    training = quotas.get_service_quota(ServiceCode="sagemaker", QuotaCode="L-2D6DEB3C")["Quota"]
    assert training["Value"] == 4.0  # untouched


def test_list_service_quotas_is_paginated_and_complete(amt: AmtStandIn, quotas: Any) -> None:
    amt.set_applied_quota(
        "Maximum number of training jobs each hyper parameter tuning job can run in parallel at once", 4
    )
    pages = quotas.get_paginator("list_service_quotas").paginate(
        ServiceCode="sagemaker", PaginationConfig={"PageSize": 7}
    )
    page_sizes = []
    listed = []
    for page in pages:
        page_sizes.append(len(page["Quotas"]))
        listed += page["Quotas"]

    by_name = {q["QuotaName"]: q for q in listed}
    assert max(page_sizes) == 7
    assert len(page_sizes) > 1
    assert len(by_name) == len(listed)  # no duplicates across pages
    assert by_name["Number of instances across all training jobs"]["QuotaCode"] == "L-00C91CB5"
    assert (
        by_name["Maximum number of training jobs each hyper parameter tuning job can run in parallel at once"]["Value"]
        == 4.0
    )
    for family in ("training job usage", "spot training job usage", "training warm pool usage"):
        assert f"ml.m5.xlarge for {family}" in by_name
    # Codes the facts do not list are invented, stable and labelled as ours.
    p3 = by_name["ml.p3.2xlarge for training job usage"]["QuotaCode"]
    assert p3.startswith("L-GOV")
    assert amt.set_applied_quota("ml.p3.2xlarge", 1) == p3


def test_unknown_instance_types_get_quotas_when_set(amt: AmtStandIn, quotas: Any) -> None:
    code = amt.set_applied_quota("ml.g6.12xlarge", 3)
    quota = quotas.get_service_quota(ServiceCode="sagemaker", QuotaCode=code)["Quota"]
    assert quota["QuotaName"] == "ml.g6.12xlarge for training job usage"
    assert quota["Value"] == 3.0


def test_unknown_quota_code_is_no_such_resource(amt: AmtStandIn, quotas: Any) -> None:
    with pytest.raises(ClientError) as excinfo:
        quotas.get_service_quota(ServiceCode="sagemaker", QuotaCode="L-DOESNOTEXIST")
    assert excinfo.value.response["Error"]["Code"] == "NoSuchResourceException"
    with pytest.raises(KeyError):
        amt.set_applied_quota("not a quota", 1)


def test_vpc_quotas_still_come_from_moto(amt: AmtStandIn, quotas: Any) -> None:
    listed = quotas.list_service_quotas(ServiceCode="vpc")["Quotas"]
    assert listed
    assert all(q["ServiceCode"] == "vpc" for q in listed)


def test_pricing_stub_answers_in_the_price_list_format() -> None:
    client = boto3.client("pricing", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stubber = stub_pricing(client, {"ml.m5.xlarge": 0.23, "ml.g5.xlarge": 1.408})
    assert isinstance(stubber, Stubber)

    with stubber:
        for _ in range(2):  # any number of calls, in any order
            response = client.get_products(
                ServiceCode="AmazonSageMaker",
                Filters=[{"Type": "TERM_MATCH", "Field": "usagetype", "Value": "USE1-Train:ml.g5.xlarge"}],
            )
        everything = client.get_products(ServiceCode="AmazonSageMaker", MaxResults=1)

    assert len(response["PriceList"]) == 1
    product = json.loads(response["PriceList"][0])
    attributes = product["product"]["attributes"]
    assert attributes["usagetype"] == "USE1-Train:ml.g5.xlarge"
    assert attributes["instanceName"] == "ml.g5.xlarge"
    assert attributes["regionCode"] == "us-east-1"
    (term,) = product["terms"]["OnDemand"].values()
    (dimension,) = term["priceDimensions"].values()
    assert dimension["unit"] == "Hrs"
    assert float(dimension["pricePerUnit"]["USD"]) == pytest.approx(1.408)
    assert term["offerTermCode"] == "JRTCKXETXF"
    assert len(everything["PriceList"]) == 1
    assert everything["NextToken"]


def test_pricing_stub_filters_by_instance_and_region(mocked_aws: None) -> None:
    client = boto3.client("pricing", region_name="us-east-1")
    with stub_pricing(client, {"ml.m5.xlarge": 0.242}, region_prefix="APS3"):
        hit = client.get_products(
            ServiceCode="AmazonSageMaker",
            Filters=[
                {"Type": "TERM_MATCH", "Field": "instanceName", "Value": "ml.m5.xlarge"},
                {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "ap-south-1"},
            ],
        )
        miss = client.get_products(
            ServiceCode="AmazonSageMaker",
            Filters=[{"Type": "TERM_MATCH", "Field": "usagetype", "Value": "USE1-Train:ml.m5.xlarge"}],
        )
    assert json.loads(hit["PriceList"][0])["product"]["attributes"]["usagetype"] == "APS3-Train:ml.m5.xlarge"
    assert miss["PriceList"] == []
    # Deactivated: the client is back to moto, which has no Pricing service.
    with pytest.raises(ClientError):
        client.get_products(ServiceCode="AmazonSageMaker")


def test_a_quota_without_an_applied_value_is_served_only_by_the_default_apis(amt: AmtStandIn, quotas: Any) -> None:
    # Given an account where the spot quota of ml.g5.2xlarge has no applied value
    name = "ml.g5.2xlarge for spot training job usage"
    code = amt.clear_applied_quota(name)
    assert code == "L-CAEE7DB7"

    def listed(operation: str) -> dict[str, Any]:
        pages = quotas.get_paginator(operation).paginate(ServiceCode="sagemaker")
        return {q["QuotaName"]: q for page in pages for q in page["Quotas"]}

    # Then ListServiceQuotas leaves it out and GetServiceQuota does not find it
    assert name not in listed("list_service_quotas")
    assert "ml.g5.2xlarge for training job usage" in listed("list_service_quotas")
    with pytest.raises(ClientError) as excinfo:
        quotas.get_service_quota(ServiceCode="sagemaker", QuotaCode=code)
    assert excinfo.value.response["Error"]["Code"] == "NoSuchResourceException"
    # And the default-value APIs still answer for it
    assert listed("list_aws_default_service_quotas")[name]["Value"] == 4.0
    assert quotas.get_aws_default_service_quota(ServiceCode="sagemaker", QuotaCode=code)["Quota"]["Value"] == 4.0
    # And applying a value brings it back
    amt.set_applied_quota(name, 6)
    assert listed("list_service_quotas")[name]["Value"] == 6.0


def test_account_wide_quotas_have_an_applied_value_above_the_aws_default(amt: AmtStandIn, quotas: Any) -> None:
    for code in ("L-00C91CB5", "L-93958082"):
        applied = quotas.get_service_quota(ServiceCode="sagemaker", QuotaCode=code)["Quota"]["Value"]
        default = quotas.get_aws_default_service_quota(ServiceCode="sagemaker", QuotaCode=code)["Quota"]["Value"]
        assert (applied, default) == (200.0, 4.0)
