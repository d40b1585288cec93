"""Service Quotas for ServiceCode ``sagemaker`` under moto (which only knows ``vpc``).

Quota codes come from aws-facts §4 where known. Codes beginning ``L-GOV`` are INVENTED by this stand-in
(stable, clearly not AWS's) for quotas whose real code the facts do not list; a governor must resolve
codes by ``QuotaName`` at runtime anyway. Default values marked "placeholder" are not from any AWS
source: AWS defaults vary by account and region.
"""

from __future__ import annotations

import importlib
import json
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any, ClassVar, cast

from moto.core.exceptions import JsonRESTError
from moto.servicequotas.models import ServiceQuotasBackend, servicequotas_backends
from moto.servicequotas.responses import ServiceQuotasResponse

from ._patching import Patches

SERVICE_CODE = "sagemaker"
SERVICE_NAME = "Amazon SageMaker"

TRAINING = "for training job usage"
SPOT_TRAINING = "for spot training job usage"
WARM_POOL = "for training warm pool usage"


@dataclass(frozen=True)
class QuotaDefinition:
    """One quota: its code, name, AWS default value and whether it can be raised."""

    code: str
    name: str
    default: float
    adjustable: bool = True
    account_value: float | None = None
    """The stand-in account's applied value before any ``set_applied`` when it differs from AWS's
    default (an account that has had the quota raised); None: the default is applied."""


# General training / HPO quotas (codes and seen defaults: aws-facts §4).
GENERAL_QUOTAS: tuple[QuotaDefinition, ...] = (
    # The stand-in's account has had both account-wide counts raised to 200 (a placeholder, as for a
    # team that trains at scale); AWS's default values stay what GetAWSDefaultServiceQuota serves.
    QuotaDefinition("L-00C91CB5", "Number of instances across all training jobs", 4, account_value=200),
    QuotaDefinition(
        "L-93958082", "Number of instances across all spot training jobs", 4, account_value=200
    ),  # default: placeholder
    QuotaDefinition("L-622CFD70", "Maximum number of instances per training job", 20),
    QuotaDefinition("L-DB62C864", "Maximum number of instances per spot training job", 20),  # default: placeholder
    QuotaDefinition("L-33A961FD", "Longest run time for a training job", 432_000),
    QuotaDefinition("L-C5A266EB", "Size of EBS volume for a training job instance", 1024),
    QuotaDefinition(
        "L-9D782CC7", "Maximum number of hyper parameter tuning jobs that can run at once in parallel", 100
    ),  # default: placeholder
    QuotaDefinition(
        "L-EAC49F53", "Maximum number of training jobs that each hyperparameter tuning job can create", 750
    ),
    QuotaDefinition(
        "L-52DB9D33",
        "Maximum number of training jobs that each hyperparameter tuning job with Random search strategy can create",
        500,
    ),
    QuotaDefinition(
        "L-11294128", "Maximum number of training jobs each hyper parameter tuning job can run in parallel at once", 10
    ),
)

# Per instance type: (training, spot training, warm pool) codes; None = not in aws-facts §4.
_TYPE_CODES: dict[str, tuple[str | None, str | None, str | None]] = {
    "ml.m5.large": ("L-611FA074", "L-29688C85", "L-2DD73636"),
    "ml.m5.xlarge": ("L-CCE2AFA6", "L-4CEE6BA6", "L-0BEF44E8"),
    "ml.m5.2xlarge": ("L-AD0A282D", "L-4A823FAB", "L-1686EE8B"),
    "ml.m5.4xlarge": ("L-AFB011B4", "L-2A6ACFF7", "L-03767DF9"),
    "ml.c5.xlarge": ("L-E2BB44FE", "L-6FA0D387", "L-F978BE20"),
    "ml.c5.2xlarge": ("L-49679826", "L-4581C083", "L-0D58D77C"),
    "ml.g4dn.xlarge": ("L-3F53BF0F", "L-944F78BB", "L-955074FD"),
    "ml.g5.xlarge": ("L-B6D80D9C", "L-DE07CBDF", "L-8E6F4665"),
    "ml.g5.2xlarge": ("L-2D6DEB3C", "L-CAEE7DB7", "L-822C5A39"),
    "ml.g5.12xlarge": ("L-C6383286", "L-03E19172", "L-29508C65"),
    "ml.g5.48xlarge": ("L-6BC98A55", "L-C87FF004", "L-7D217E5D"),
    "ml.p4d.24xlarge": ("L-09B4A649", "L-09D56C4F", "L-A8827666"),
    "ml.p5.48xlarge": ("L-82E1C851", "L-82733FAD", None),
    "ml.p5.4xlarge": ("L-C2764A80", None, None),
    "ml.p3.2xlarge": (None, None, None),
    "ml.p3.8xlarge": (None, None, None),
    "ml.p3.16xlarge": (None, None, None),
    "ml.trn1.32xlarge": (None, None, None),
}

