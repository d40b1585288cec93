"""The claim areas of ``MemoryStore``: decisions, the rules' marks on a job, report deliveries
(``DecisionStore``, ``JudgementStore``, ``DeliveryStore``)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from governor_sim.memory.table import Item, MemoryTable, TransactionCanceled, copied, stored
from tuning_governor.adapters.dynamodb.items import decision_claim, delivery_claim, delivery_sent
from tuning_governor.adapters.dynamodb.keys import (
    CLAIM_TIMEOUT,
    DECISION_LEASE,
    PENDING_STEPS,
    decision_sk,
    delivery_sk,
    iso,
    job_pk,
)
from tuning_governor.errors import StaleState
from tuning_governor.models.decisions import Decision
from tuning_governor.ports import DecisionStore, DeliveryStore, JudgementStore


class DecisionItems(MemoryTable):
    """The ``DecisionStore``, ``JudgementStore`` and ``DeliveryStore`` ports in memory."""

    def open_decision(
        self, decision: Decision, mode: str, now: datetime, *, own_report: bool = True
    ) -> dict[str, Any] | None:
        item = decision_claim(decision, mode, now, own_report=own_report)
        with self._lock:
            old = self._get(item["pk"], item["sk"])
            if old is not None:
                return copied(old) if old.get("state") == "pending" else None
            self._put(item)
            return self._read(item["pk"], item["sk"])

    def claim_decision(self, decision: Decision, mode: str, now: datetime, *, own_report: bool = True) -> bool:
        stored_row = self.open_decision(decision, mode, now, own_report=own_report)
        return stored_row is not None and stored_row.get("action") is None

    def record_decision_action(
        self, decision: Decision, action: str, detail: str, *, stop_requested_at: datetime | None = None
    ) -> None:
        pk, sk = job_pk(decision.job_key), decision_sk(decision.rule, decision.verdict)
        with self._lock:
            if self._get(pk, sk) is None:
                raise StaleState(f"decision {decision.rule}#{decision.verdict} of {decision.job_key} is not claimed")
            if stop_requested_at is not None and self._get(pk, "META") is None:
                raise TransactionCanceled(f"the job item of {decision.job_key} does not exist")
            self._set(pk, sk, {"action": action, "action_detail": detail})
            if stop_requested_at is not None:
                at = stored(stop_requested_at)
                self._update(pk, "META", lambda item: item.setdefault("stop_requested_at", at))

    def lease_decision(self, job_key: str, rule: str, verdict: str, token: str, now: datetime) -> dict[str, Any] | None:
        pk, sk = job_pk(job_key), decision_sk(rule, verdict)
        with self._lock:
            item = self._get(pk, sk)
            if item is None or item.get("state") != "pending":
                return None
            holder, until = item.get("lease_token"), item.get("lease_until")
            if holder is not None and holder != token and str(until) >= stored(now):
                return None
            self._set(pk, sk, {"lease_token": token, "lease_until": now + DECISION_LEASE})
            return self._read(pk, sk)

    def release_decision(self, job_key: str, rule: str, verdict: str, token: str) -> None:
        pk, sk = job_pk(job_key), decision_sk(rule, verdict)

        def release(item: Item) -> None:
            item.pop("lease_token", None)
            item.pop("lease_until", None)

        with self._lock:
            item = self._get(pk, sk)
            if item is not None and item.get("lease_token") == token:
                self._update(pk, sk, release)

    def finish_decision(self, decision: Decision, action: str, detail: str) -> None:
        pk, sk = job_pk(decision.job_key), decision_sk(decision.rule, decision.verdict)
        values = stored({"state": "done", "action": action, "action_detail": detail})

        def change(item: Item) -> None:
            item.update(values)
            for name in ("gsi1pk", "gsi1sk", "lease_token", "lease_until"):
                item.pop(name, None)

        with self._lock:
            self._update(pk, sk, change)

    def get_decision(self, job_key: str, rule: str, verdict: str) -> dict[str, Any] | None:
        return self._read(job_pk(job_key), decision_sk(rule, verdict))

    def decisions(self, job_key: str) -> list[dict[str, Any]]:
        return self._query(job_pk(job_key), "DECISION#")

    def pending_decisions(self, job_key: str) -> list[dict[str, Any]]:
        return [item for item in self.decisions(job_key) if item.get("state") == "pending"]

    def stale_pending_decisions(self, claimed_before: datetime) -> list[dict[str, Any]]:
        return self._by_gsi(PENDING_STEPS, below=iso(claimed_before))

    def mark_arrival(self, job_key: str, at: datetime) -> bool:
        return self._set_once(job_pk(job_key), "META", "arrival_evaluated_at", at)

    def mark_stop_requested(self, job_key: str, at: datetime) -> bool:
        return self._set_once(job_pk(job_key), "META", "stop_requested_at", at)

    def _set_once(self, pk: str, sk: str, attribute: str, at: datetime) -> bool:
        with self._lock:
            if attribute in (self._get(pk, sk) or {}):
                return False
            self._set(pk, sk, {attribute: at})
            return True

    def set_stagnation_spend(self, job_key: str, trials_seen: int, spent_usd: Decimal) -> bool:
        with self._lock:
            meta = self._get(job_pk(job_key), "META")
            if meta is None or not _stagnation_holds(meta, trials_seen, absent_ok=False):
                return False
            spent = stored(spent_usd)
            self._update(
                job_pk(job_key), "META", lambda item: item["stagnation"].__setitem__("spent_at_improvement", spent)
            )
            return True

    def set_budget_check(self, job_key: str, at: datetime) -> bool:
        with self._lock:
            if self._get(job_pk(job_key), "META") is None:
                return False
            self._set(job_pk(job_key), "META", {"budget_check_at": at})
            return True

    def claim_delivery(self, job_key: str, kind: str, channel: str, now: datetime, *, token: str | None = None) -> bool:
        with self._lock:
            old = self._get(job_pk(job_key), delivery_sk(kind, channel))
            if old is not None:
                sending = old.get("state") == "sending"
                claimed_at = old.get("claimed_at")
                abandoned = sending and isinstance(claimed_at, str) and claimed_at < iso(now - CLAIM_TIMEOUT)
                own = sending and bool(token) and old.get("claim_token") == token
                if not (abandoned or own):
                    return False
            self._put(delivery_claim(job_key, kind, channel, now, token))
            return True

    def finish_delivery(self, job_key: str, kind: str, channel: str, now: datetime, *, sent: bool) -> None:
        with self._lock:
            if sent:
                self._put(delivery_sent(job_key, kind, channel, now))
            else:
                self._delete(job_pk(job_key), delivery_sk(kind, channel))

    def delivery_sent(self, job_key: str, kind: str, channel: str) -> bool:
        return (self._read(job_pk(job_key), delivery_sk(kind, channel)) or {}).get("state") == "sent"


def _stagnation_holds(meta: Item, seen: int, *, absent_ok: bool = True) -> bool:
    """The optimistic lock on the stagnation state: still at ``seen`` trials (0: none yet)."""
    state = meta.get("stagnation")
    if seen == 0 and absent_ok:
        return "stagnation" not in meta
    return isinstance(state, dict) and state.get("trials_seen") == seen


# mypy checks that the area class implements its ports (the contract tests check the signatures too).
_DECISION_PORT: type[DecisionStore] = DecisionItems
_JUDGEMENT_PORT: type[JudgementStore] = DecisionItems
_DELIVERY_PORT: type[DeliveryStore] = DecisionItems
