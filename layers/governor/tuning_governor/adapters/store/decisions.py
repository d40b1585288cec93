"""The claim areas: decisions, the rules' marks on a job, report deliveries (``DecisionStore``,
``JudgementStore``, ``DeliveryStore``). Every claim is one conditional write, first writer wins."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from tuning_governor.adapters.store.area import META, Area, lease
from tuning_governor.adapters.store.conditions import Cond, all_of, any_of, eq, exists, leasable, lt, missing
from tuning_governor.adapters.store.keys import (
    CLAIM_RETENTION,
    CLAIM_TIMEOUT,
    EXPIRY_ATTRIBUTE,
    PENDING_STEPS,
    PENDING_TEAM_STEPS,
    decision_sk,
    delivery_sk,
    expires_at,
    iso,
    job_pk,
    team_decision_sk,
    team_pk,
)
from tuning_governor.adapters.store.port import (
    Delete,
    Item,
    Put,
    TransactionCanceled,
    Update,
    assign,
    removes,
    sets,
    stored,
)
from tuning_governor.errors import StaleState
from tuning_governor.models.decisions import Decision

_LEASE = ("lease_token", "lease_until")


class Decisions(Area):
    """The ``DecisionStore``, ``JudgementStore`` and ``DeliveryStore`` ports over the item table."""

    def open_decision(
        self, decision: Decision, mode: str, now: datetime, *, own_report: bool = True
    ) -> dict[str, Any] | None:
        item = decision_claim(decision, mode, now, own_report=own_report)
        outcome = self._items.write(Put(item, missing("pk")))
        if outcome.done:
            return dict(stored(item))  # the claim as the table holds it
        old = outcome.item or self.get_decision(decision.job_key, decision.rule, decision.verdict)
        return old if old is not None and old.get("state") == "pending" else None

    def claim_decision(self, decision: Decision, mode: str, now: datetime, *, own_report: bool = True) -> bool:
        row = self.open_decision(decision, mode, now, own_report=own_report)
        return row is not None and row.get("action") is None

    def record_decision_action(
        self, decision: Decision, action: str, detail: str, *, stop_requested_at: datetime | None = None
    ) -> None:
        pk = job_pk(decision.job_key)
        ops = [
            Update(
                (pk, decision_sk(decision.rule, decision.verdict)),
                sets({"action": action, "action_detail": detail}),
                exists("pk"),
            )
        ]
        if stop_requested_at is not None:
            ops.append(
                Update((pk, META), [assign("stop_requested_at", stop_requested_at, if_missing=True)], exists("pk"))
            )
        failed = self._items.transact(ops)
        if 0 in failed:
            raise StaleState(f"decision {decision.rule}#{decision.verdict} of {decision.job_key} is not claimed")
        if failed:
            raise TransactionCanceled(f"the job item of {decision.job_key} does not exist")

    def lease_decision(self, job_key: str, rule: str, verdict: str, token: str, now: datetime) -> dict[str, Any] | None:
        outcome = self._items.write(
            Update((job_pk(job_key), decision_sk(rule, verdict)), sets(lease(token, now)), leasable(token, now))
        )
        return outcome.item if outcome.done else None

    def release_decision(self, job_key: str, rule: str, verdict: str, token: str) -> None:
        self._update((job_pk(job_key), decision_sk(rule, verdict)), removes(*_LEASE), eq("lease_token", token))

    def finish_decision(self, decision: Decision, action: str, detail: str) -> None:
        key = (job_pk(decision.job_key), decision_sk(decision.rule, decision.verdict))
        done = sets({"state": "done", "action": action, "action_detail": detail})
        self._update(key, done + removes("gsi1pk", "gsi1sk", *_LEASE))

    def get_decision(self, job_key: str, rule: str, verdict: str) -> dict[str, Any] | None:
        return self._items.get((job_pk(job_key), decision_sk(rule, verdict)))

    def decisions(self, job_key: str) -> list[dict[str, Any]]:
        return self._items.query(job_pk(job_key), "DECISION#")

    def pending_decisions(self, job_key: str) -> list[dict[str, Any]]:
        return [item for item in self.decisions(job_key) if item.get("state") == "pending"]

    def stale_pending_decisions(self, claimed_before: datetime) -> list[dict[str, Any]]:
        return self._items.index(PENDING_STEPS, below=iso(claimed_before))

    def mark_arrival(self, job_key: str, at: datetime) -> bool:
        return self._set_once(job_key, "arrival_evaluated_at", at)

    def mark_stop_requested(self, job_key: str, at: datetime) -> bool:
        return self._set_once(job_key, "stop_requested_at", at)

    def _set_once(self, job_key: str, attribute: str, at: datetime) -> bool:
        return self._update((job_pk(job_key), META), sets({attribute: at}), missing(attribute))

    def set_stagnation_spend(self, job_key: str, trials_seen: int, spent_usd: Decimal) -> bool:
        change = assign(("stagnation", "spent_at_improvement"), spent_usd)
        return self._update((job_pk(job_key), META), [change], eq(("stagnation", "trials_seen"), trials_seen))

    def set_budget_check(self, job_key: str, at: datetime) -> bool:
        return self._update((job_pk(job_key), META), sets({"budget_check_at": at}), exists("pk"))

    def claim_delivery(self, job_key: str, kind: str, channel: str, now: datetime, *, token: str | None = None) -> bool:
        # A claim held under the same ``token`` is taken again: the caller's own claim, whose answer was
        # lost (the write happened, the caller saw an error), so nothing can have been sent under it.
        sending = eq("state", "sending")
        conds: list[Cond] = [missing("pk"), all_of(sending, lt("claimed_at", now - CLAIM_TIMEOUT))]
        if token:
            conds.append(all_of(sending, eq("claim_token", token)))
        return self._items.write(
            Put(delivery_item(job_key, kind, channel, now, sent=False, token=token), any_of(*conds))
        ).done

    def finish_delivery(self, job_key: str, kind: str, channel: str, now: datetime, *, sent: bool) -> None:
        if sent:
            self._items.write(Put(delivery_item(job_key, kind, channel, now, sent=True)))
        else:
            self._items.write(Delete((job_pk(job_key), delivery_sk(kind, channel))))

    def delivery_sent(self, job_key: str, kind: str, channel: str) -> bool:
        return (self._items.get((job_pk(job_key), delivery_sk(kind, channel))) or {}).get("state") == "sent"


# -- the items -----------------------------------------------------------------------------------------------------
def delivery_item(
    job_key: str, kind: str, channel: str, now: datetime, *, sent: bool, token: str | None = None
) -> Item:
    """A claim on one report for one channel (``sending``: ``token`` names the attempt that holds it, so
    that the attempt can take it again when the answer to its own claim was lost), or its ``sent`` mark."""
    state, at = ("sent", "sent_at") if sent else ("sending", "claimed_at")
    item = {"pk": job_pk(job_key), "sk": delivery_sk(kind, channel), "state": state, at: now}
    return item | {EXPIRY_ATTRIBUTE: expires_at(now, CLAIM_RETENTION)} | ({"claim_token": token} if token else {})


def _pending(decision: Decision, kind: str, mode: str, now: datetime) -> dict[str, Any]:
    """What every pending decision item holds, a job's or a team's: the decision as first claimed."""
    return {
        "type": kind,
        "rule": decision.rule,
        "verdict": decision.verdict,
        "mode": mode,
        "state": "pending",
        "message": decision.message,
        "numbers": decision.numbers,
        "at": decision.at,
        "claimed_at": now,
        "team": decision.team,
        EXPIRY_ATTRIBUTE: expires_at(now, CLAIM_RETENTION),
    }


def decision_claim(decision: Decision, mode: str, now: datetime, *, own_report: bool = True) -> dict[str, Any]:
    """A pending decision item, as ``open_decision`` writes it (claimed here with the ledger commit).

    While pending it is listed under ``gsi1pk = STEP#pending`` (sorted by claim time), so the sweep
    finds the steps a failed invocation left unfinished without a scan; ``finish_decision`` removes it.
    """
    key = {"pk": job_pk(decision.job_key), "sk": decision_sk(decision.rule, decision.verdict)}
    return (
        key
        | _pending(decision, "decision", mode, now)
        | {
            "job_name": decision.job_name,
            # False for a job's part of a team decision: the team's one report covers it.
            "own_report": own_report,
            "gsi1pk": PENDING_STEPS,
            "gsi1sk": f"{iso(now)}#{key['pk']}#{key['sk']}",
        }
    )


def team_decision_claim(decision: Decision, month: str, mode: str, now: datetime) -> dict[str, Any]:
    """A team's pending decision for ``month`` (``TEAM#<team>`` / ``DECISION#<rule>#<verdict>#<month>``).

    While pending it is listed under ``gsi1pk = TEAMSTEP#pending`` (sorted by claim time), so the sweep
    finishes one whose team has no job left to be judged; ``finish_team_decision`` removes it."""
    key = {"pk": team_pk(decision.team or ""), "sk": team_decision_sk(decision.rule, decision.verdict, month)}
    return (
        key
        | _pending(decision, "team-decision", mode, now)
        | {
            "month": month,
            "job_key": decision.job_key,
            "gsi1pk": PENDING_TEAM_STEPS,
            "gsi1sk": f"{iso(now)}#{key['pk']}#{key['sk']}",
        }
    )
