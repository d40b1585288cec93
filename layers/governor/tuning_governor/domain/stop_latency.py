"""Stop latency learned from the account's own stops: StopHyperParameterTuningJob to the trials' Stopped.

Trials bill until they are ``Stopped``, so the budget rule asks for a stop a stop's worth of burn
early (the *lead*). How long a stop takes depends on the instances (their shutdown, the training
container's SIGTERM handling), so it is learned per instance family (``ml.p3.2xlarge`` -> ``p3``) from
the governor's own stops: each stopped job gives one observation, the longest of its trials' times
from the stop call to their end (bounded to :data:`MAX_OBSERVED_S`). The lead for a family is the
policy's fixed ``defaults.budget_stop_lead_seconds`` until :data:`MIN_OBSERVATIONS` stops of it are
known, then a high quantile (:data:`QUANTILE`, nearest rank) of its :data:`KEEP` most recent ones: a
robust statistic, one slow stop does not move it and a slower trend does.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from decimal import Decimal

#: Observations kept per family (the oldest dropped first).
KEEP = 20
#: Observations of a family before they replace the policy's fixed lead.
MIN_OBSERVATIONS = 3
#: The quantile of the kept observations used as the lead.
QUANTILE = 0.9
#: A trial ending later than this after the stop is not a stop's latency (it was stopped by something
#: else, or its end time is wrong): not observed.
MAX_OBSERVED_S = 3600.0


def instance_family(instance_type: str) -> str:
    """``ml.p3.2xlarge`` -> ``p3``; ``ml.trn1n.32xlarge`` -> ``trn1n``; anything else as given."""
    parts = instance_type.split(".")
    return parts[1] if len(parts) == 3 and parts[0] == "ml" else instance_type


def observed_latency(stop_at: datetime, trial_ends: Iterable[datetime | None]) -> float | None:
    """The stop's latency: the longest of the trials' ends after ``stop_at`` (trials that were still
    billing at the stop); None when no trial ended after it, or one ended implausibly late."""
    latencies = [(end - stop_at).total_seconds() for end in trial_ends if end is not None and end >= stop_at]
    if not latencies or max(latencies) > MAX_OBSERVED_S:
        return None
    return max(latencies)


def learned_lead(observations: list[float], prior_s: int) -> int:
    """The lead for one family: ``prior_s`` until :data:`MIN_OBSERVATIONS`, then the :data:`QUANTILE`
    (nearest rank) of the last :data:`KEEP` observations, rounded up to the second."""
    recent = observations[-KEEP:]
    if len(recent) < MIN_OBSERVATIONS:
        return prior_s
    ranked = sorted(recent)
    rank = max(1, math.ceil(QUANTILE * len(ranked)))
    return math.ceil(ranked[rank - 1])


def job_lead(demand: Mapping[str, int], learned: Mapping[str, list[float]], prior_s: int) -> int:
    """A job's lead: the longest over the families of its instance types (``prior_s`` with none)."""
    families = {instance_family(instance_type) for instance_type in demand}
    return max((learned_lead(learned.get(family, []), prior_s) for family in families), default=prior_s)


# -- the stored item (one per family; every adapter keeps the same shape) -------------------------------
def item_key(family: str) -> dict[str, str]:
    return {"pk": f"STOPLATENCY#{family}", "sk": "RECENT"}


def with_observation(
    kept: list[dict[str, object]], job_key: str, seconds: float, at: datetime
) -> list[dict[str, object]] | None:
    """``kept`` with one more observation, the oldest dropped past :data:`KEEP`; None when ``job_key``'s
    observation is already kept (exactly once)."""
    if any(entry.get("job") == job_key for entry in kept):
        return None
    entry: dict[str, object] = {"job": job_key, "seconds": Decimal(str(round(seconds, 3))), "at": at.isoformat()}
    return [*kept, entry][-KEEP:]


def latencies_of(item: Mapping[str, object] | None) -> list[float]:
    """The seconds an item keeps, oldest first."""
    kept = item.get("observed") if item else None
    return [float(entry["seconds"]) for entry in kept if isinstance(entry, dict)] if isinstance(kept, list) else []
