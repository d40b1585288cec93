"""The large-batch judgement: ``findings`` and ``rescale_findings`` (see the package docstring).

Imported on first use through the package (``tuning_governor.domain.large_batch``): the policy needs only
``LargeBatchSettings``, so a handler that judges no arrival does not load the checks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tuning_governor.domain.large_batch.checks import CHECKS, scaling
from tuning_governor.domain.large_batch.model import SOURCE_LINEAR, SOURCE_SQRT, BatchFinding, Judged, global_batch
from tuning_governor.domain.large_batch.read import Definition, definitions
from tuning_governor.domain.large_batch.settings import LargeBatchSettings


def _optimizer(definition: Definition) -> str | None:
    found = definition.find("optimizer")
    if found is None or len(set(found.text)) != 1:
        return None  # absent, or tuned over several: the checks that need it stay silent
    return found.text[0].strip().lower()


def _judged(
    request: Mapping[str, Any], settings: LargeBatchSettings, trial_dollars: float | None, team: str | None
) -> list[Judged]:
    config = request.get("HyperParameterTuningJobConfig") or {}
    limits = config.get("ResourceLimits") or {}
    hyperband = (config.get("StrategyConfig") or {}).get("HyperbandStrategyConfig") or {}
    trials = limits.get("MaxNumberOfTrainingJobs")
    strategy = config.get("Strategy")
    judged = []
    for definition in definitions(request, settings.names_for(team)):
        batch = None if definition.silent else global_batch(definition)
        if batch is None:
            continue
        judged.append(
            Judged(
                definition=definition,
                batch=batch[0],
                explained=batch[1],
                optimizer=_optimizer(definition),
                settings=settings,
                trials=int(trials) if trials is not None else None,
                trial_dollars=trial_dollars,
                strategy=str(strategy) if strategy else None,
                min_resource=int(hyperband["MinResource"]) if hyperband.get("MinResource") else None,
                max_resource=int(hyperband["MaxResource"]) if hyperband.get("MaxResource") else None,
                early_stopping=strategy in {"Bayesian", "Random"}
                and config.get("TrainingJobEarlyStoppingType") == "Auto",
            )
        )
    return judged


def findings(
    request: Mapping[str, Any],
    *,
    settings: LargeBatchSettings | None = None,
    worst_case_trial_dollars: float | None = None,
    team: str | None = None,
) -> list[BatchFinding]:
    """The large-batch findings of ``request`` (botocore's CreateHyperParameterTuningJob shape), per
    definition in the order of ``CHECKS``: ``global-batch-range`` (info) first, then the warnings.

    ``worst_case_trial_dollars``: one trial's worst-case cost (its dearest cluster for its
    MaxRuntimeInSeconds); with it each warning's ``dollars`` is ceil(MaxNumberOfTrainingJobs x the share
    of trials at risk) x that cost. ``team``: the job's team, for ``settings.team_names``. Never raises on
    a request with odd values: what does not parse is not judged.
    """
    settings = settings or LargeBatchSettings()
    if not settings.enabled:
        return []
    return [
        finding
        for judged in _judged(request, settings, worst_case_trial_dollars, team)
        for check in CHECKS
        if (finding := check(judged)) is not None
    ]


def rescale_findings(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    *,
    settings: LargeBatchSettings | None = None,
    worst_case_trial_dollars: float | None = None,
    team: str | None = None,
) -> list[BatchFinding]:
    """``instance-count-not-rescaled``: ``after`` (a resumed or refitted ``before``) runs a definition on
    another InstanceCount, so its global batch changed, but its learning rate (static value or range) did not."""
    settings = settings or LargeBatchSettings()
    old = {j.definition.label: j for j in _judged(before, settings, worst_case_trial_dollars, team)}
    found = []
    for new in _judged(after, settings, worst_case_trial_dollars, team):
        previous = old.get(new.definition.label)
        if previous is None or previous.batch == new.batch:
            continue
        lr_then, lr_now = previous.definition.find("learning_rate"), new.definition.find("learning_rate")
        if lr_then is None or lr_now is None or lr_then.text != lr_now.text:
            continue
        factor = new.batch.high / previous.batch.high
        linear, why = scaling(new)
        wanted = factor if linear else factor**0.5
        reason = (
            f"the global batch changed {factor:.3g}x (up to {previous.batch.high:,.0f} -> {new.batch.high:,.0f}:"
            f" {new.explained}) but {lr_now.name} stayed {' / '.join(lr_now.text)}: {why},"
            f" so it should be {wanted:.3g}x"
        )
        found.append(
            new.finding(
                "instance-count-not-rescaled", reason, SOURCE_LINEAR if linear else SOURCE_SQRT, new.dollars(1.0)
            )
        )
    return found
