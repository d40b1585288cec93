"""Report delivery: every channel tried, each report sent at most once per channel."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.domain.reports import Report
from tuning_governor.errors import DeliveryFailed, DeliveryUnconfirmed, TransientError
from tuning_governor.observability import logger, metrics
from tuning_governor.ports import DeliveryStore, Notifier

#: How often a delivery's own bookkeeping write is tried in place before the invocation gives up.
BOOKKEEPING_ATTEMPTS = 6
#: Pause before the first retry, doubled each time (0.05 + 0.1 + ... + 0.8 s: 1.55 s at most in all).
BOOKKEEPING_BACKOFF_S = 0.05


def deliver(
    report: Report, store: DeliveryStore, notifiers: Sequence[Notifier], clock: Callable[[], datetime]
) -> dict[str, str]:
    """Send a report on every channel, each at most once. Never raises for a channel that cannot
    deliver: a report is a step of its own, and a failing channel must not hold back the decisions,
    stops and releases that follow it in the same invocation. The caller keeps the report's step open
    (a decision left ``pending``, a summary's ``GAPS`` item) when :func:`all_delivered` is False, and
    the sweep's delivery step sends it again (``actions.resume_stale``, ``Sweep.fill_gaps``).

    Per channel: "sent", "already-sent", "failed" (this attempt could not send it; the claim is given
    back), "unconfirmed" (sent, its answer lost: marked sent, never posted again), or "in-flight"
    (another attempt holds the claim: it may be re-claimed once ``CLAIM_TIMEOUT`` has passed).

    The two writes around a send are what makes it happen once, so a transient failure of either is
    retried in place (:data:`BOOKKEEPING_ATTEMPTS`) rather than handed to EventBridge's retry:
    - the claim carries this attempt's token, so when its answer is lost after the write, the retry
      finds its own claim and takes it (nothing was sent under it); handed to a new invocation, the
      claim would look like someone else's and wait out ``CLAIM_TIMEOUT``;
    - the "sent" mark is written by the only process that knows the report went out; lost, the
      claim would go stale and the report be sent again.
    """
    results: dict[str, str] = {}
    for notifier in notifiers:
        channel = notifier.channel
        claim = partial(store.claim_delivery, report.job_key, report.kind, channel, token=uuid.uuid4().hex)
        claimed = _in_place(claim, clock)
        if not claimed:
            # "in-flight": claimed by an attempt that has not finished (or crashed): not yet delivered.
            sent = store.delivery_sent(report.job_key, report.kind, channel)
            results[channel] = "already-sent" if sent else "in-flight"
            continue
        results[channel] = _send_claimed(report, notifier, store, clock)
    return results


def _send_claimed(report: Report, notifier: Notifier, store: DeliveryStore, clock: Callable[[], datetime]) -> str:
    """Send a claimed report on one channel and write down what happened: "sent", "unconfirmed" or
    "failed" (the claim given back, so the sweep's delivery step can take it)."""
    channel = notifier.channel
    finish = partial(store.finish_delivery, report.job_key, report.kind, channel)
    try:
        notifier.send(report)
    except DeliveryUnconfirmed as exc:
        # No idempotency key on a webhook, no way to read it back: a post that may have landed is
        # counted as sent, never posted blind again (at most once; docs/explanation/reliability.md).
        _in_place(partial(finish, sent=True), clock)
        logger.warning("report posted, answer lost; not posted again", extra={"channel": channel, "error": str(exc)})
        metrics.add_metric(name="ReportsUnconfirmed", unit=MetricUnit.Count, value=1)
        return "unconfirmed"
    except DeliveryFailed as exc:
        _in_place(partial(finish, sent=False), clock)  # lost, the claim would hold the report back until stale
        logger.warning(
            "report not delivered; left for the sweep's delivery step",
            extra={"channel": channel, "kind": report.kind, "job": report.job_key, "error": str(exc)},
        )
        metrics.add_metric(name="ReportFailures", unit=MetricUnit.Count, value=1)
        return "failed"
    _in_place(partial(finish, sent=True), clock)
    metrics.add_metric(name="ReportsSent", unit=MetricUnit.Count, value=1)
    return "sent"


def _in_place[T](write: Callable[[datetime], T], clock: Callable[[], datetime]) -> T:
    """``write(now)``, tried up to :data:`BOOKKEEPING_ATTEMPTS` times while it fails with a
    TransientError (the write must be idempotent); the last failure is raised."""
    pause = BOOKKEEPING_BACKOFF_S
    for _ in range(BOOKKEEPING_ATTEMPTS - 1):
        try:
            return write(clock())
        except TransientError as exc:
            logger.warning("delivery bookkeeping write failed; trying again", extra={"error": str(exc)})
            metrics.add_metric(name="DeliveryWritesRetried", unit=MetricUnit.Count, value=1)
            time.sleep(pause)
            pause *= 2
    return write(clock())


def all_delivered(results: dict[str, str]) -> bool:
    """Whether ``deliver``'s results mean the report is out on every channel it was sent on: the
    default ones and its team's own (``Services.notifiers_for``)."""
    return all(result in {"sent", "already-sent", "unconfirmed"} for result in results.values())
