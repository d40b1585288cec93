"""The sweep's reconciliation of the capacity ledger with what SageMaker runs (releases, adoptions,
re-counts from running trials)."""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from tuning_governor.domain.capacity import Reservation
from tuning_governor.domain.job import JobState, iso_time, job_state
from tuning_governor.errors import TransientError
from tuning_governor.governance.admission_order import RELEASE_GRACE, expired, order_of
from tuning_governor.governance.job import job_facts
from tuning_governor.governance.ports import EngineServices

if TYPE_CHECKING:
    from tuning_governor.ports.uses import LedgerStore


def running_shapes(job: JobState) -> list[tuple[dict[str, int], bool]]:
    """The instances (and market) of each trial the job item records as running (its ``running``
    map, kept by the training-event path), for re-counting the job's reservation."""
    return [(dict(trial.instances), trial.spot) for trial in job.running if trial.instances]


def _adopted(
    services: EngineServices[LedgerStore], adopt: set[str], jobs: Mapping[str, JobState]
) -> dict[str, Reservation]:
    """Reservations for discovered Stopping jobs: their first plan, counted as they run."""
    put: dict[str, Reservation] = {}
    for key in sorted(adopt):
        job = jobs.get(key) or job_state(services.store.get_job(key))
        if job is None:
            continue
        facts = job_facts(job, now=services.clock(), policy=services.policy())
        plans = [p for p in facts.admission_plans() if p.on_demand or p.spot]
        if plans:
            reservation = Reservation.for_plan(key, facts.team, plans[0], facts.max_parallel, iso_time(facts.now))
            put[key] = replace(reservation, job_created=order_of(facts)[0])
    return put


def reconcile_ledger(
    services: EngineServices[LedgerStore],
    *,
    live: set[str],
    listed_at: datetime,
    jobs: Mapping[str, JobState],
    adopt: set[str],
    ended_at: Mapping[str, datetime] | None = None,
    attempts: int = 5,
) -> dict[str, list[str]]:
    """The sweep's pass over the capacity ledger, against what SageMaker lists as running (``live``).

    Releases reservations of jobs no longer running (their terminal event was lost), marked ended at
    their end in SageMaker's time (``ended_at``: what the sweep's finalisation described; else the
    listing time) and prunes ended ones past ``ENDED_RETENTION``; adopts jobs the
    sweep discovered running without an arrival (their reservation is their first plan, counted as
    it runs); re-counts every reservation whose job item records running trials from the types those
    trials actually use. One conditional write, retried on conflict. A reservation made less than
    ``RELEASE_GRACE`` before SageMaker was listed (``listed_at``) is kept until a later sweep.
    """
    changes: dict[str, list[str]] = {"released": [], "adopted": [], "recounted": []}
    for attempt in range(attempts):
        ledger = services.store.read_ledger()
        # SageMaker's list may lag a job that has just started: only older reservations are released.
        listed = iso_time(listed_at - RELEASE_GRACE)
        gone = sorted(k for k, r in ledger.reservations.items() if k not in live and r.created < listed)
        when = {k: iso_time((ended_at or {}).get(k) or listed_at) for k in gone}
        put = {k: replace(ledger.reservations[k], ended=when[k]) for k in gone}
        remove = expired(ledger, listed_at)
        put |= _adopted(services, adopt - set(ledger.reservations), jobs)
        for key, reservation in sorted(ledger.reservations.items()):
            known = jobs.get(key)
            if key in gone or known is None or not known.tracks_running:
                continue
            recounted = reservation.recounted(running_shapes(known))
            if recounted.on_demand != reservation.on_demand or recounted.spot != reservation.spot:
                put[key] = recounted
        if services.store.update_reservations(ledger.version, put, remove):
            changes["released"] = gone
            changes["adopted"] = sorted(k for k in put if k not in ledger.reservations)
            changes["recounted"] = sorted(k for k in put if k in ledger.reservations and k not in gone)
            return changes
        time.sleep(random.uniform(0, 0.01 * 2**attempt))  # noqa: S311 - jitter, not crypto
    raise TransientError("capacity ledger contended during the sweep")
