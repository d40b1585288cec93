"""Human reports, channel-neutral: what a report says (a headline, a lead line, labelled facts, notes,
paragraphs, and a plain-text body), never how a channel draws it.

Each channel under ``tuning_governor.adapters.channels`` renders a :class:`Report` its own way (Slack
Block Kit, SNS text with filterable attributes, a Microsoft Teams Adaptive Card) and escapes free text
by its own rules: every value here is plain, untrusted text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any, Literal, NotRequired, TypedDict, Unpack

from pydantic import ConfigDict

from tuning_governor.model_base import GovernorModel
from tuning_governor.models.decisions import Decision
from tuning_governor.models.records import JobSummary

__all__ = ["Fact", "Lead", "Note", "Report", "decision_report", "summary_report"]

OUTCOMES = {"Completed": "completed", "Stopped": "stopped", "Failed": "failed"}
#: One governance decision as a summary report lists it: (rule, verdict, action).
DecisionLine = tuple[str, str, str]
#: SNS message attribute values and AWS tag values: at most 256 characters kept from the owner tag.
_MAX_OWNER = 256
TEAM_OWNER = "Team / owner"


class Fact(GovernorModel):
    """A labelled value. ``role``: ``owner`` (the value is the job's owner: a channel may mention its
    handle instead) or ``team-owner`` (``team / owner``, with ``team`` the team alone)."""

    model_config = ConfigDict(frozen=True)

    label: str
    value: str
    role: Literal["text", "owner", "team-owner"] = "text"
    team: str | None = None


class Lead(GovernorModel):
    """The line a decision report leads with: ``title`` (the rule) emphasised, ``qualifier`` (the
    verdict) beside it, then ``text`` (why)."""

    model_config = ConfigDict(frozen=True)

    title: str
    qualifier: str
    text: str


class Note(GovernorModel):
    """A small-print line under the facts; ``warning`` marks it as one."""

    model_config = ConfigDict(frozen=True)

    text: str
    warning: bool = False


class Report(GovernorModel):
    """One message, rendered by every channel. ``text`` is the whole report as plain text (SNS, email);
    ``headline``, ``lead``, ``facts``, ``notes`` and ``paragraphs`` are its parts for channels that draw
    them. ``attributes`` feed SNS filter policies; ``team`` routes it to the team's own channels too (see
    ``tuning_governor.policy.routing``); ``owner`` is the job's owner tag value, as given (untrusted
    text); ``handles`` the owner's handle per channel kind (``{"slack": "U012AB3CD"}``), when known."""

    model_config = ConfigDict(frozen=True)

    kind: str
    job_key: str
    subject: str
    text: str
    attributes: dict[str, str]
    headline: str | None = None
    lead: Lead | None = None
    facts: tuple[Fact, ...] = ()
    notes: tuple[Note, ...] = ()
    paragraphs: tuple[str, ...] = ()
    team: str | None = None
    owner: str | None = None
    handles: Mapping[str, str] = {}


def clean_owner(owner: str | None) -> str | None:
    """The owner tag value trimmed and cut to 256 characters; None when absent or blank."""
    value = (owner or "").strip()[:_MAX_OWNER]
    return value or None


def _attributes(base: dict[str, str], owner: str | None) -> dict[str, str]:
    # SNS rejects an empty attribute value: the owner attribute is there only when it is known.
    name = clean_owner(owner)
    return base | {"owner": name} if name else base


def _money(value: Decimal | None) -> str:
    return "unpriced" if value is None else f"${value:,.2f}"


def _duration(seconds: int | Decimal | None) -> str:
    if seconds is None:
        return "n/a"
    total = int(seconds)
    hours, rest = divmod(total, 3600)
    return f"{hours}h {rest // 60:02d}m" if hours else f"{rest // 60}m {rest % 60:02d}s"


def _early_stopping_text(summary: JobSummary) -> str:
    """The seed's terms: billable instance-minutes against the same trials without early stopping."""
    es = summary.cost.early_stopping
    text = f"{es.trials_stopped_early} trials stopped early"
    if es.trials_cut_by_job_stop:
        text += f", {es.trials_cut_by_job_stop} cut short by the job's stop (not counted)"
    return (
        f"{text}; {summary.cost.billable_instance_seconds / 60:,.1f} billable instance-min vs"
        f" ~{es.billable_instance_seconds_without_early_stopping / 60:,.1f} without early stopping"
        f" (saved ~{_money(es.saved_usd)})"
    )


