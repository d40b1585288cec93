"""``check_request``: a CreateHyperParameterTuningJob request judged before launch (the Python API)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from governor_client.check.result import EXIT_CODES, Admission, CheckResult, CostEstimate, status_of
from governor_client.check.validation import model_findings
from governor_client.cli.defaults import DEFAULT_REGION
from governor_client.validate.findings import Finding

if TYPE_CHECKING:
    from governor_client.check.queue_view import SubmissionQueue
    from tuning_governor.domain.capacity import Holder
    from tuning_governor.domain.pricing import PriceCatalog
    from tuning_governor.models.tuning_job import TuningJob
    from tuning_governor.policy import Policy
    from tuning_governor.ports.quotas import Quotas

# A request SageMaker's model refuses is answered from botocore's model alone: the governor's layer (its
# models, prices and arrival rules) is imported only to judge a valid one.


def _parsed(request: Mapping[str, Any]) -> TuningJob | Finding:
    from pydantic import ValidationError  # noqa: PLC0415 - see the imports' note

    from tuning_governor.models.tuning_job import TuningJob  # noqa: PLC0415

    try:
        return TuningJob.model_validate(dict(request) | {"HyperParameterTuningJobStatus": "InProgress"})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return Finding(severity="error", code="invalid-request", path=where or None, message=first["msg"])


def _invalid(
    source: str, request: Mapping[str, Any], findings: list[Finding], region: str, capacity: str
) -> CheckResult:
    name = request.get("HyperParameterTuningJobName")
    return CheckResult(
        request=source,
        job_name=name if isinstance(name, str) else None,
        status="invalid",
        exit_code=EXIT_CODES["invalid"],
        region=region,
        capacity_from=capacity,
        admission=Admission(outcome="not judged", mode="unknown"),
        cost=None,
        findings=findings,
    )


def check_request(  # noqa: PLR0913 - keyword-only: one per source the check reads (policy, prices, capacity)
    request: Mapping[str, Any],
    policy: Policy | None = None,
    *,
    region: str = DEFAULT_REGION,
    catalog: PriceCatalog | Callable[[], PriceCatalog] | None = None,
    holders: Iterable[Holder] = (),
    quotas: Quotas | None = None,
    trial_minutes: float | Decimal | None = None,
    now: datetime | None = None,
    source: str = "request",
    capacity_from: str = "policy quotas",
    queue: SubmissionQueue | None = None,
) -> CheckResult:
    """Judge ``request`` (the keyword arguments of boto3's ``create_hyper_parameter_tuning_job``, or the
    ``--cli-input-json`` document) under ``policy`` (default: the empty policy, monitor mode).

    Callers may rely on: ``status`` ``invalid`` (exit 2) when the request breaks SageMaker's API model
    (then nothing else is judged), ``refused`` (exit 2) when the governor would stop it on arrival now or
    it can never fit, ``warnings`` (exit 1), ``ok`` (exit 0); costs in USD, None when unknown (never 0).
    ``holders``: what holds training instances now (default: nothing, an idle account); ``quotas``: the
    account's Service Quotas (a ``tuning_governor.ports.quotas.Quotas``; default: the policy's alone).
    ``catalog``: the prices (default: the bundled catalogue), or a function returning them, called only
    for a valid request. ``queue``: judge it as a submission to the governor's queue (``SubmissionQueue``: what waits, what
    holds instances) instead of a direct CreateHyperParameterTuningJob; ``refused`` then also means the
    queue would refuse it (it can never fit its team's share or the quota).
    """
    invalid = model_findings(request)
    if invalid:
        return _invalid(source, request, invalid, region, capacity_from)
    job = _parsed(request)
    if isinstance(job, Finding):
        return _invalid(source, request, [job], region, capacity_from)
    return _judged(
        request,
        job,
        policy,
        region=region,
        catalog=catalog,
        holders=holders,
        quotas=quotas,
        trial_minutes=trial_minutes,
        at=now or datetime.now(UTC),
        where=(source, capacity_from),
        queue=queue,
    )


def _judged(  # noqa: PLR0913 - check_request's sources, passed on
    request: Mapping[str, Any],
    job: TuningJob,
    policy: Policy | None,
    *,
    region: str,
    catalog: PriceCatalog | Callable[[], PriceCatalog] | None,
    holders: Iterable[Holder],
    quotas: Quotas | None,
    trial_minutes: float | Decimal | None,
    at: datetime,
    where: tuple[str, str],
    queue: SubmissionQueue | None,
) -> CheckResult:
    """A valid request judged: the governor's arrival rules, its cost, the lint (see the imports' note)."""
    from governor_client.check.batch_lint import batch_findings  # noqa: PLC0415
    from governor_client.check.cost import estimate  # noqa: PLC0415
    from governor_client.check.lint import cost_findings, request_findings  # noqa: PLC0415
    from governor_client.check.verdict import decision_findings, queue_verdict, verdict  # noqa: PLC0415
    from tuning_governor.app.checks.preflight import preflight  # noqa: PLC0415
    from tuning_governor.domain.pricing import bundled_catalog  # noqa: PLC0415
    from tuning_governor.policy import Policy  # noqa: PLC0415

    policy = policy or Policy()
    base = catalog() if callable(catalog) else catalog
    prices = (base or bundled_catalog()).with_policy_prices(policy.price_overrides(), policy.regional_prices())
    judged = preflight(job, policy=policy, catalog=prices, region=region, at=at, holders=holders, quotas=quotas)
    cost = estimate(job, region, prices, Decimal(str(trial_minutes)) if trial_minutes is not None else None)
    findings = [
        *decision_findings(judged),
        *price_findings(prices, region, job),
        *request_findings(request),
        *cost_findings(cost, policy, job.tags, job.role_arns()),
        *batch_findings(request, policy, cost, policy.team_of(job.tags, job.role_arns())),
    ]
    admission = queue_verdict(judged, request, queue, at) if queue is not None else verdict(judged, job.name)
    return _result(where[0], job.name, region, where[1], admission, cost, findings)


def price_findings(prices: PriceCatalog, region: str, job: TuningJob) -> list[Finding]:
    """approximate-price (note): the request's types whose price in ``region`` is not AWS's Price List figure
    there, the price used, and the one command that fetches AWS's (``governor_client.prices.approximate``)."""
    types = {t for d in job.definitions() for shape in d.alternatives() for t in shape}
    from governor_client.prices import approximate as approximate_prices  # noqa: PLC0415 - see the imports' note

    message = approximate_prices.describe(approximate_prices.approximate_prices(prices, region, types))
    return [Finding(severity="note", code="approximate-price", path=None, message=message)] if message else []


def _result(
    source: str,
    name: str,
    region: str,
    capacity_from: str,
    admission: Admission,
    cost: CostEstimate,
    findings: list[Finding],
) -> CheckResult:
    status = status_of(findings, admission)
    return CheckResult(
        request=source,
        job_name=name,
        status=status,
        exit_code=EXIT_CODES[status],
        region=region,
        capacity_from=capacity_from,
        admission=admission,
        cost=cost,
        findings=findings,
    )
