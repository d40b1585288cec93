"""Transient faults at the boto3 level, and EventBridge's redelivery of the events that failed.

    injector = FaultInjector(rate=0.3, phase="before", seed=4)
    injector.attach(environment_clients(env)["dynamodb"], "dynamodb")
    ... run ...
    injector.faults  # every fault raised: (service, operation, phase)

A fault is a retryable ``ClientError`` (``ThrottlingException``, or a 500 ``InternalFailure``/
``InternalServerError``, drawn at random), raised from a botocore event hook on one client:

* ``phase="before"`` (``before-call``): the request never reaches the service; nothing happened.
* ``phase="after"`` (``after-call``): the service did the work and answered, but the caller sees an
  error (a response lost on the way back, a timeout after the write): the effect happened.

Raising from these hooks bypasses botocore's own retries, i.e. each fault is what the caller sees after
its SDK has given up. Hooks are per client (botocore copies the emitter into each client), so the AMT
stand-in and the test's own reads through other clients are untouched; reads through the governor's
own clients go inside :meth:`FaultInjector.paused`.

Slack faults are HTTP 500/429 answers of the local webhook server
(:meth:`governor_client.offline.slack_server.SlackWebhookServer.fail_at_rate`): the webhook client's own retry
handlers see them first, as in Lambda.

:func:`deliver_until_done` re-sends a failed event as EventBridge retries a failed target: the same
event (same ``id``), up to ``max_retries`` more times.
"""

from __future__ import annotations

import contextlib
import random
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from botocore.exceptions import ClientError

from governor_client.offline.environment import OfflineEnvironment
from governor_client.simulator.runner import Delivery, deliver_event
from tuning_governor.adapters.channels.sns import SnsNotifier
from tuning_governor.app.services import Services

Phase = Literal["before", "after"]

#: Retryable answers per service, as each service spells them (the 500s are what the SDK calls retryable).
RETRYABLE: dict[str, tuple[tuple[str, int], ...]] = {
    "dynamodb": (("ThrottlingException", 400), ("InternalServerError", 500)),
    "sagemaker": (("ThrottlingException", 400), ("InternalFailure", 500)),
    "service-quotas": (("TooManyRequestsException", 400), ("ServiceException", 500)),
    "sns": (("Throttling", 400), ("InternalError", 500)),
    "secretsmanager": (("ThrottlingException", 400), ("InternalServiceError", 500)),
}


@dataclass(frozen=True)
class Fault:
    service: str
    operation: str
    phase: Phase
    code: str


@dataclass
class FaultInjector:
    """Raise a retryable error on a ``rate`` of the calls of the attached clients, from a seeded RNG.

    ``operations``: only these operation names (``DescribeTrainingJob``...) are eligible (None: all);
    ``first_call``: the first eligible call always fails, so a run with few calls still sees a fault.
    Callers may rely on: the same seed and the same sequence of calls give the same faults; every call
    is counted in :attr:`calls` as ``(service, operation, outcome)`` with outcome ``ok``, ``failed-before``
    (never reached the service) or ``failed-after`` (reached it); :attr:`faults` lists what was raised.
    """

    rate: float
    phase: Phase = "before"
    seed: int = 0
    operations: frozenset[str] | None = None
    first_call: bool = True
    faults: list[Fault] = field(default_factory=list)
    calls: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    _rng: random.Random = field(init=False, repr=False)
    _enabled: bool = field(default=True, init=False, repr=False)
    _eligible_seen: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"rate must be in [0, 1], not {self.rate}")
        self._rng = random.Random(f"faults|{self.seed}|{self.phase}|{self.rate}")

    def attach(self, client: Any, service: str) -> None:
        """Hook ``client`` (a botocore client): its calls may now fail as configured."""
        codes = RETRYABLE[service]
        events = client.meta.events

        def before(model: Any, **_: Any) -> None:
            self._call(service, model.name, codes, "before")

        def after(model: Any, http_response: Any = None, parsed: Any = None, **_: Any) -> None:
            status = getattr(http_response, "status_code", 200)
            if status is not None and int(status) >= 300:
                return  # the service refused the call itself: the caller sees that error anyway
            self._call(service, model.name, codes, "after")

        events.register("before-call.*.*", before, unique_id=f"fault-injector-before-{id(self)}")
        events.register("after-call.*.*", after, unique_id=f"fault-injector-after-{id(self)}")

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No faults and no counting inside (for the test's own reads through the governor's clients)."""
        previous, self._enabled = self._enabled, False
        try:
            yield
        finally:
            self._enabled = previous

    def count(self, service: str, operation: str, outcome: str) -> int:
        return self.calls[(service, operation, outcome)]

    def reached(self, service: str, operation: str) -> int:
        """Calls of ``operation`` that reached the service (answered ok, or failed after the call)."""
        return self.count(service, operation, "ok") + self.count(service, operation, "failed-after")

    def _call(self, service: str, operation: str, codes: tuple[tuple[str, int], ...], at: Phase) -> None:
        if not self._enabled:
            return
        eligible = self.operations is None or operation in self.operations
        if at == "before" and self.phase == "after":
            return  # counted once the service has answered
        if at == "after" and self.phase == "before":
            self.calls[(service, operation, "ok")] += 1
            return
        fail = False
        if eligible:
            # One draw per eligible call whatever the outcome, so faults stay reproducible.
            draw, pick = self._rng.random(), self._rng.randrange(len(codes))
            fail = draw < self.rate or (self.first_call and self._eligible_seen == 0)
            self._eligible_seen += 1
        if not fail:
            if at == "after":
                self.calls[(service, operation, "ok")] += 1
            return
        code, status = codes[pick]
        self.faults.append(Fault(service, operation, at, code))
        self.calls[(service, operation, f"failed-{at}")] += 1
        response: Any = {
            "Error": {"Code": code, "Message": f"injected {at} the call"},
            "ResponseMetadata": {"HTTPStatusCode": status, "RetryAttempts": 4},
        }
        raise ClientError(response, operation)


def environment_clients(env: OfflineEnvironment) -> dict[str, Any]:
    """The governor's own boto3 clients in an offline environment, by service name."""
    services = env.services
    clients: dict[str, Any] = {
        "dynamodb": services.store._client,  # the adapters' own clients are the ones to fault
        "sagemaker": services.sagemaker._client,
    }
    if services.quotas is not None:
        clients["service-quotas"] = services.quotas._client
    for notifier in services.notifiers:
        if isinstance(notifier, SnsNotifier):
            clients["sns"] = notifier._client
    if env.secrets is not None:
        clients["secretsmanager"] = env.secrets
    return clients


def deliver_until_done(
    event: dict[str, Any],
    services: Services,
    *,
    max_retries: int = 185,
    deliver: Callable[[dict[str, Any], Services], Delivery] = deliver_event,
) -> list[Delivery]:
    """Deliver ``event`` and, while the target fails (outcome ``error``), deliver the very same event
    again, up to ``max_retries`` times (EventBridge's maximum is 185). Returns every attempt's delivery."""
    attempts = [deliver(event, services)]
    while attempts[-1].outcome.get("outcome") == "error" and len(attempts) <= max_retries:
        attempts.append(deliver(event, services))
    return attempts


def failed_for_good(attempts: Iterable[list[Delivery]]) -> list[Delivery]:
    """The last delivery of every event that still failed after its retries (would be dead-lettered)."""
    return [tries[-1] for tries in attempts if tries[-1].outcome.get("outcome") == "error"]
