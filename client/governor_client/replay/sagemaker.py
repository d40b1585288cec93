"""The replay's SageMaker: every call the governor makes, answered from the events read so far.

:class:`EventSourcedSageMaker` implements the port :class:`tuning_governor.ports.SageMaker` (checked
structurally by mypy below); it makes no AWS call.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from governor_client.replay.facts import FactGaps, KnownFacts, Missing, has_configuration, has_instances
from governor_client.replay.trial_summaries import TrialSummaries
from tuning_governor.errors import JobNotFound
from tuning_governor.models.events import TrainingJobStateChange, TuningJobStateChange
from tuning_governor.models.place import Place, job_key, place_in_key
from tuning_governor.models.sagemaker import TRAINING_TERMINAL, TUNING_TERMINAL
from tuning_governor.models.training_job import TrainingJob
from tuning_governor.models.tuning_job import TrialSummary, TuningJob
from tuning_governor.ports import SageMaker, StopResult

# Deleting a job long after it ran says nothing about the run: such events never replace a known state.
DELETION_STATES = frozenset({"Deleting", "DeleteFailed"})
TERMINAL = TUNING_TERMINAL | TRAINING_TERMINAL
RANGE_KINDS = ("IntegerParameterRanges", "ContinuousParameterRanges", "CategoricalParameterRanges", "AutoParameters")
StateChange = TuningJobStateChange | TrainingJobStateChange


@dataclass
class _Latest[J]:
    job: J
    status: str
    modified: datetime


@dataclass(frozen=True)
class StopCall:
    """A StopHyperParameterTuningJob call the replay made that SageMaker would have accepted."""

    job: str
    at: datetime


def _remember[J](table: dict[str, _Latest[J]], key: str, job: J, status: str, modified: datetime) -> None:
    known = table.get(key)
    if known is not None and (
        status in DELETION_STATES
        or modified < known.modified
        or (known.status in TERMINAL and status not in TERMINAL)  # as the store: never back from terminal
    ):
        return
    table[key] = _Latest(job, status, modified)


def _range_names(detail: Mapping[str, Any]) -> set[str]:
    """Names of the tuned hyperparameters: every ParameterRanges entry, of every training definition."""
    sources: list[Any] = []
    config = detail.get("HyperParameterTuningJobConfig")
    if isinstance(config, dict):
        sources.append(config.get("ParameterRanges"))
    definitions = detail.get("TrainingJobDefinitions")
    single = detail.get("TrainingJobDefinition")
    for definition in [*(definitions if isinstance(definitions, list) else []), single]:
        if isinstance(definition, dict):
            sources.append(definition.get("HyperParameterRanges"))
    names: set[str] = set()
    for ranges in sources:
        if not isinstance(ranges, dict):
            continue
        for kind in RANGE_KINDS:
            items = ranges.get(kind)
            for item in items if isinstance(items, list) else []:
                if isinstance(item, dict) and isinstance(item.get("Name"), str):
                    names.add(item["Name"])
    return names


class EventSourcedSageMaker:
    """The SageMaker port (:class:`tuning_governor.ports.SageMaker`) answered from replayed events instead
    of the SageMaker API.

    Call :meth:`observe` with each event before it is delivered. Callers may rely on:

    * a job's state is the detail of its *latest* event read so far: the one with the greatest
      ``LastModifiedTime`` (the envelope time when absent); on a tie the later line wins. As in the
      governor's table, a terminal status (Completed, Stopped, Failed) is never replaced by a
      non-terminal one, and events with status Deleting or DeleteFailed never replace a known state.
      Describe responses carry no Tags (as in SageMaker); ``list_tags`` answers from the latest
      event's Tags;
    * ``list_trials`` lists the training jobs whose ``TuningJobArn`` names the tuning job, sorted by
      name: TunedHyperParameters are the trial's hyperparameters named in the tuning job's
      ParameterRanges (when no range is known: those not in StaticHyperParameters and not starting with
      ``_``), the objective value is the FinalMetricDataList entry named like the objective
      (``_tuning_objective_metric``, else the tuning job's objective);
    * ``stop_tuning_job`` makes no call: it returns ``"stop-requested"`` and appends to :attr:`stops`
      for a job whose latest status is running, ``"already-stopping"`` if the replay stopped it before
      or its status is Stopping, ``"already-ended"`` if terminal, ``"not-found"`` if never seen. The
      job's later events are still processed as they happened: a replay cannot know what SageMaker
      would have done after the stop;
    * unknown names raise ``JobNotFound``, as the real gateway does;
    * facts a job's latest event lacks (its configuration, its instances, its tags) are answered from an
      earlier event of the job that carried them, else from ``facts`` (the deployed governor's table,
      ``governor_client.replay.facts``); an answer still without them is noted in :attr:`gaps`;
    * with a ``home`` place (a replay of several accounts or regions), a job is known by its key
      (``models.place.job_key``: ``<account>/<region>/<name>`` away from home, from its event's envelope),
      so two accounts' jobs of one name stay two jobs; this object answers for the home place and
      :meth:`at` for another (the same state, seen from there: its names, its running jobs, its stops).
      Without one, every event is the home place's, as in a single-account deploy.
    """

    def __init__(
        self, clock: Callable[[], datetime], facts: Mapping[str, KnownFacts] | None = None, home: Place | None = None
    ) -> None:
        # No SageMaker client on purpose: every call below is answered from the events observed.
        self._home = home
        self._place: Place | None = None  # where this view answers (None: the home place)
        self._clock = clock
        self._table: Mapping[str, KnownFacts] = facts or {}
        self._config: dict[str, TuningJob] = {}  # the last event of each job that carried its configuration
        self._shapes: dict[str, TuningJob] = {}  # ... its instances
        self._tags: dict[str, _Latest[dict[str, str]]] = {}  # the latest event of each job that carried Tags
        self.gaps = FactGaps()
        self._tuning: dict[str, _Latest[TuningJob]] = {}
        self._training: dict[str, _Latest[TrainingJob]] = {}
        self._ranges: dict[str, set[str]] = {}
        self._trials: dict[str, dict[str, None]] = {}
        self._jobs_seen: dict[str, None] = {}
        self._summaries = TrialSummaries()
        self._stopped: set[str] = set()
        self.stops: list[StopCall] = []
        self.trial_types: dict[str, set[str]] = {}  # region -> the instance types its trials ran on (kept)

    def at(self, place: Place) -> EventSourcedSageMaker:
        """The SageMaker of ``place`` (``Services.sagemaker_at``): this state, its names read there."""
        view = copy.copy(self)  # shares every table: one history, seen from another place
        view._place = None if place == self._home else place
        return view

    def _key(self, name: str) -> str:
        return job_key(name, self._place, None)

    def _here(self, key: str) -> bool:
        return place_in_key(key) == self._place

    def _where(self, event: StateChange) -> Place | None:
        try:
            return event.place(self._home)
        except ValueError:  # a malformed envelope: the handler rejects the event with the reason
            return None

    def observe(self, event: StateChange, detail: Mapping[str, Any]) -> None:
        """Take one event into the state (``detail`` is the event's raw ``detail`` object)."""
        place = self._where(event)
        if isinstance(event, TuningJobStateChange):
            job = event.detail.at(place)
            self._jobs_seen.setdefault(job.key)
            self._ranges.setdefault(job.key, set()).update(_range_names(detail))
            _remember(self._tuning, job.key, job, job.status, job.last_modified_time or event.time)
            self._keep_facts(job, job.last_modified_time or event.time)
            self.gaps.known(job.key, self._known(job.key), event.time)
            return
        trial = event.detail.at(place)
        key = job_key(trial.name, place, None)
        _remember(self._training, key, trial, trial.status, trial.last_modified_time or event.time)
        self.trial_types.setdefault(event.region, set()).update(trial.instances())
        if trial.tuning_job_arn:
            tuning_key = job_key(trial.tuning_job_arn.rsplit("/", 1)[-1], place, None)
            self._jobs_seen.setdefault(tuning_key)
            self._trials.setdefault(tuning_key, {})[key] = None

    # -- what the replay reads back ------------------------------------------------------------------------
    def job_keys(self) -> list[str]:
        """Keys (lower-case names) of every tuning job seen, by its own events or its trials', first seen first."""
        return list(self._jobs_seen)

    def tuning_job(self, key: str) -> TuningJob | None:
        """The latest known state of a tuning job, with its Tags; None if only its trials were seen."""
        known = self._tuning.get(key)
        return known.job if known else None

    def job_name(self, key: str) -> str:
        """The tuning job's name as SageMaker spells it (the lower-case key if only its trials were seen),
        ``<account>/<region>/<name>`` away from the home place (so two accounts' jobs are two names)."""
        known = self._tuning.get(key)
        if known is None:
            return key
        place = place_in_key(key)
        return known.job.name if place is None else f"{place.account}/{place.region}/{known.job.name}"

    def trials_of(self, key: str) -> list[TrainingJob]:
        """The latest known state of each trial of tuning job ``key``, first seen first."""
        return [self._training[name].job for name in self._trials.get(key, {})]

    def forget(self, key: str) -> None:
        """Drop tuning job ``key`` and its trials (a settled job, see ``governor_client.replay.forget``). It
        stays in :meth:`job_keys`, so the result keeps the order jobs were first seen in."""
        for name in self._trials.pop(key, {}):
            self._training.pop(name, None)
        self._tuning.pop(key, None)
        for facts in (self._config, self._shapes, self._tags):
            facts.pop(key, None)
        self._ranges.pop(key, None)
        self._summaries.forget(key)
        self._stopped.discard(key)

    # -- the SageMaker port ----------------------------------------------------------------------------------
    def any_running(self) -> bool:
        """Whether a tuning job of any place is running or stopping, or a warm pool is available."""
        return any(known.job.status in ("InProgress", "Stopping") for known in self._tuning.values()) or any(
            (pool := known.job.warm_pool_status) is not None and pool.status == "Available"
            for known in self._training.values()
        )

    def describe_training_job(self, name: str) -> TrainingJob:
        known = self._training.get(self._key(name))
        if known is None:
            raise JobNotFound(f"{name}: no event of this training job in the replayed history")
        return known.job.model_copy(update={"tags": {}})

    def describe_tuning_job(self, name: str) -> TuningJob:
        key = self._key(name)
        known = self._tuning.get(key)
        if known is None:
            raise JobNotFound(f"{name}: no event of this tuning job in the replayed history")
        job = known.job.model_copy(update={"tags": {}})
        table = self._table.get(key)
        if not has_configuration(job):
            config = self._config.get(key)
            job = job.model_copy(update={"config": config.config if config else table.config if table else job.config})
        if not has_instances(job):
            shaped = self._shapes.get(key)
            if shaped is not None:
                job = job.model_copy(
                    update={
                        "training_job_definition": shaped.training_job_definition,
                        "training_job_definitions": shaped.training_job_definitions,
                    }
                )
            elif table is not None and table.definitions:
                job = job.model_copy(
                    update={"training_job_definition": None, "training_job_definitions": list(table.definitions)}
                )
        if job.arn is None and table is not None and table.arn:
            job = job.model_copy(update={"arn": table.arn})
        self.gaps.note(key, job.name, self._missing(key, job), self._clock())
        return job

    def list_trials(self, tuning_job_name: str) -> list[TrialSummary]:
        return self.trial_summaries(self._key(tuning_job_name))

    def trial_summaries(self, key: str) -> list[TrialSummary]:
        """ListTrainingJobsForHyperParameterTuningJob of tuning job ``key`` (its key, in any place)."""
        tuning = self.tuning_job(key)
        trials = sorted(self.trials_of(key), key=lambda t: t.name)
        ranges = self._ranges.get(key, set())
        return [self._summaries.of(key, trial, tuning, ranges) for trial in trials]

    def list_tuning_jobs(self, status: str) -> list[dict[str, Any]]:
        return [
            {
                "HyperParameterTuningJobName": known.job.name,
                "HyperParameterTuningJobArn": known.job.arn,
                "HyperParameterTuningJobStatus": known.job.status,
                "CreationTime": known.job.creation_time,
                "LastModifiedTime": known.job.last_modified_time,
            }
            for key, known in self._tuning.items()
            if known.job.status == status and self._here(key)
        ]

    def list_warm_pools(self, modified_after: datetime) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for key, known in self._training.items():
            if not self._here(key):
                continue
            pool = known.job.warm_pool_status
            modified = known.job.last_modified_time
            if modified is not None and modified <= modified_after:
                continue  # as ListTrainingJobs' LastModifiedTimeAfter
            if pool is not None and pool.status == "Available":
                out.append(
                    {
                        "TrainingJobName": known.job.name,
                        "TrainingJobArn": known.job.arn,
                        "TrainingJobStatus": known.job.status,
                        "CreationTime": known.job.creation_time,
                        "WarmPoolStatus": {"Status": pool.status},
                    }
                )
        return out

    def stop_tuning_job(self, name: str) -> StopResult:
        key = self._key(name)
        known = self._tuning.get(key)
        if known is None:
            return "not-found"
        if key in self._stopped or known.job.status == "Stopping":
            return "already-stopping"
        if known.job.status in TUNING_TERMINAL:
            return "already-ended"
        self._stopped.add(key)
        self.stops.append(StopCall(job=known.job.name, at=self._clock()))
        return "stop-requested"

    def list_tags(self, arn: str) -> dict[str, str]:
        wanted = arn.lower()
        for key, tuning in self._tuning.items():
            if (tuning.job.arn or "").lower() == wanted or self._table_arn(key) == wanted:
                return self._tuning_tags(key, tuning.job.name)
        for known in self._training.values():
            if (known.job.arn or "").lower() == wanted:
                return dict(known.job.tags)
        raise JobNotFound(f"{arn}: no event of this resource in the replayed history")

    # -- facts beyond the latest event (governor_client.replay.facts) ------------------------------------------
    def _keep_facts(self, job: TuningJob, modified: datetime) -> None:
        """Keep what an event tells of its job that later, thinner events may lack."""
        if has_configuration(job):
            self._config[job.key] = job
        if has_instances(job):
            self._shapes[job.key] = job
        if "tags" in job.model_fields_set:
            _remember(self._tags, job.key, dict(job.tags), "", modified)

    def _known(self, key: str) -> list[Missing]:
        """The facts the replay knows of job ``key`` now, from its events and the table."""
        table = self._table.get(key)
        known: list[Missing] = []
        if key in self._config or (table is not None and table.config is not None):
            known.append("configuration")
        if key in self._shapes or (table is not None and table.definitions):
            known.append("instances")
        if key in self._tags or (table is not None and table.tags is not None):
            known.append("tags")
        return known

    def _missing(self, key: str, job: TuningJob) -> list[Missing]:
        known = set(self._known(key))
        missing: list[Missing] = []
        if not has_configuration(job):
            missing.append("configuration")
        if not has_instances(job):
            missing.append("instances")
        if "tags" not in known:
            missing.append("tags")
        return missing

    def _table_arn(self, key: str) -> str | None:
        table = self._table.get(key)
        return table.arn.lower() if table is not None and table.arn else None

    def _tuning_tags(self, key: str, name: str) -> dict[str, str]:
        tagged = self._tags.get(key)
        if tagged is not None:
            return dict(tagged.job)
        table = self._table.get(key)
        if table is not None and table.tags is not None:
            return dict(table.tags)
        self.gaps.note(key, name, ["tags"], self._clock())
        return {}


#: mypy checks the replay's SageMaker against the port, structurally (no base class).
_PORT: type[SageMaker] = EventSourcedSageMaker
