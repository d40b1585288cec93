"""Report delivery: every channel tried, each report sent at most once per channel."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from aws_lambda_powertools.metrics import MetricUnit

from tuning_governor.adapters.notifiers import Notifier
from tuning_governor.domain.reports import Report
from tuning_governor.errors import DeliveryFailed
from tuning_governor.observability import metrics
from tuning_governor.ports import Store


def deliver(
    report: Report, store: Store, notifiers: Sequence[Notifier], clock: Callable[[], datetime]
) -> dict[str, str]:
    """Send a report on every channel, each at most once; raise DeliveryFailed after trying them all.

    Per channel: "sent", "already-sent", or "in-flight" (another attempt holds the claim: it may be
    re-claimed once ``CLAIM_TIMEOUT`` has passed; see ``all_delivered``)."""
    results: dict[str, str] = {}
    failures: list[str] = []
    for notifier in notifiers:
        channel = notifier.channel
        if not store.claim_delivery(report.job_key, report.kind, channel, clock()):
            # "in-flight": claimed by an attempt that has not finished (or crashed): not yet delivered.
            sent = store.delivery_sent(report.job_key, report.kind, channel)
            results[channel] = "already-sent" if sent else "in-flight"
            continue
        try:
            notifier.send(report)
        except DeliveryFailed as exc:
            store.finish_delivery(report.job_key, report.kind, channel, clock(), sent=False)
            failures.append(str(exc))
            results[channel] = "failed"
            metrics.add_metric(name="ReportFailures", unit=MetricUnit.Count, value=1)
            continue
        store.finish_delivery(report.job_key, report.kind, channel, clock(), sent=True)
        results[channel] = "sent"
        metrics.add_metric(name="ReportsSent", unit=MetricUnit.Count, value=1)
    if failures:
        raise DeliveryFailed("; ".join(failures))
    return results


def all_delivered(results: dict[str, str]) -> bool:
    """Whether ``deliver``'s results mean the report is out on every channel it was sent on: the
    default ones and its team's own (``Services.notifiers_for``)."""
    return all(result in {"sent", "already-sent"} for result in results.values())
