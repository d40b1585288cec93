"""A Price List (``pricing``) fake: moto has no Pricing service, so this is a botocore Stubber.

Products are rendered in the real ``GetProducts`` format: each ``PriceList`` entry is a JSON *string* with
``product.attributes`` (usagetype, instanceName, regionCode, location, component …) and
``terms.OnDemand.<sku>.<offerTermCode>.priceDimensions.<rateCode>.pricePerUnit.USD`` (unit ``Hrs``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from botocore.awsrequest import AWSResponse
from botocore.stub import Stubber

SERVICE_CODE = "AmazonSageMaker"
# The standard On-Demand offer term and rate codes that appear in every AWS price list.
ON_DEMAND_TERM_CODE = "JRTCKXETXF"
ON_DEMAND_RATE_CODE = "6YS6EN2CT7"
PUBLICATION_DATE = "2026-11-01T00:00:00Z"

# AWS billing usage-type prefixes → (regionCode, location).
REGION_PREFIXES: dict[str, tuple[str, str]] = {
    "USE1": ("us-east-1", "US East (N. Virginia)"),
    "USE2": ("us-east-2", "US East (Ohio)"),
    "USW2": ("us-west-2", "US West (Oregon)"),
    "EUW1": ("eu-west-1", "EU (Ireland)"),
    "EUC1": ("eu-central-1", "EU (Frankfurt)"),
    "APN1": ("ap-northeast-1", "Asia Pacific (Tokyo)"),
    "APS1": ("ap-southeast-1", "Asia Pacific (Singapore)"),
    "APS3": ("ap-south-1", "Asia Pacific (Mumbai)"),
}
ATTRIBUTE_NAMES = ["usagetype", "instanceName", "regionCode", "location", "component", "productFamily", "servicecode"]


def _sku(usage_type: str) -> str:
    digest = hashlib.sha256(usage_type.encode()).hexdigest().upper()
    return "".join(c for c in digest if c.isalnum())[:16]


def price_list_entry(instance_type: str, usd_per_hour: float, region_prefix: str = "USE1") -> dict[str, Any]:
    """One product of the SageMaker price list for on-demand training on ``instance_type``."""
    region_code, location = REGION_PREFIXES.get(region_prefix, (region_prefix.lower(), region_prefix))
    usage_type = f"{region_prefix}-Train:{instance_type}"
    sku = _sku(usage_type)
    term = f"{sku}.{ON_DEMAND_TERM_CODE}"
    rate = f"{term}.{ON_DEMAND_RATE_CODE}"
    return {
        "product": {
            "productFamily": "ML Instance",
            "attributes": {
                "usagetype": usage_type,
                "instanceName": instance_type,
                "regionCode": region_code,
                "location": location,
                "locationType": "AWS Region",
                "component": "Training",
                "productFamily": "ML Instance",
                "operation": "RunInstance",
                "servicecode": SERVICE_CODE,
                "servicename": "Amazon SageMaker",
            },
            "sku": sku,
        },
        "serviceCode": SERVICE_CODE,
        "terms": {
            "OnDemand": {
                term: {
                    "priceDimensions": {
                        rate: {
                            "unit": "Hrs",
                            "endRange": "Inf",
                            "description": f"${usd_per_hour} per On Demand ML Training {instance_type} instance hour in {location}",
                            "appliesTo": [],
                            "rateCode": rate,
                            "beginRange": "0",
                            "pricePerUnit": {"USD": f"{usd_per_hour:.10f}"},
                        }
                    },
                    "sku": sku,
                    "effectiveDate": PUBLICATION_DATE,
                    "offerTermCode": ON_DEMAND_TERM_CODE,
                    "termAttributes": {},
                }
            }
        },
        "version": "20261101000000",
        "publicationDate": PUBLICATION_DATE,
    }


def _matches(attributes: Mapping[str, str], filters: list[dict[str, Any]]) -> bool:
    for flt in filters:
        actual = attributes.get(str(flt.get("Field")))
        wanted = str(flt.get("Value", ""))
        kind = flt.get("Type", "TERM_MATCH")
        if kind in ("TERM_MATCH", "EQUALS"):
            ok = actual is not None and actual.lower() == wanted.lower()
        elif kind == "CONTAINS":
            ok = actual is not None and wanted.lower() in actual.lower()
        elif kind == "ANY_OF":
            ok = actual is not None and actual.lower() in {v.strip().lower() for v in wanted.split(",")}
        elif kind == "NONE_OF":
            ok = actual is None or actual.lower() not in {v.strip().lower() for v in wanted.split(",")}
        else:
            ok = False
        if not ok:
            return False
    return True


class PriceListStubber(Stubber):
    """A Stubber that answers ``get_products`` / ``describe_services`` by matching the request's filters
    (in any order, any number of times) instead of from a FIFO queue. Other operations keep the normal
    Stubber queue semantics (``add_response`` …)."""

    def __init__(self, client: Any, products: list[dict[str, Any]]) -> None:
        super().__init__(client)
        self.products = products
        self.calls: list[dict[str, Any]] = []
        self._pending_params: dict[str, Any] = {}

    def _answers(self, operation: str) -> bool:
        return operation in ("GetProducts", "DescribeServices")

    # Stubber's hooks are private (and absent from botocore's type stubs); overriding them is the only way
    # to answer by request content rather than by queue position.
    def _assert_expected_params(self, model: Any, params: Any, context: Any, **kwargs: Any) -> None:
        if self._answers(model.name):
            # before-call only sees the serialised request, so keep the API parameters for the answer.
            self._pending_params = dict(params)
            return
        super()._assert_expected_params(model, params, context, **kwargs)  # type: ignore[misc]

    def _get_response_handler(self, model: Any, params: Any, context: Any, **kwargs: Any) -> Any:
        if not self._answers(model.name):
            return super()._get_response_handler(model, params, context, **kwargs)  # type: ignore[misc]
        params = self._pending_params
        self.calls.append({"operation": model.name, **params})
        if model.name == "DescribeServices":
            body: dict[str, Any] = {
                "Services": [{"ServiceCode": SERVICE_CODE, "AttributeNames": ATTRIBUTE_NAMES}],
                "FormatVersion": "aws_v1",
            }
        else:
            body = self._get_products(params)
        self._validate_operation_response(model.name, body)  # type: ignore[attr-defined]
        return AWSResponse(None, 200, {}, None), body  # type: ignore[arg-type]

    def _get_products(self, params: Mapping[str, Any]) -> dict[str, Any]:
        if params.get("ServiceCode") != SERVICE_CODE:
            matching: list[dict[str, Any]] = []
        else:
            filters = list(params.get("Filters") or [])
            matching = [p for p in self.products if _matches(p["product"]["attributes"], filters)]
        max_results = int(params.get("MaxResults") or 100)
        offset = int(params.get("NextToken") or 0)
        body: dict[str, Any] = {
            "FormatVersion": "aws_v1",
            "PriceList": [json.dumps(p) for p in matching[offset : offset + max_results]],
        }
        if offset + max_results < len(matching):
            body["NextToken"] = str(offset + max_results)
        return body


def stub_pricing(client: Any, prices: Mapping[str, float], region_prefix: str = "USE1") -> PriceListStubber:
    """Make ``client`` (a boto3 ``pricing`` client) answer GetProducts for on-demand training prices.

    ``prices`` maps instance type → USD per instance-hour; each becomes the product with usage type
    ``<region_prefix>-Train:<instance type>``. The returned Stubber is already active; use it as a context
    manager or call ``deactivate()`` to restore the client. Filters ``TERM_MATCH``/``EQUALS``/``CONTAINS``/
    ``ANY_OF``/``NONE_OF`` on any product attribute are honoured; MaxResults/NextToken paginate.
    """
    products = [price_list_entry(instance, float(usd), region_prefix) for instance, usd in prices.items()]
    stubber = PriceListStubber(client, products)
    stubber.activate()
    return stubber