# Default applied values per type (training, spot). PLACEHOLDERS: small CPU types get a usable default,
# large accelerated types start at 0 as in new accounts. Warm-pool quotas default to 0 (they must be
# requested before warm pools can be used).
_TYPE_DEFAULTS: dict[str, float] = {
    "ml.m5.large": 20,
    "ml.m5.xlarge": 20,
    "ml.m5.2xlarge": 20,
    "ml.m5.4xlarge": 10,
    "ml.c5.xlarge": 20,
    "ml.c5.2xlarge": 20,
    "ml.g4dn.xlarge": 4,
    "ml.g5.xlarge": 4,
    "ml.g5.2xlarge": 4,
    "ml.g5.12xlarge": 2,
    "ml.p3.2xlarge": 2,
}


def invented_code(quota_name: str) -> str:
    """A stable code for a quota whose AWS code is unknown. INVENTED: starts with ``L-GOV``."""
    return f"L-GOV{zlib.crc32(quota_name.encode()) & 0xFFFFF:05X}"


def per_type_quotas(instance_type: str) -> tuple[QuotaDefinition, QuotaDefinition, QuotaDefinition]:
    """The training, spot-training and warm-pool quotas of ``instance_type``."""
    codes = _TYPE_CODES.get(instance_type, (None, None, None))
    default = _TYPE_DEFAULTS.get(instance_type, 0)
    names = (f"{instance_type} {TRAINING}", f"{instance_type} {SPOT_TRAINING}", f"{instance_type} {WARM_POOL}")
    training, spot, warm = (
        QuotaDefinition(code or invented_code(name), name, value)
        for code, name, value in zip(codes, names, (default, default, 0), strict=True)
    )
    return training, spot, warm