def _lines(summary: JobSummary) -> list[tuple[str, str]]:
    cost = summary.cost
    objective = summary.objective
    rows: list[tuple[str, str]] = [
        ("Status", summary.status),
        (TEAM_OWNER, f"{summary.team or '-'} / {summary.owner or '-'}"),
        ("Trials", ", ".join(f"{k} {v}" for k, v in summary.trials_by_status.items()) or "none"),
    ]
    if objective is not None:
        value = "n/a" if objective.value is None else f"{objective.value:.6g}"
        rows.append((f"Best {objective.name} ({objective.type})", f"{value} in {summary.best_training_job or '-'}"))
    if summary.best_hyperparameters:
        rows.append(
            (
                "Best hyperparameters",
                ", ".join(f"{k}={v}" for k, v in sorted(summary.best_hyperparameters.items())),
            )
        )
    cost_text = _money(cost.cost_usd)
    if cost.status == "partial":
        cost_text = (
            f"partial: {_money(cost.priced_cost_usd)} priced, {', '.join(cost.unpriced_instance_types)} unpriced"
        )
    if cost.approximate_instance_types:
        cost_text += f" (approximate: {', '.join(cost.approximate_instance_types)} at the highest known price)"
    rows += [
        ("Cost", cost_text),
        ("Billable instance-hours", f"{cost.billable_instance_hours}"),
        ("Spot savings", _money(cost.spot_savings_usd) if cost.spot_trials else "no spot trials"),
        ("Early stopping", _early_stopping_text(summary)),
        (
            "Wall clock vs without early stopping",
            f"{_duration(summary.timing.wall_clock_seconds)} vs"
            f" ~{_duration(summary.timing.estimate_without_early_stopping_seconds)}"
            f" (one at a time ~{_duration(summary.timing.one_at_a_time_seconds)})",
        ),
    ]
    if summary.failure_reason:
        rows.append(("Failure reason", summary.failure_reason))
    return rows


def _summary_facts(summary: JobSummary, rows: list[tuple[str, str]]) -> tuple[Fact, ...]:
    return tuple(
        Fact(label=label, value=value, role="team-owner", team=summary.team or "-")
        if label == TEAM_OWNER
        else Fact(label=label, value=value)
        for label, value in rows
    )


def summary_report(
    summary: JobSummary, decisions: Sequence[DecisionLine] = (), *, handles: Mapping[str, str] | None = None
) -> Report:
    """The report sent once when a tuning job finishes. ``decisions``: the governance decisions made
    on the job (rule, verdict, action), including those judged after it ended (``already-ended``).
    ``handles``: the owner's handle per channel kind (a Slack member ID to mention), if known."""
    outcome = OUTCOMES.get(summary.status, summary.status.lower())
    subject = f"[tuning-governor] {summary.job_name} {outcome}: {_money(summary.cost.cost_usd)}"[:100]
    rows = _lines(summary)
    if decisions:
        rows.append(("Decisions", "; ".join(f"{rule} {verdict} ({action})" for rule, verdict, action in decisions)))
    text_lines = [f"Tuning job {summary.job_name} ({summary.region}) {outcome}.", ""]
    text_lines += [f"{label}: {value}" for label, value in rows]
    for warning in summary.warnings:
        text_lines.append(f"Warning: {warning}")
    return Report(
        kind=f"summary-{outcome}",
        job_key=summary.job_key,
        subject=subject,
        text="\n".join(text_lines),
        attributes=_attributes(
            {"status": summary.status, "team": summary.team or "unknown", "outcome": outcome}, summary.owner
        ),
        headline=f"Tuning job {outcome}: {summary.job_name}",
        facts=_summary_facts(summary, rows),
        notes=tuple(Note(text=warning, warning=True) for warning in summary.warnings),
        team=summary.team,
        owner=clean_owner(summary.owner),
        handles=dict(handles or {}),
    )


def corrected_report(
    summary: JobSummary,
    reported_usd: Decimal,
    decisions: Sequence[DecisionLine] = (),
    *,
    handles: Mapping[str, str] | None = None,
) -> Report:
    """The one correction of a summary report whose figures changed after it went out (trials recorded
    late, or warm-pool retention billed after the job ended); ``reported_usd``: what the report said."""
    base = summary_report(summary, decisions, handles=handles)
    now = _money(summary.cost.priced_cost_usd)
    headline = f"Corrected summary of {summary.job_name}: {now} (reported {_money(reported_usd)})"
    return base.model_copy(
        update={
            "kind": "summary-corrected",
            "subject": f"[tuning-governor] {summary.job_name} corrected: {now} (was {_money(reported_usd)})"[:100],
            "text": f"{headline}.\n\n{base.text}",
            "attributes": base.attributes | {"outcome": "corrected"},
            "headline": headline,
        }
    )


DECISION_OUTCOMES = {
    "stopped": "stopped",
    "would-stop": "would-stop",
    "exempt": "exempt",
    "warned": "warning",
    "already-ended": "already-ended",
    "already-stopping": "already-stopping",
    "grace": "grace",
    "passed": "passed",
}


