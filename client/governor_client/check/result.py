"""What ``check`` reports: findings, the cost estimate, the admission verdict, and the result
``--json`` prints (its schema: docs/check-result.schema.json), with the text rendering."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict

from governor_client.validate.findings import Finding

Status = Literal["ok", "warnings", "refused", "invalid"]
Outcome = Literal["admitted", "stopped on arrival", "queued", "refused", "not judged"]
SCHEMA_ID: Literal["tuning-governor/check-result/v1"] = "tuning-governor/check-result/v1"
#: CI contract: 0 ok, 1 warnings, 2 would be refused; an invalid request is 2 as well (``status`` tells them apart).
EXIT_CODES: dict[Status, int] = {"ok": 0, "warnings": 1, "refused": 2, "invalid": 2}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CostEstimate(_Frozen):
    """The request's cost bounds in USD (None: unknown, because a type has no price or nothing bounds it).

    ``worst_case_usd``: every trial runs its definition's MaxRuntimeInSeconds on its dearest cluster,
    capped by the job's own ResourceLimits.MaxRuntimeInSeconds x MaxParallel. ``typical_usd``: every
    trial runs ``trial_minutes`` (the caller's expectation; None when not given)."""

    worst_case_usd: Decimal | None
    typical_usd: Decimal | None
    trial_minutes: Decimal | None
    max_trials: int | None
    max_parallel: int
    max_trial_runtime_seconds: int
    max_concurrent_instances: dict[str, int]
    worst_case_wall_clock_hours: Decimal | None
    hourly_usd_per_trial: Decimal | None
    hyperband_max_resource: int | None
    spot: bool
    unpriced_types: list[str]
    assumptions: list[str]


class Admission(_Frozen):
    """The governor's verdict now. ``path`` create (the request created directly): admitted or stopped on
    arrival (by ``rule``, with ``numbers``). ``path`` queue (``check --submit``): admitted (created now;
    ``numbers.max_parallel`` when fitted to the share), queued (``numbers.position`` in its team's
    queue, ``behind`` the waiting requests ahead of it), refused (it can never fit: ``message`` says
    why), or stopped on arrival by a rule other than capacity. Not judged: an invalid request."""

    outcome: Outcome
    rule: str | None = None
    message: str | None = None
    numbers: dict[str, Any] = {}
    behind: list[str] = []
    team: str | None = None
    mode: str
    path: Literal["create", "queue"] = "create"


class CheckFinding(Finding):
    """A finding of ``check``: as ``validate``'s, plus, for a large-batch one (``domain.large_batch``), the
    paper or page its rule comes from and the worst-case cost in USD of the trials it puts at risk."""

    source: str | None = None
    usd_at_risk: Decimal | None = None


def _widened(findings: Any) -> Any:
    """Validate's findings read as check's (same fields, no source or cost)."""
    if not isinstance(findings, list):
        return findings
    return [f.model_dump() if isinstance(f, Finding) and not isinstance(f, CheckFinding) else f for f in findings]


class CheckResult(_Frozen):
    """What ``check --json`` prints (its JSON Schema: docs/check-result.schema.json)."""

    schema_id: Literal["tuning-governor/check-result/v1"] = SCHEMA_ID
    request: str
    job_name: str | None
    status: Status
    exit_code: int
    region: str
    capacity_from: str
    admission: Admission
    cost: CostEstimate | None
    findings: Annotated[list[CheckFinding], BeforeValidator(_widened)]


def status_of(findings: list[Finding], admission: Admission) -> Status:
    """invalid (the request breaks SageMaker's model) > refused (stopped on arrival, or never fits) >
    warnings > ok."""
    if any(f.code.startswith("invalid-") or f.code == "unknown-field" for f in findings):
        return "invalid"
    if admission.outcome in {"stopped on arrival", "refused"} or any(f.severity == "error" for f in findings):
        return "refused"
    return "warnings" if any(f.severity == "warning" for f in findings) else "ok"


def _money(value: Decimal | None) -> str:
    return "unknown" if value is None else f"${value:,.2f}"


def _cited(finding: CheckFinding) -> str:
    if finding.source is None:
        return ""
    risk = "" if finding.usd_at_risk is None else f"; worst case of the trials at risk {_money(finding.usd_at_risk)}"
    return f" (source: {finding.source}{risk})"


def render_text(result: CheckResult) -> str:
    """Linter-style lines: the verdict, the cost, each finding, and a closing summary line."""
    name = result.request
    verdict = result.admission
    how = f" by rule {verdict.rule}" if verdict.rule else ""
    lines = [
        f"{name}: verdict {verdict.outcome}{how}" + (" (submitted to the queue)" if verdict.path == "queue" else "")
    ]
    if verdict.message:
        lines.append(f"{name}:   {verdict.message}")
    if result.cost is not None:
        cost = result.cost
        at_once = ", ".join(f"{n} x {t}" for t, n in cost.max_concurrent_instances.items())
        lines.append(
            f"{name}: cost worst case {_money(cost.worst_case_usd)}, typical {_money(cost.typical_usd)}"
            f" ({cost.max_trials or 'unbounded'} trials, {cost.max_parallel} in parallel,"
            f" up to {cost.max_trial_runtime_seconds} s each; at once: {at_once or 'unknown'})"
        )
    lines += [
        f"{name}: {f.severity} [{f.code}] {f.path + ': ' if f.path else ''}{f.message}{_cited(f)}"
        for f in result.findings
    ]
    counts = {s: sum(f.severity == s for f in result.findings) for s in ("error", "warning", "note")}
    lines.append(
        f"{name}: {result.status} (exit {result.exit_code}; {counts['error']} errors, {counts['warning']} warnings,"
        f" {counts['note']} notes; capacity from {result.capacity_from})"
    )
    return "\n".join(lines)


def json_schema() -> dict[str, object]:
    """The JSON Schema of ``--json`` (written to docs/check-result.schema.json)."""
    return CheckResult.model_json_schema()
