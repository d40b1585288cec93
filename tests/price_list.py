"""GetProducts answers in the AWS Price List's own format, for the price refresh tests.

Each ``PriceList`` entry is a JSON *string* holding ``product`` (``sku``, ``productFamily``,
``attributes`` with usagetype, instanceName, regionCode, location, component ...), ``serviceCode``,
``terms.OnDemand.<sku>.<offerTermCode>`` with ``priceDimensions.<rateCode>.pricePerUnit.USD`` (unit
``Hrs``), ``version`` and ``publicationDate`` (aws-facts.md section 5.1; awscli's pricing/get-products
example). ``JRTCKXETXF`` and ``6YS6EN2CT7`` are the standard On-Demand offer-term and rate codes.
"""

from __future__ import annotations

import json
from typing import Any

from botocore.stub import Stubber

ON_DEMAND_TERM = "JRTCKXETXF"
HOURLY_RATE = "6YS6EN2CT7"
PUBLISHED = "2026-11-20T18:02:11Z"
EFFECTIVE = "2026-11-01T00:00:00Z"
LOCATIONS = {
    "us-east-1": "US East (N. Virginia)",
    "eu-north-1": "EU (Stockholm)",
    "eu-west-1": "EU (Ireland)",
    "ap-east-1": "Asia Pacific (Hong Kong)",
}


def product(
    usage_type: str,
    usd: str,
    *,
    region: str,
    instance: str | None = None,
    component: str = "Training",
    sku: str | None = None,
) -> dict[str, Any]:
    """One SageMaker product as the Query API describes it (before it is turned into a JSON string)."""
    sku = sku or ("SKU" + "".join(c for c in usage_type.upper() if c.isalnum()))[:16]
    instance = instance if instance is not None else usage_type.split(":", 1)[-1]
    term = f"{sku}.{ON_DEMAND_TERM}"
    location = LOCATIONS.get(region, region)
    return {
        "product": {
            "productFamily": "ML Instance",
            "attributes": {
                "regionCode": region,
                "servicecode": "AmazonSageMaker",
                "usagetype": usage_type,
                "locationType": "AWS Region",
                "location": location,
                "servicename": "Amazon SageMaker",
                "instanceName": instance,
                "component": component,
                "operation": "RunInstance",
                "computeType": "CPU" if ".m5." in instance else "GPU",
                "productFamily": "ML Instance",
            },
            "sku": sku,
        },
        "serviceCode": "AmazonSageMaker",
        "terms": {
            "OnDemand": {
                term: {
                    "priceDimensions": {
                        f"{term}.{HOURLY_RATE}": {
                            "unit": "Hrs",
                            "endRange": "Inf",
                            "description": f"${usd} per On Demand {component} {instance} in {location}",
                            "appliesTo": [],
                            "rateCode": f"{term}.{HOURLY_RATE}",
                            "beginRange": "0",
                            "pricePerUnit": {"USD": usd},
                        }
                    },
                    "sku": sku,
                    "effectiveDate": EFFECTIVE,
                    "offerTermCode": ON_DEMAND_TERM,
                    "termAttributes": {},
                }
            }
        },
        "version": "20261120180211",
        "publicationDate": PUBLISHED,
    }


def row(usage_type: str, usd: str, *, region: str, **extra: Any) -> str:
    """A PriceList entry: a JSON string, exactly as GetProducts returns it."""
    return json.dumps(product(usage_type, usd, region=region, **extra))


def expected_request(region: str, token: str | None = None) -> dict[str, Any]:
    request: dict[str, Any] = {
        "ServiceCode": "AmazonSageMaker",
        "FormatVersion": "aws_v1",
        "MaxResults": 100,
        "Filters": [
            {"Type": "TERM_MATCH", "Field": "regionCode", "Value": region},
            {"Type": "CONTAINS", "Field": "usagetype", "Value": "-Train:ml."},
        ],
    }
    if token:
        request["NextToken"] = token
    return request


def answer(stubber: Stubber, region: str, pages: list[list[str]]) -> None:
    """Queue ``region``'s pages on ``stubber``: each page but the last carries a NextToken."""
    token: str | None = None
    for index, entries in enumerate(pages):
        response: dict[str, Any] = {"FormatVersion": "aws_v1", "PriceList": entries}
        following = f"{region}-page-{index + 1}" if index + 1 < len(pages) else None
        if following:
            response["NextToken"] = following
        stubber.add_response("get_products", response, expected_request(region, token))
        token = following
