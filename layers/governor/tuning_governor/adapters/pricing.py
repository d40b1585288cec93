"""The AWS Price List Query API (boto3 ``pricing``): SageMaker's on-demand training prices, per region.

The Query API answers only in us-east-1, eu-central-1 and ap-south-1 (botocore endpoints); the
client handed in must be built for one of them, whatever region the governor runs in. Rows are
returned as AWS sends them (each PriceList entry a JSON string); parsing is the domain's
(``tuning_governor.domain.pricing.parse_price_list_row``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar

from botocore.exceptions import BotoCoreError, ClientError

from tuning_governor.errors import TransientError

if TYPE_CHECKING:
    from mypy_boto3_pricing import PricingClient

SERVICE_CODE = "AmazonSageMaker"
PRICING_REGION = "us-east-1"
PAGE_SIZE = 100  # GetProducts' maximum
THROTTLED = frozenset({"ThrottlingException", "InternalErrorException", "ServiceUnavailableException"})


class PriceListUnavailable(TransientError):
    """The Price List could not be read for a region (throttled, or the service failed)."""


class PriceListGateway:
    permissions: ClassVar[dict[str, str]] = {"training_rows": "pricing:GetProducts"}

    def __init__(self, client: PricingClient, *, page_size: int = PAGE_SIZE, max_pages: int = 50) -> None:
        self._client = client
        self._page_size = page_size
        self._max_pages = max_pages

    def training_rows(self, region: str) -> Iterator[str]:
        """Every PriceList entry AWS lists for SageMaker training in ``region``, page after page.

        The filters narrow the answer to the region's ``…-Train:ml.…`` usage types; the caller still
        checks each row (spot ``TrSpt`` rows, other regions and other components are rejected there).
        """
        request: dict[str, Any] = {
            "ServiceCode": SERVICE_CODE,
            "FormatVersion": "aws_v1",
            "MaxResults": self._page_size,
            "Filters": [
                {"Type": "TERM_MATCH", "Field": "regionCode", "Value": region},
                {"Type": "CONTAINS", "Field": "usagetype", "Value": "-Train:ml."},
            ],
        }
        for _ in range(self._max_pages):
            try:
                page = self._client.get_products(**request)
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code", "")
                if code in THROTTLED:
                    raise PriceListUnavailable(f"Price List {code} for {region}") from exc
                raise
            except BotoCoreError as exc:  # read/connect timeouts, connection resets (after the client's retries)
                raise PriceListUnavailable(f"Price List unreachable for {region}: {type(exc).__name__}") from exc
            yield from page.get("PriceList", [])
            token = page.get("NextToken")
            if not token:
                return
            request["NextToken"] = token
        raise PriceListUnavailable(f"Price List for {region} has more than {self._max_pages} pages")
