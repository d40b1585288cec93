"""Human reports of a finished tuning job: a plain-text body for SNS/email and Block Kit for Slack.

Slack blocks are built with ``slack_sdk.models.blocks`` (which checks Block Kit's limits) and stored as
plain dicts (``.to_dict()``). slack_sdk is imported inside the builders, never at module level: a
handler's cold start does not pay for it (``import slack_sdk`` loads its web client and asyncio), only
the first report it builds.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict, Unpack

from pydantic import BaseModel, ConfigDict

from tuning_governor.domain.slack_text import (
    defuse_mentions,
    escape_mrkdwn,
    mrkdwn_field,
    slack_fallback,
    verbatim_mrkdwn,
)
from tuning_governor.models.decisions import Decision
from tuning_governor.models.records import JobSummary

if TYPE_CHECKING:
    from slack_sdk.models.blocks import Block, MarkdownTextObject

__all__ = ["Report", "decision_report", "defuse_mentions", "escape_mrkdwn", "slack_fallback", "summary_report"]

OUTCOMES = {"Completed": "completed", "Stopped": "stopped", "Failed": "failed"}
#: One governance decision as a summary report lists it: (rule, verdict, action).
DecisionLine = tuple[str, str, str]
#: A Slack member ID (U..., or W... on Enterprise Grid): the only thing a report ever mentions.
SLACK_MEMBER_ID = re.compile(r"^[UW][A-Z0-9]{2,20}$")
#: SNS message attribute values and AWS tag values: at most 256 characters kept from the owner tag.
_MAX_OWNER = 256
TEAM_OWNER = "Team / owner"


class Report(BaseModel):
    """One message, rendered for every channel. ``attributes`` feed SNS filter policies; ``team`` routes
    it to the team's own channels too (see ``tuning_governor.policy.routing``); ``owner`` is the job's owner
    tag value, as given (untrusted text)."""

    model_config = ConfigDict(frozen=True)

    kind: str
    job_key: str
    subject: str
    text: str
    attributes: dict[str, str]
    blocks: list[dict[str, Any]]
    team: str | None = None
    owner: str | None = None


def clean_owner(owner: str | None) -> str | None:
    """The owner tag value trimmed and cut to 256 characters; None when absent or blank."""
    value = (owner or "").strip()[:_MAX_OWNER]
    return value or None


def owner_mrkdwn(owner: str | None, member_id: str | None = None) -> str:
    """The owner as Slack mrkdwn: a mention ``<@ID>`` when ``member_id`` is a Slack member ID, else the
    name escaped as plain text (shown, never a ping or a link), or ``-`` when unknown."""
    if member_id and SLACK_MEMBER_ID.match(member_id):
        return f"<@{member_id}>"
    name = clean_owner(owner)
    return escape_mrkdwn(name) if name else "-"


def _attributes(base: dict[str, str], owner: str | None) -> dict[str, str]:
    # SNS rejects an empty attribute value: the owner attribute is there only when it is known.
    name = clean_owner(owner)
    return base | {"owner": name} if name else base


def _header(text: str) -> Block:
    from slack_sdk.models.blocks import HeaderBlock, PlainTextObject  # noqa: PLC0415

    # plain_text cannot be verbatim: mentions are defused instead.
    return HeaderBlock(text=PlainTextObject(text=defuse_mentions(text)[:150]))


def _dicts(blocks: Sequence[Block]) -> list[dict[str, Any]]:
    return [block.to_dict() for block in blocks]


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


def _summary_blocks(
    summary: JobSummary, rows: list[tuple[str, str]], outcome: str, owner_member: str | None
) -> list[dict[str, Any]]:
    from slack_sdk.models.blocks import ContextBlock, SectionBlock  # noqa: PLC0415

    def field(label: str, value: str) -> MarkdownTextObject:
        if label == TEAM_OWNER:
            # The owner mentioned (or named, escaped); the team escaped like any free text.
            team = mrkdwn_field("*{label}*\n{team} / ", 1700, label=label, team=summary.team or "-")
            return verbatim_mrkdwn(team + owner_mrkdwn(summary.owner, owner_member))
        return verbatim_mrkdwn(mrkdwn_field("*{label}*\n{value}", 2000, label=label, value=value))

    blocks: list[Block] = [
        _header(f"Tuning job {outcome}: {summary.job_name}"),
        SectionBlock(fields=[field(label, value) for label, value in rows[:10]]),
    ]
    extra = rows[10:]
    if extra:
        text = "\n".join(mrkdwn_field("*{k}*: {v}", 2990 // len(extra), k=k, v=v) for k, v in extra)
        blocks.append(SectionBlock(text=verbatim_mrkdwn(text)))
    if summary.warnings:
        blocks.append(
            ContextBlock(
                elements=[verbatim_mrkdwn(mrkdwn_field(":warning: {w}", 3000, w=w)) for w in summary.warnings[:10]]
            )
        )
    return _dicts(blocks)


def summary_report(
    summary: JobSummary, decisions: Sequence[DecisionLine] = (), *, owner_member: str | None = None
) -> Report:
    """The report sent once when a tuning job finishes. ``decisions``: the governance decisions made
    on the job (rule, verdict, action), including those judged after it ended (``already-ended``).
    ``owner_member``: the Slack member ID of the job's owner (mentioned in Slack), if known."""
    outcome = OUTCOMES.get(summary.status, summary.status.lower())
    subject = f"[tuning-governor] {summary.job_name} {outcome}: {_money(summary.cost.cost_usd)}"[:100]
    rows = _lines(summary)
    if decisions:
        rows.append(("Decisions", "; ".join(f"{rule} {verdict} ({action})" for rule, verdict, action in decisions)))
    text_lines = [f"Tuning job {summary.job_name} ({summary.region}) {outcome}.", ""]
    text_lines += [f"{label}: {value}" for label, value in rows]
    for warning in summary.warnings:
        text_lines.append(f"Warning: {warning}")
    blocks = _summary_blocks(summary, rows, outcome, owner_member)
    return Report(
        kind=f"summary-{outcome}",
        job_key=summary.job_key,
        subject=subject,
        text="\n".join(text_lines),
        attributes=_attributes(
            {"status": summary.status, "team": summary.team or "unknown", "outcome": outcome}, summary.owner
        ),
        blocks=blocks,
        team=summary.team,
        owner=clean_owner(summary.owner),
    )


