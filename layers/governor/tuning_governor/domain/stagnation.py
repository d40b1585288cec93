"""Stagnation, kept incrementally: the best objective so far and what has passed since it last improved.

AMT's own ``BestObjectiveNotImproving`` counts trials that "failed to improve the objective by 1 % or
greater" against the best so far; the governor uses the same rule (``improves``), and measures what
passed since the last improvement in three ways: completed trials, minutes and dollars.

The state lives on the job's item (``StagnationState``) and is advanced once per completed trial, in
the transaction that records the trial, so judging it never reads the job's trials again (O(1) per
event). A trial is judged against the objective of its own training job definition: a tuning job with
``TrainingJobDefinitions`` may give each definition its own ``TuningObjective`` (metric and direction)
instead of the top-level ``HyperParameterTuningJobObjective`` (``resolve_objective``).

Pure: no AWS, no clock.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic import ConfigDict

from tuning_governor.model_base import GovernorModel
from tuning_governor.models.objectives import DefinitionObjective, ObjectiveSpec
from tuning_governor.models.records import TrialRecord

IMPROVEMENT = Decimal("0.01")
"""Relative margin of an improvement: 1 % of the best so far, reached or exceeded (AMT's wording)."""
OBJECTIVE_HYPERPARAMETER = "_tuning_objective_metric"


class _Frozen(GovernorModel):
    model_config = ConfigDict(frozen=True)


def _decimal(value: float | Decimal) -> Decimal:
    # Through str: 0.8 * 1.01 is 0.8080000000000001 in binary floating point, and a reported 0.808 must
    # count as the 1 % improvement it is.
    return value if isinstance(value, Decimal) else Decimal(str(value))


def improves(value: float, best: float, *, minimize: bool) -> bool:
    """True when ``value`` beats ``best`` by 1 % of ``|best|`` or more (exactly 1 % counts).

    A best of 0 has a relative margin of 0: any strictly better value is an improvement, an equal one
    is not. (1 % of 0 is 0; a fixed absolute margin instead would depend on the metric's scale.)
    """
    new, old = _decimal(value), _decimal(best)
    gain = old - new if minimize else new - old
    if old == 0:
        return gain > 0
    return gain >= abs(old) * IMPROVEMENT


def resolve_objective(
    objectives: Sequence[DefinitionObjective],
    *,
    definition_name: str | None = None,
    hyperparameters: Mapping[str, str] | None = None,
    reported_metrics: Collection[str] = (),
) -> ObjectiveSpec | None:
    """The objective one trial is judged on, from its job's objectives per definition.

    In order: the trial's definition when it is known (``TrainingJobDefinitionName`` is in AMT's trial
    summaries, not in DescribeTrainingJob); the metric AMT names in the trial's hyperparameters
    (``_tuning_objective_metric``); the one definition whose objective metric the trial reported;
    the objective every definition shares. None when the trial cannot be tied to one direction
    (then it is not counted, rather than counted the wrong way round).
    """

    def agreed(candidates: Sequence[DefinitionObjective]) -> ObjectiveSpec | None:
        specs = {(o.metric, o.type) for o in candidates}
        if len(specs) != 1:
            return None
        metric, kind = specs.pop()
        return ObjectiveSpec(metric=metric, type=kind)

    if definition_name is not None:
        found = agreed([o for o in objectives if o.definition == definition_name])
        if found is not None:
            return found
    named = ((hyperparameters or {}).get(OBJECTIVE_HYPERPARAMETER) or "").strip().strip('"')
    if named:
        found = agreed([o for o in objectives if o.metric == named])
        if found is not None:
            return found
    reported = [o for o in objectives if o.metric in reported_metrics]
    if reported:
        found = agreed(reported)
        if found is not None:
            return found
    return agreed(objectives)


def objectives_from_item(value: Any) -> list[DefinitionObjective]:
    """The job item's ``objectives`` attribute (absent on items written before it existed: [])."""
    if not isinstance(value, list):
        return []
    out: list[DefinitionObjective] = []
    for entry in value:
        if isinstance(entry, Mapping) and entry.get("metric") and entry.get("type"):
            out.append(
                DefinitionObjective(
                    definition=entry.get("definition") or None, metric=str(entry["metric"]), type=str(entry["type"])
                )
            )
    return out


class StagnationState(_Frozen):
    """What passed since the best objective last improved, advanced once per completed trial.

    ``trials_seen`` (completed trials with an objective value folded in) is also the version the
    store's conditional write checks, so two trials of one job never advance the same old state.
    """

    trials_seen: int = 0
    bests: dict[str, float] = {}
    """Best value per objective (``<Type>:<metric>``): definitions may tune different metrics."""
    best_objective: float | None = None
    """The value of the last improvement."""
    metric: str | None = None
    direction: str | None = None
    trials_since: int = 0
    """Completed trials since the last improvement (in the order their events were recorded)."""
    improved_at: datetime | None = None
    """When the improving trial ended: the start of the minutes measure (None: no objective yet)."""
    spent_at_improvement: Decimal | None = None
    """The job's spend (finished + accrued) at the last improvement; None until it is known."""

    def advance(self, value: float, objective: ObjectiveSpec, ended_at: datetime) -> StagnationState:
        """The state after one more completed trial that reported ``value`` and ended at ``ended_at``.

        Out-of-order events err on the side of not stopping: a trial that does not improve and ended
        before the last improvement is not counted as "since" it, and an improvement never moves
        ``improved_at`` back in time.
        """
        key = f"{objective.type}:{objective.metric}"
        best = self.bests.get(key)
        seen = self.trials_seen + 1
        if best is None or improves(value, best, minimize=objective.minimize):
            improved_at = ended_at if self.improved_at is None else max(ended_at, self.improved_at)
            return StagnationState(
                trials_seen=seen,
                bests=self.bests | {key: value},
                best_objective=value,
                metric=objective.metric,
                direction=objective.type,
                trials_since=0,
                improved_at=improved_at,
                # A later improvement (same moment or after) re-reads the spend; an older one keeps it.
                spent_at_improvement=self.spent_at_improvement if improved_at != ended_at else None,
            )
        late = self.improved_at is not None and ended_at < self.improved_at
        return self.model_copy(update={"trials_seen": seen, "trials_since": self.trials_since + (0 if late else 1)})

    def to_item(self) -> dict[str, Any]:
        """The attribute stored on the job item (floats kept as given; the store makes them numbers)."""
        return self.model_dump(mode="python")

    @classmethod
    def from_item(cls, value: Any) -> StagnationState | None:
        """The state stored on a job item; None when the item has none yet."""
        if not isinstance(value, Mapping):
            return None
        data = dict(value)
        data["bests"] = {str(k): float(v) for k, v in (data.get("bests") or {}).items()}
        if data.get("best_objective") is not None:
            data["best_objective"] = float(data["best_objective"])
        spent = data.get("spent_at_improvement")
        if spent is not None:
            try:
                data["spent_at_improvement"] = Decimal(str(spent))
            except InvalidOperation:
                data["spent_at_improvement"] = None
        return cls.model_validate(data)


def trials_since_improvement(values: Sequence[float], minimize: bool) -> int:
    """Completed trials since the last one that improved the best so far by 1 % or more (one objective)."""
    best: float | None = None
    since = 0
    for value in values:
        if best is None or improves(value, best, minimize=minimize):
            best, since = value, 0
        else:
            since += 1
    return since


def replayed_stagnation(
    objectives: Sequence[DefinitionObjective], records: Sequence[TrialRecord]
) -> Iterator[tuple[StagnationState, datetime]]:
    """The job's stagnation state after each completed trial with an objective value, in order of the
    trials' end (the order their events come in when none is lost), with that trial's end time."""
    state = StagnationState()
    completed = [r for r in records if r.status == "Completed" and r.objective_value is not None]
    for record in sorted(completed, key=lambda r: (r.end_time or r.event_time, r.training_job_name)):
        objective = resolve_objective(
            objectives,
            hyperparameters=record.hyperparameters,
            reported_metrics={record.objective_name} if record.objective_name else (),
        )
        if objective is None or record.objective_value is None:
            continue
        ended = record.end_time or record.event_time
        state = state.advance(record.objective_value, objective, ended)
        yield state, ended
