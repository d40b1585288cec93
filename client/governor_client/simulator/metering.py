"""Count what the governor asks of DynamoDB and SageMaker, through botocore's event hooks.

Used by tests/integration/test_linear_paths.py and benchmarks/lean.py to show that the work per event
does not grow with a job's history. A :class:`Meter` registers on a boto3 client's event system (the
same client the adapters use) and, while it is :meth:`Meter.measuring`, counts per operation:

* calls;
* DynamoDB items read: what the service reads to answer, not what it returns after a filter:
  ``ScannedCount`` for Query/Scan, 1 per key for GetItem (an absent item is still a read), the keys
  asked for in BatchGetItem and TransactGetItems;
* DynamoDB items written: 1 for PutItem/UpdateItem/DeleteItem, one per entry of TransactWriteItems
  (ConditionCheck entries included: they are read as part of a write transaction and billed as such)
  and BatchWriteItem.

Counting goes by the request and the parsed response AWS returns, never by what moto does inside.
"""

from __future__ import annotations

import contextlib
import random
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from governor_client.amt import AmtStandIn, TrialPlan
from governor_client.simulator.runner import FakeLambdaContext, deliver_event
from governor_client.simulator.scenarios import seed_tuning_request
from tuning_governor.app.services import Services
from tuning_governor.models.events import TRAINING_DETAIL_TYPE, TUNING_DETAIL_TYPE


@dataclass
class Counts:
    """What one measured stretch asked for (per operation name, as in the AWS API)."""

    calls: Counter[str] = field(default_factory=Counter)
    items_read: Counter[str] = field(default_factory=Counter)
    items_written: Counter[str] = field(default_factory=Counter)

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    @property
    def read(self) -> int:
        return sum(self.items_read.values())

    @property
    def written(self) -> int:
        return sum(self.items_written.values())

    def add(self, other: Counts) -> None:
        self.calls.update(other.calls)
        self.items_read.update(other.items_read)
        self.items_written.update(other.items_written)

    def describe(self) -> str:
        """One line: calls per operation, then items read and written."""
        ops = ", ".join(f"{op} x{n}" for op, n in sorted(self.calls.items())) or "no calls"
        return f"{ops}; {self.read} items read, {self.written} written"


def _items_read(operation: str, params: dict[str, Any], parsed: dict[str, Any]) -> int:
    if operation in {"Query", "Scan"}:
        return int(parsed.get("ScannedCount", parsed.get("Count", 0)))
    if operation == "GetItem":
        return 1
    if operation == "BatchGetItem":
        return sum(len(request.get("Keys", [])) for request in params.get("RequestItems", {}).values())
    if operation == "TransactGetItems":
        return len(params.get("TransactItems", []))
    return 0


def _items_written(operation: str, params: dict[str, Any]) -> int:
    if operation in {"PutItem", "UpdateItem", "DeleteItem"}:
        return 1
    if operation == "TransactWriteItems":
        return len(params.get("TransactItems", []))
    if operation == "BatchWriteItem":
        return sum(len(requests) for requests in params.get("RequestItems", {}).values())
    return 0