def corrected_report(
    summary: JobSummary,
    reported_usd: Decimal,
    decisions: Sequence[DecisionLine] = (),
    *,
    owner_member: str | None = None,
) -> Report:
    """The one correction of a summary report whose figures changed after it went out (trials recorded
    late, or warm-pool retention billed after the job ended); ``reported_usd``: what the report said."""
    base = summary_report(summary, decisions, owner_member=owner_member)
    now = _money(summary.cost.priced_cost_usd)
    headline = f"Corrected summary of {summary.job_name}: {now} (reported {_money(reported_usd)})"
    return base.model_copy(
        update={
            "kind": "summary-corrected",
            "subject": f"[tuning-governor] {summary.job_name} corrected: {now} (was {_money(reported_usd)})"[:100],
            "text": f"{headline}.\n\n{base.text}",
            "attributes": base.attributes | {"outcome": "corrected"},
            "blocks": [*_dicts([_header(headline)]), *base.blocks[1:]],
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
    owner_member: NotRequired[str | None]


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


def _decision_blocks(facts: DecisionFields, headline: str) -> list[dict[str, Any]]:
    from slack_sdk.models.blocks import ContextBlock, SectionBlock  # noqa: PLC0415

    why = mrkdwn_field(
        "*{rule}* ({verdict}): {message}", 3000, rule=facts["rule"], verdict=facts["verdict"], message=facts["message"]
    )
    numbers = mrkdwn_field("{numbers}", 3000, numbers="\n".join(_numbers_text(facts["numbers"])) or "-")
    blocks: list[Block] = [
        _header(headline),
        SectionBlock(text=verbatim_mrkdwn(why)),
        SectionBlock(
            fields=[
                verbatim_mrkdwn(f"*Mode*\n{facts['mode']}"),
                verbatim_mrkdwn(f"*Action*\n{facts['action']}"),
                verbatim_mrkdwn(mrkdwn_field("*Team*\n{team}", 2000, team=facts["team"] or "-")),
                verbatim_mrkdwn(f"*Owner*\n{owner_mrkdwn(facts.get('owner'), facts.get('owner_member'))}"),
                verbatim_mrkdwn(f"*Decided at*\n{facts['at']}"),
            ]
        ),
        ContextBlock(elements=[verbatim_mrkdwn(numbers)]),
    ]
    return _dicts(blocks)


def decision_fields(
    decision: Decision,
    *,
    mode: str,
    action: str,
    detail: str,
    job_name: str | None = None,
    owner: str | None = None,
    owner_member: str | None = None,
) -> DecisionFields:
    """What a report says of ``decision`` once acted on (``job_name``: another name to show, e.g. a team's;
    ``owner``/``owner_member``: see :func:`decision_report`)."""
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
        owner_member=owner_member,
    )


def decision_report(**fields: Unpack[DecisionFields]) -> Report:
    """The report of one governance decision, sent once however often the deciding event arrives.

    ``fields``: those of :class:`DecisionFields`. ``owner``: the job's owner tag value (named in the text,
    an SNS attribute ``owner``); Slack mentions ``owner_member`` (a Slack member ID) instead when given,
    else shows the owner escaped."""
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
        blocks=_decision_blocks(facts, headline),
        team=team,
        owner=clean_owner(facts.get("owner")),
    )