class QuotaCatalogue:
    """Known SageMaker quotas and the values applied to an account (per account and region).

    Unknown instance types become known the first time a quota is applied to them.
    """

    def __init__(self) -> None:
        self._instance_types: list[str] = list(_TYPE_CODES)
        self._applied: dict[tuple[str, str, str], float] = {}
        # Quotas with no applied value in an account: ListServiceQuotas leaves them out ("If the
        # applied quota value is not available for a quota, the quota is not retrieved", aws-facts §8);
        # only the default-value APIs answer for them.
        self._unapplied: set[tuple[str, str, str]] = set()

    def definitions(self) -> Iterator[QuotaDefinition]:
        yield from GENERAL_QUOTAS
        for instance_type in self._instance_types:
            yield from per_type_quotas(instance_type)

    def resolve(self, quota_name_or_instance_type_or_code: str) -> QuotaDefinition:
        """Find a quota by code, exact name, or instance type (→ its "for training job usage" quota)."""
        key = quota_name_or_instance_type_or_code
        for definition in self.definitions():
            if key in (definition.code, definition.name):
                return definition
        if key.startswith("ml."):
            instance_type = key
            for suffix in (f" {TRAINING}", f" {SPOT_TRAINING}", f" {WARM_POOL}"):
                instance_type = instance_type.removesuffix(suffix)
            if instance_type not in self._instance_types:
                self._instance_types.append(instance_type)
            by_name = {d.name: d for d in per_type_quotas(instance_type)}
            return by_name.get(key, by_name[f"{instance_type} {TRAINING}"])
        raise KeyError(f"unknown SageMaker quota {key!r}")

    def set_applied(self, account_id: str, region: str, quota: str, value: float) -> QuotaDefinition:
        definition = self.resolve(quota)
        self._applied[(account_id, region, definition.code)] = float(value)
        self._unapplied.discard((account_id, region, definition.code))
        return definition

    def clear_applied(self, account_id: str, region: str, quota: str) -> QuotaDefinition:
        """Make ``quota`` one without an applied value: listed only by the AWS-default APIs."""
        definition = self.resolve(quota)
        self._applied.pop((account_id, region, definition.code), None)
        self._unapplied.add((account_id, region, definition.code))
        return definition

    def has_applied(self, account_id: str, region: str, definition: QuotaDefinition) -> bool:
        return (account_id, region, definition.code) not in self._unapplied

    def render(self, account_id: str, region: str, definition: QuotaDefinition, applied: bool = True) -> dict[str, Any]:
        """The ``ServiceQuota`` shape (``applied=False``: the AWS default value)."""
        start = definition.default if definition.account_value is None else definition.account_value
        value = self._applied.get((account_id, region, definition.code), start) if applied else definition.default
        return {
            "ServiceCode": SERVICE_CODE,
            "ServiceName": SERVICE_NAME,
            "QuotaArn": f"arn:aws:servicequotas:{region}:{account_id}:{SERVICE_CODE}/{definition.code}",
            "QuotaCode": definition.code,
            "QuotaName": definition.name,
            "Value": float(value),
            "Unit": "None",
            "Adjustable": definition.adjustable,
            "GlobalQuota": False,
            "QuotaAppliedAtLevel": "ACCOUNT",
        }

    def find(self, code: str) -> QuotaDefinition:
        for definition in self.definitions():
            if definition.code == code:
                return definition
        raise NoSuchQuota(code)


class NoSuchQuota(JsonRESTError):
    """NoSuchResourceException for an unknown quota code."""

    def __init__(self, code: str) -> None:
        super().__init__(
            "NoSuchResourceException", f"The request failed because the specified quota {code} does not exist."
        )


class GovernedServiceQuotasBackend(ServiceQuotasBackend):
    """moto's Service Quotas backend that also answers for ``sagemaker``."""

    catalogue: ClassVar[QuotaCatalogue | None] = None

    @property
    def _url_module(self) -> ModuleType:
        # moto derives the URL module from the backend's module name; ours lives outside moto.
        return importlib.import_module("moto.servicequotas.urls")

    def _sagemaker(self, service_code: str) -> QuotaCatalogue | None:
        return self.catalogue if service_code == SERVICE_CODE else None

    def get_service_quota(self, service_code: str, quota_code: str) -> dict[str, Any]:
        catalogue = self._sagemaker(service_code)
        if catalogue is None:
            return super().get_service_quota(service_code, quota_code)
        definition = catalogue.find(quota_code)
        if not catalogue.has_applied(self.account_id, self.region_name, definition):
            # Our reading: a quota without an applied value is not found by the applied-value API.
            raise NoSuchQuota(quota_code)
        return catalogue.render(self.account_id, self.region_name, definition)

    def get_aws_default_service_quota(self, service_code: str, quota_code: str) -> dict[str, Any]:
        catalogue = self._sagemaker(service_code)
        if catalogue is None:
            # moto has no defaults API; for vpc its applied values are the defaults.
            return super().get_service_quota(service_code, quota_code)
        return catalogue.render(self.account_id, self.region_name, catalogue.find(quota_code), applied=False)

    def list_aws_default_service_quotas(self, service_code: str) -> list[dict[str, Any]]:
        catalogue = self._sagemaker(service_code)
        if catalogue is None:
            return super().list_aws_default_service_quotas(service_code)
        return [catalogue.render(self.account_id, self.region_name, d, applied=False) for d in catalogue.definitions()]

    def list_service_quotas(self, service_code: str) -> list[dict[str, Any]]:
        catalogue = self._sagemaker(service_code)
        if catalogue is None:
            # moto's applied values for vpc are its defaults.
            return super().list_aws_default_service_quotas(service_code)
        return [
            catalogue.render(self.account_id, self.region_name, d)
            for d in catalogue.definitions()
            if catalogue.has_applied(self.account_id, self.region_name, d)
        ]


