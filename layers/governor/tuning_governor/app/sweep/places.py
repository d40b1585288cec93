"""The sweep's walk of the member places: every ``accounts.<id>`` of the policy times its regions.

A member account listing no ``regions`` is swept in the home region only (its other regions are
governed on their events; listing them makes the sweep walk them too). The home place is swept first,
in full, by ``app.sweep.run.run_sweep``; then the member places, stalest first (the last time each was
swept is one ``SWEPT`` item per place in the table; a place never swept first of all), at most
``settings.sweep_parallel_places`` at once (threads: each place's calls wait on AWS). A place is
begun only while more than ``settings.sweep_reserve_seconds`` of the invocation is left: the places
not begun are carried to the next sweep, where they are the stalest, and counted as
``SweepPlacesDeferred``. A member whose role cannot be assumed (``PlaceUnreachable``) is counted
(``MembersUnreachable`` per account and region, ``SweepPlacesUnreachable``) and skipped, as is a
place whose sweep fails otherwise (``SweepPlacesFailed``): never the other places.

Wall time: with P member places, k parallel places and a per-place sweep of t seconds, about
ceil(P / k) * t, and never more than the invocation's time less the reserve plus the slowest place
begun before the reserve was reached. Per place, the calls of ``app.sweep`` steps 1-4 there (the
table-wide steps, pending deliveries, team decisions, warm pools, the capacity snapshot, are the home
sweep's). With no ``accounts`` nothing here runs and nothing is written.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.breakdowns import member_unreachable
from tuning_governor.errors import PlaceUnreachable
from tuning_governor.models.place import Place
from tuning_governor.observability import logger, metrics
from tuning_governor.policy import Policy

if TYPE_CHECKING:
    from tuning_governor.app.services import AppServices
    from tuning_governor.ports import SweepStore

type SweepOne[S] = Callable[[AppServices[S], Place], dict[str, Any]]
_NEVER = datetime.min.replace(tzinfo=UTC)


def member_places(policy: Policy, home: Place) -> list[Place]:
    """Every governed member place: each listed account times its regions (none listed: the home region)."""
    out: list[Place] = []
    for account, terms in sorted(policy.accounts.items()):
        for region in terms.regions or [home.region]:
            place = Place(account, region)
            if place != home and place not in out:
                out.append(place)
    return out


def stalest_first(places: list[Place], swept: dict[str, datetime]) -> list[Place]:
    """``places`` in the order to sweep them: never swept first, then the longest since last swept."""
    return sorted(places, key=lambda place: (swept.get(str(place), _NEVER), str(place)))


def sweep_members[S: SweepStore](
    services: AppServices[S],
    now: datetime,
    policy: Policy,
    remaining: Callable[[], float] | None,
    sweep_one: SweepOne[S],
) -> dict[str, Any]:
    """Sweep every member place (``sweep_one`` with that place's services); {} when there is none.
    Returns ``places``: each place's outcome (swept, deferred, unreachable, failed) and report."""
    home = services.home
    places = member_places(policy, home) if home is not None else []
    if not places:
        return {}
    ordered = stalest_first(places, services.store.places_swept())
    reserve = services.settings.sweep_reserve_seconds

    def one(place: Place) -> tuple[Place, str, dict[str, Any]]:
        if remaining is not None and remaining() <= reserve:
            return place, "deferred", {}
        try:
            report = sweep_one(services.at(place), place)
        except PlaceUnreachable as exc:
            member_unreachable(exc.account, exc.region)
            logger.error("sweep: member unreachable", extra={"place": str(place), "reason": exc.reason})
            return place, "unreachable", {}
        except Exception as exc:  # one place failing never stops the others
            logger.exception("sweep: place failed", extra={"place": str(place), "error": type(exc).__name__})
            return place, "failed", {}
        services.store.mark_place_swept(str(place), now)
        return place, "swept", report

    with ThreadPoolExecutor(max_workers=services.settings.sweep_parallel_places) as pool:
        results = list(pool.map(one, ordered))
    counts = Counter(outcome for _, outcome, _ in results)
    metrics.add_metric(name="SweepPlacesSwept", unit=MetricUnit.Count, value=counts["swept"])
    metrics.add_metric(name="SweepPlacesDeferred", unit=MetricUnit.Count, value=counts["deferred"])
    metrics.add_metric(name="SweepPlacesUnreachable", unit=MetricUnit.Count, value=counts["unreachable"])
    metrics.add_metric(name="SweepPlacesFailed", unit=MetricUnit.Count, value=counts["failed"])
    return {"places": {str(place): {"outcome": outcome} | report for place, outcome, report in results}}
