"""What would a policy have done to captured events? ``tuning-governor replay`` and its library API.

    tuning-governor replay EVENTS.jsonl --policy POLICY.yaml --out RESULT.json

The events file holds one EventBridge event per line, exactly as a rule's target receives it (the
shapes in ``events/``). Each line is checked, then delivered, in file order, to the governor's
handlers in-process: the service functions the Lambda handlers call (``process_tuning_event``,
``process_training_event``), given the event model the replay validated, with:

* ``sagemaker``: :class:`EventSourcedSageMaker`, the SageMaker port answering every call the governor makes from
  the events read so far (a job's state is its latest event's detail, i.e. its Describe response);
* ``store``: the governor's table in memory (:class:`governor_client.memory.MemoryStore`, the default),
  or with ``--store moto`` the DynamoDB adapter on a table on moto (:func:`governor_client.offline.environment.create_table`);
  both give the same result (tests/integration/replay/test_store_equivalence.py);
* ``clock``: the envelope time of the event being processed, so decisions are dated by the event that
  decided them;
* ``policy``: the given policy (its ``prices`` override the catalog); ``quotas`` None: Service Quotas
  are unknown in a replay, the policy's ``quotas`` are the limits;
* notifiers that record reports on channels ``sns`` and ``slack`` and send nothing.

Between the events, the scheduled sweep (:func:`tuning_governor.app.sweep.run.run_sweep`) runs with the same
services every ``--sweep-every`` of the events' time (default: template.yaml's ``SweepSchedule``,
5 minutes), its clock at its own time, as the deployed governor would run it.

Nothing leaves the machine. The result (:class:`governor_client.replay.model.ReplayResult`) lists every
tuning job's summary and decisions, the stops issued, the reports, the unusable lines and the savings;
``docs/reference/replay.md`` defines each figure.

A thin event (AWS's documented tuning event has no configuration and may have no tags) is completed
from the job's earlier events or, with ``--facts-from-table``, from the deployed governor's table; a job
still judged without a fact is listed in the result's ``facts.incomplete``, never assumed silently.

The package, by reason to change: ``lines`` (checking each line) and ``sources`` (files, stdin, capture
folders and S3 prefixes; the policy file), ``sagemaker`` (the event-sourced SageMaker) and ``facts`` (what it
knows beyond a job's latest event, the table read, the gaps), ``engine`` (feeding
events, the sweeps and budget checks on the timeline, forgetting settled jobs with ``forget``), ``run``
(wiring the governor's services), ``results`` / ``model`` / ``summary`` / ``schema`` (the result, its text and its JSON Schema),
``timeline`` / ``page`` / ``figures`` (``--html``) and ``cli`` (the subcommand).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from governor_client.replay.cli import add_arguments, run_command
    from governor_client.replay.engine import ReplayProbe, quiet_handlers
    from governor_client.replay.lines import ReplayInputError, parse_line
    from governor_client.replay.model import ReplayResult
    from governor_client.replay.run import DEFAULT_REGION, replay_events, replay_file, replay_lines
    from governor_client.replay.sagemaker import EventSourcedSageMaker, StopCall
    from governor_client.replay.schedule import (
        DEFAULT_SWEEP_EVERY,
        DEFAULT_SWEEP_SCHEDULE,
        interval_text,
        parse_sweep_every,
    )
    from governor_client.replay.sources import load_policy, policy_error_line
    from governor_client.replay.summary import render_summary

#: Each public name and the module that defines it, imported on first use (PEP 562): importing one
#: submodule (or this package for one name) does not load the others' dependencies.
_EXPORTS: dict[str, str] = {
    "DEFAULT_REGION": "governor_client.replay.run",
    "DEFAULT_SWEEP_EVERY": "governor_client.replay.schedule",
    "DEFAULT_SWEEP_SCHEDULE": "governor_client.replay.schedule",
    "EventSourcedSageMaker": "governor_client.replay.sagemaker",
    "ReplayInputError": "governor_client.replay.lines",
    "ReplayProbe": "governor_client.replay.engine",
    "ReplayResult": "governor_client.replay.model",
    "StopCall": "governor_client.replay.sagemaker",
    "add_arguments": "governor_client.replay.cli",
    "interval_text": "governor_client.replay.schedule",
    "load_policy": "governor_client.replay.sources",
    "parse_line": "governor_client.replay.lines",
    "parse_sweep_every": "governor_client.replay.schedule",
    "policy_error_line": "governor_client.replay.sources",
    "quiet_handlers": "governor_client.replay.engine",
    "render_summary": "governor_client.replay.summary",
    "replay_events": "governor_client.replay.run",
    "replay_file": "governor_client.replay.run",
    "replay_lines": "governor_client.replay.run",
    "run_command": "governor_client.replay.cli",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "DEFAULT_REGION",
    "DEFAULT_SWEEP_EVERY",
    "DEFAULT_SWEEP_SCHEDULE",
    "EventSourcedSageMaker",
    "ReplayInputError",
    "ReplayProbe",
    "ReplayResult",
    "StopCall",
    "add_arguments",
    "interval_text",
    "load_policy",
    "parse_line",
    "parse_sweep_every",
    "policy_error_line",
    "quiet_handlers",
    "render_summary",
    "replay_events",
    "replay_file",
    "replay_lines",
    "run_command",
]