def _paginate(items: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
    max_results = int(params.get("MaxResults") or 100)
    if not 1 <= max_results <= 100:
        raise JsonRESTError("ValidationException", "MaxResults must be between 1 and 100.")
    try:
        offset = int(params.get("NextToken") or 0)
    except ValueError as exc:
        raise JsonRESTError("InvalidPaginationTokenException", "Invalid pagination token.") from exc
    page = items[offset : offset + max_results]
    body: dict[str, Any] = {"Quotas": page}
    if offset + max_results < len(items):
        body["NextToken"] = str(offset + max_results)
    return body


def _handle_list_service_quotas(self: ServiceQuotasResponse) -> str:
    params = json.loads(self.body)
    backend = self.backend
    if not isinstance(backend, GovernedServiceQuotasBackend):
        raise NotImplementedError("the AMT stand-in is not installed")
    quotas = backend.list_service_quotas(str(params.get("ServiceCode")))
    if params.get("QuotaCode"):
        quotas = [q for q in quotas if q["QuotaCode"] == params["QuotaCode"]]
    return json.dumps(_paginate(quotas, params))


def _handle_list_aws_default_service_quotas(self: ServiceQuotasResponse) -> str:
    params = json.loads(self.body)
    quotas = self.backend.list_aws_default_service_quotas(str(params.get("ServiceCode")))
    return json.dumps(_paginate(quotas, params))


def _handle_get_aws_default_service_quota(self: ServiceQuotasResponse) -> str:
    params = json.loads(self.body)
    backend = self.backend
    if not isinstance(backend, GovernedServiceQuotasBackend):
        raise NotImplementedError("the AMT stand-in is not installed")
    quota = backend.get_aws_default_service_quota(str(params.get("ServiceCode")), str(params.get("QuotaCode")))
    return json.dumps({"Quota": quota})


HANDLERS: dict[str, Callable[[ServiceQuotasResponse], str]] = {
    "list_service_quotas": _handle_list_service_quotas,
    "list_aws_default_service_quotas": _handle_list_aws_default_service_quotas,
    "get_aws_default_service_quota": _handle_get_aws_default_service_quota,
}


def install(catalogue: QuotaCatalogue) -> Callable[[], None]:
    """Make moto's Service Quotas answer for ``sagemaker`` from ``catalogue``; returns the undo function."""
    if GovernedServiceQuotasBackend.catalogue is not None:
        raise RuntimeError("an AMT stand-in is already installed; uninstall it first")
    patches = Patches()
    patches.set(GovernedServiceQuotasBackend, "catalogue", catalogue)
    patches.set(servicequotas_backends, "backend", GovernedServiceQuotasBackend)
    for account_backends in servicequotas_backends.values():
        patches.set(account_backends, "backend", GovernedServiceQuotasBackend)
        for backend in account_backends.values():
            if type(backend) is ServiceQuotasBackend:
                patches.set(backend, "__class__", GovernedServiceQuotasBackend)
    for name, handler in HANDLERS.items():
        patches.set(ServiceQuotasResponse, name, handler)

    def undo() -> None:
        patches.undo()
        for account_backends in servicequotas_backends.values():
            for backend in account_backends.values():
                if type(backend) is GovernedServiceQuotasBackend:
                    cast(Any, backend).__class__ = ServiceQuotasBackend

    return undo