def _numbers_text(numbers: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for key, value in numbers.items():
        if isinstance(value, dict):
            for inner, row in value.items():
                if isinstance(row, dict):
                    cells = ", ".join(f"{k} {v}" for k, v in row.items())
                    lines.append(f"{key} {inner}: {cells}")
                else:
                    lines.append(f"{key} {inner}: {row}")
        else:
            lines.append(f"{key}: {value}")
    return lines


def _decision_headline(outcome: str, rule: str, job_name: str, mode: str, stop_at: Any) -> str:
    if outcome == "grace":
        if mode == "enforce":
            return f"{job_name} will be stopped at {stop_at}"
        return f"{job_name} would be stopped at {stop_at} (monitor mode)"
    return {
        "stopped": f"STOPPED {job_name}",
        "would-stop": f"WOULD STOP {job_name} (monitor mode)",
        "exempt": f"{job_name} breaches {rule} but is exempt",
        "warning": f"Warning for {job_name}",
        "already-ended": f"{job_name} breached {rule} (already ended)",
        "already-stopping": f"{job_name} breached {rule} (already stopping)",
        "passed": f"{job_name}: {rule} breach passed before the stop (not stopped)",
    }.get(outcome, f"{job_name}: {rule}")


class DecisionFields(TypedDict):
    """What a decision report says: the decision, what was done about it, and whose job it is."""

    rule: str
    verdict: str
    job_key: str
    job_name: str
    team: str | None
    message: str
    numbers: dict[str, Any]
    at: str
    mode: str
    action: str
    detail: str
    owner: NotRequired[str | None]
    handles: NotRequired[Mapping[str, str] | None]


def _decision_text(facts: DecisionFields, headline: str) -> str:
    owner = clean_owner(facts.get("owner"))
    body = [
        f"{headline}.",
        "",
        f"Rule: {facts['rule']} ({facts['verdict']})",
        f"Why: {facts['message']}",
        f"Mode: {facts['mode']}; action: {facts['action']} ({facts['detail']})",
        f"Team: {facts['team'] or '-'}",
        *([f"Owner: {owner}"] if owner else []),
        f"Decided at: {facts['at']}",
        "",
        *_numbers_text(facts["numbers"]),
    ]
    return "\n".join(body)


def _decision_facts(facts: DecisionFields) -> tuple[Fact, ...]:
    return (
        Fact(label="Mode", value=facts["mode"]),
        Fact(label="Action", value=facts["action"]),
        Fact(label="Team", value=facts["team"] or "-"),
        Fact(label="Owner", value=clean_owner(facts.get("owner")) or "-", role="owner"),
        Fact(label="Decided at", value=facts["at"]),
    )


def decision_fields(
    decision: Decision,
    *,
    mode: str,
    action: str,
    detail: str,
    job_name: str | None = None,
    owner: str | None = None,
    handles: Mapping[str, str] | None = None,
) -> DecisionFields:
    """What a report says of ``decision`` once acted on (``job_name``: another name to show, e.g. a team's;
    ``owner``/``handles``: see :func:`decision_report`)."""
    return DecisionFields(
        rule=decision.rule,
        verdict=decision.verdict,
        job_key=decision.job_key,
        job_name=job_name or decision.job_name,
        team=decision.team,
        message=decision.message,
        numbers=decision.numbers,
        at=decision.at.isoformat(),
        mode=mode,
        action=action,
        detail=detail,
        owner=owner,
        handles=handles,
    )


def decision_report(**fields: Unpack[DecisionFields]) -> Report:
    """The report of one governance decision, sent once however often the deciding event arrives.

    ``fields``: those of :class:`DecisionFields`. ``owner``: the job's owner tag value (named in the text,
    an SNS attribute ``owner``); ``handles``: the owner's handle per channel kind (Slack mentions its
    member ID instead of naming the owner)."""
    facts = fields
    outcome = DECISION_OUTCOMES.get(facts["action"], facts["action"])
    headline = _decision_headline(
        outcome, facts["rule"], facts["job_name"], facts["mode"], facts["numbers"].get("stop_at")
    )
    team = facts["team"]
    return Report(
        kind=f"decision-{facts['rule']}-{facts['verdict']}",
        job_key=facts["job_key"],
        subject=f"[tuning-governor] {headline}: {facts['rule']}"[:100],
        text=_decision_text(facts, headline),
        attributes=_attributes(
            {"status": "InProgress", "team": team or "unknown", "outcome": outcome}, facts.get("owner")
        ),
        headline=headline,
        lead=Lead(title=facts["rule"], qualifier=facts["verdict"], text=facts["message"]),
        facts=_decision_facts(facts),
        notes=(Note(text="\n".join(_numbers_text(facts["numbers"])) or "-"),),
        team=team,
        owner=clean_owner(facts.get("owner")),
        handles=dict(facts.get("handles") or {}),
    )
