"""What ``validate`` reports: findings (severity, stable code, path, message), the result ``--format json``
prints (its schema: docs/validate-result.schema.json), and the linter-style text rendering."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict

Severity = Literal["error", "warning", "note"]
Status = Literal["ok", "warnings", "broken"]
SCHEMA_ID: Literal["tuning-governor/validate-result/v1"] = "tuning-governor/validate-result/v1"
EXIT_CODES: dict[Status, int] = {"ok": 0, "warnings": 1, "broken": 2}

# Quota lookup for --account: an instance type -> the account's concurrent training instances, or None.
AccountQuota = Callable[[str], int | None]


class Finding(BaseModel):
    """One problem: how bad, a stable code for CI filters, where in the document, and what to do."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    severity: Severity
    code: str
    path: str | None
    message: str


class ValidationResult(BaseModel):
    """What ``--format json`` prints (its JSON Schema: docs/validate-result.schema.json)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_id: Literal["tuning-governor/validate-result/v1"] = SCHEMA_ID
    policy: str
    status: Status
    exit_code: int
    region: str
    account_checked: bool
    findings: list[Finding]


def render_text(result: ValidationResult) -> str:
    """Linter-style lines ``POLICY: severity [code] path: message`` and a closing summary line."""
    lines = [
        f"{result.policy}: {f.severity} [{f.code}] {f.path + ': ' if f.path else ''}{f.message}"
        for f in result.findings
    ]
    counts = {s: sum(f.severity == s for f in result.findings) for s in ("error", "warning", "note")}
    lines.append(
        f"{result.policy}: {result.status} ({counts['error']} errors, {counts['warning']} warnings,"
        f" {counts['note']} notes)"
    )
    return "\n".join(lines)


def json_schema() -> dict[str, object]:
    """The JSON Schema of ``--format json`` (written to docs/validate-result.schema.json)."""
    return ValidationResult.model_json_schema()