class Meter:
    """Counts calls (and, for DynamoDB, items) made through the given boto3 clients while measuring."""

    def __init__(self, *clients: Any) -> None:
        self._active: Counts | None = None
        self._pending: dict[int, dict[str, Any]] = {}
        for client in clients:
            service = client.meta.service_model.service_id.hyphenize()
            client.meta.events.register(f"provide-client-params.{service}.*", self._params)
            client.meta.events.register(f"after-call.{service}.*", self._after)

    def _params(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        # The request as the caller wrote it; kept in the request context until its response arrives.
        context["governor_meter_params"] = dict(params)

    def _after(self, parsed: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        counts = self._active
        if counts is None:
            return
        operation = str(model.name)
        params = context.get("governor_meter_params") or {}
        counts.calls[operation] += 1
        if model.service_model.service_id.hyphenize() == "dynamodb":
            counts.items_read[operation] += _items_read(operation, params, parsed)
            counts.items_written[operation] += _items_written(operation, params)

    @contextlib.contextmanager
    def measuring(self) -> Iterator[Counts]:
        """Count what happens inside the block (a call AWS refuses, e.g. a failed condition, counts too)."""
        counts = Counts()
        previous, self._active = self._active, counts
        try:
            yield counts
        finally:
            self._active = previous


# -- scenarios measured by the test and the benchmark ------------------------------------------------------

TERMINAL_TUNING = frozenset({"Completed", "Stopped", "Failed"})
TERMINAL_TRAINING = TERMINAL_TUNING


class Improving:
    """Trial behaviour for the stand-in: every trial beats the one before by 2 % (never stagnates)."""

    def __init__(self) -> None:
        self.count = 0

    def plan(
        self,
        tuning_job_config: Mapping[str, Any] | None,
        definition: Mapping[str, Any],
        hyperparameters: Mapping[str, str],
        rng: random.Random,
    ) -> TrialPlan:
        self.count += 1
        return TrialPlan(duration_s=600.0, objective_value=0.5 * 1.02**self.count)


def small_job_request(name: str, *, max_jobs: int, max_parallel: int = 4, team: str = "churn") -> dict[str, Any]:
    """The seed request on one ml.m5.xlarge per trial, Random strategy (every trial runs to the end)."""
    request = seed_tuning_request(name, team=team, instance_count=1, max_jobs=max_jobs, max_parallel=max_parallel)
    config = request["HyperParameterTuningJobConfig"]
    config["Strategy"] = "Random"
    del config["StrategyConfig"]
    return request


@dataclass
class HeldJob:
    """A tuning job whose first ``recorded`` trials were delivered; the later trials' events and the job's
    own terminal event were held back (by trial, in the order SageMaker emitted them)."""

    name: str
    recorded: int
    held_trials: list[list[dict[str, Any]]]
    job_terminal: dict[str, Any] | None

    def trial_event(self, index: int, status: str, *, started: bool = True) -> dict[str, Any]:
        """The held trial ``index``'s first event in ``status`` (InProgress: with TrainingStartTime)."""
        return next(
            event
            for event in self.held_trials[index]
            if event["detail"]["TrainingJobStatus"] == status
            and (status != "InProgress" or bool(event["detail"].get("TrainingStartTime")) == started)
        )


def run_holding(
    amt: AmtStandIn,
    sagemaker: Any,
    services: Services,
    request: dict[str, Any],
    *,
    recorded: int,
    step_s: float = 300.0,
    progress: bool = True,
) -> HeldJob:
    """Create the job (through ``sagemaker``, a boto3 client) and run it to the end on the stand-in,
    delivering every event of its first ``recorded`` trials (only their terminal ones unless
    ``progress``: quicker, as if the InProgress events were lost) and its own non-terminal events."""
    amt.engine.behaviour = Improving()
    sagemaker.create_hyper_parameter_tuning_job(**request)
    delivered: list[str] = []
    held: dict[str, list[dict[str, Any]]] = {}
    job_events: list[dict[str, Any]] = []
    for _ in range(100_000):
        amt.advance(step_s)
        for event in amt.drain_events():
            detail = event["detail"]
            if event["detail-type"] == TUNING_DETAIL_TYPE:
                if detail["HyperParameterTuningJobStatus"] in TERMINAL_TUNING:
                    job_events.append(event)
                    continue
            elif event["detail-type"] == TRAINING_DETAIL_TYPE:
                trial = detail["TrainingJobName"]
                if trial not in delivered and len(delivered) >= recorded:
                    held.setdefault(trial, []).append(event)
                    continue
                if trial not in delivered:
                    delivered.append(trial)
                if not progress and detail["TrainingJobStatus"] not in TERMINAL_TRAINING:
                    continue
            deliver_event(event, services)
        if amt.idle():
            break
    terminal = [e for e in job_events if e["detail"]["HyperParameterTuningJobStatus"] in TERMINAL_TUNING]
    return HeldJob(
        request["HyperParameterTuningJobName"], len(delivered), list(held.values()), terminal[-1] if terminal else None
    )


def deliver_measured(meter: Meter, event: dict[str, Any], services: Services) -> tuple[Counts, dict[str, Any]]:
    """Deliver one event to its handler and count what it asked of AWS."""
    with meter.measuring() as counts:
        delivery = deliver_event(event, services)
    return counts, delivery.outcome


def sweep_measured(meter: Meter, services: Services) -> tuple[Counts, dict[str, Any]]:
    """Run the sweep handler once and count what it asked of AWS."""
    import sweep  # noqa: PLC0415 - the sweep function's handler module

    with meter.measuring() as counts:
        outcome = sweep.handler({"source": "aws.scheduler"}, FakeLambdaContext("sweep"), services=services)
    return counts, outcome


def run_to_end(
    amt: AmtStandIn, sagemaker: Any, services: Services, request: dict[str, Any], *, progress: bool = True
) -> None:
    """Create the job and deliver the events it causes until the stand-in is idle (job history); a
    trial's non-terminal events only if ``progress``."""
    amt.engine.behaviour = Improving()
    sagemaker.create_hyper_parameter_tuning_job(**request)
    while True:
        amt.advance(300.0)
        for event in amt.drain_events():
            detail = event["detail"]
            if not progress and detail.get("TrainingJobStatus", "Completed") not in TERMINAL_TRAINING:
                continue
            deliver_event(event, services)
        if amt.idle():
            return
