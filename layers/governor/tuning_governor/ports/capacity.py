"""The capacity area of the store port: what holds training instances, and the admission ledger."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, Self

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from tuning_governor.domain.capacity import Holder, Ledger, Reservation
    from tuning_governor.models.decisions import Decision
    from tuning_governor.models.training_job import TrainingJob


class CapacityStore(Protocol):
    """Standalone training jobs, warm pools, the capacity snapshot and the ledger of reservations."""

    def upsert_training_job(self, job: TrainingJob, *, team: str | None, event_time: datetime) -> bool: ...

    def set_warm_pool(self, job: TrainingJob, *, team: str | None) -> None:
        """An Available warm pool holds its instances, any other status releases them; a job with no
        warm-pool status that asked for no pool (no KeepAlivePeriodInSeconds > 0): nothing written."""
        ...

    def release_warm_pool(self, name: str) -> None: ...

    def warm_pool_names(self) -> set[str]: ...

    def holders(self, *, tuning_jobs: bool = True) -> list[Holder]: ...

    def put_capacity_snapshot(self, snapshot: dict[str, Any]) -> None: ...

    def ledger_at(self, pk: str) -> Self:
        """This store, its capacity ledger the one of partition ``pk`` (one per account and region,
        ``models.place.ledger_pk``); every other item is the same table's."""
        ...

    def read_ledger(self) -> Ledger: ...

    def commit_admission(
        self,
        version: int,
        job_key: str,
        reservation: Reservation | None,
        claim: tuple[Decision, str, datetime] | None = None,
        breaches: Sequence[tuple[str, Reservation | None, tuple[Decision, str, datetime]]] = (),
        prune: Sequence[str] = (),
    ) -> str:
        """``"committed"``, ``"conflict"`` (the ledger moved on, or a breacher's decision was claimed
        already: judge again), ``"decided"`` (the decision was claimed already) or ``"ended"`` (the job's
        item has a terminal status: it holds nothing, and its end, whatever came first, releases
        whatever it holds); all of it written or none.

        ``breaches``: jobs created after this one that no longer fit next to it, each with what
        replaces its reservation (None: removed; over the limit when it keeps running) and the claim
        of its breach decision, written in the same commit. ``prune``: ended reservations past their
        retention (``Ledger.expired``), removed in the same write."""
        ...

    def update_reservations(self, version: int, put: dict[str, Reservation], remove: list[str]) -> bool:
        """Set (an ended reservation is put with its ``ended`` time) and remove reservations in one
        write, if the ledger is still at ``version``."""
        ...

    def release_reservation(self, job_key: str, ended: str) -> bool:
        """A finished job's reservation marked ended at ``ended`` (ISO, SageMaker's time): it holds
        nothing now and is kept for judgements of jobs created before that end. False when it held
        none (never admitted, or already released)."""
        ...


class SweepStore(Protocol):
    """The sweep's walk of the member places: when each was last swept (``app.sweep.places``)."""

    def mark_place_swept(self, place: str, at: datetime) -> None:
        """The sweep finished ``place`` (``<account>/<region>``) at ``at`` (one ``SWEPT`` item per place)."""
        ...

    def places_swept(self) -> dict[str, datetime]:
        """When each place was last swept (one Query on partition ``SWEPT``; a place never swept: absent)."""
        ...
