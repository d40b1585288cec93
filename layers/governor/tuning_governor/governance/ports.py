"""What the engine needs from the application's services, named here so governance never imports the
application layer: ``app.services.Services`` satisfies it structurally (as does any test double).

``EngineServices[S]`` is those services with the store narrowed to ``S``, the join of the store's area
ports a module uses (``ports.uses``; one area: its own port). ``store`` is read-only, so services with a
wider store (``Services``' whole ``Store``) satisfy it, and mypy refuses a call to an area not in ``S``."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from tuning_governor.domain.pricing import PriceCatalog
    from tuning_governor.domain.reports import Report
    from tuning_governor.models.place import Place
    from tuning_governor.policy import Policy
    from tuning_governor.ports import CheckScheduler, Notifier, Quotas, SageMaker
    from tuning_governor.settings import Settings


class EngineServices[S](Protocol):
    """The ports and settings the engine reads, acts and reports through; ``S``: the store areas it may use."""

    @property
    def settings(self) -> Settings: ...
    @property
    def sagemaker(self) -> SageMaker: ...
    @property
    def store(self) -> S: ...
    @property
    def quotas(self) -> Quotas | None: ...
    @property
    def home(self) -> Place | None:
        """The stack's own account and region (None while its account is not known)."""
        ...

    @property
    def place(self) -> Place | None:
        """Where these services act (None: the home place): ``sagemaker``, ``quotas``, the ledger."""
        ...

    @property
    def checks(self) -> CheckScheduler | None: ...
    @property
    def clock(self) -> Callable[[], datetime]: ...
    @property
    def policy(self) -> Callable[[], Policy]: ...

    def sagemaker_for(self, place: Place | None) -> SageMaker:
        """SageMaker where a job runs (its ``place``; None: the home place)."""
        ...

    def at(self, place: Place | None) -> EngineServices[S]:
        """These services acting in ``place``: its SageMaker, its Service Quotas, its capacity ledger."""
        ...

    def notifiers_for(self, report: Report, policy: Policy) -> list[Notifier]: ...
    def price_catalog(self, policy: Policy) -> PriceCatalog: ...
