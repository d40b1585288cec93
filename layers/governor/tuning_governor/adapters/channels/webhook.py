"""A report posted as JSON to a webhook whose URL is a secret: what every webhook channel but Slack shares.

The URL alone authorises posting, so it is a secret: read from Secrets Manager, redacted from logs, never
in an error. A channel module subclasses ``WebhookNotifier`` with its ``label`` (the word its errors use)
and ``body`` (the JSON it posts for a report).

A post is never retried here: one that may have landed is reported ``unconfirmed`` (never posted
again), one that could not be sent or was refused (429 and 5xx included) ``failed``, so the delivery
row gives the claim back and the sweep's delivery step sends it once more.
"""

from __future__ import annotations

import json
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import Callable
from http.client import HTTPException
from typing import Any, ClassVar
from urllib.error import HTTPError, URLError

from tuning_governor.adapters.channels.secrets import guard_secret_logging
from tuning_governor.domain.reports import Report
from tuning_governor.errors import DeliveryFailed, DeliveryUnconfirmed
from tuning_governor.observability import seconds_left


class WebhookNotifier(ABC):
    # The webhook URL lives in Secrets Manager.
    permissions: ClassVar[frozenset[str]] = frozenset({"secretsmanager:GetSecretValue"})
    label: ClassVar[str]
    """What its errors call the webhook (``teams``: "teams webhook answered HTTP 500")."""
    content_type: ClassVar[str] = "application/json"

    def __init__(self, webhook_url: Callable[[], str], *, channel: str, timeout: int = 10, reserve_s: float = 10.0):
        self.channel = channel
        self._webhook_url = webhook_url
        self._timeout = timeout
        self._reserve = reserve_s
        guard_secret_logging()

    @abstractmethod
    def body(self, report: Report) -> dict[str, Any]:
        """The JSON the webhook is sent for ``report``."""

    def _timeout_s(self) -> float:
        """The post's timeout: its own, or what the invocation leaves less the reserve."""
        left = seconds_left()
        if left is None:
            return float(self._timeout)
        if left - self._reserve < 1:
            raise DeliveryFailed(
                f"{self.channel}: no time left in this invocation for a {self.label} post ({left:.1f} s)"
            )
        return min(float(self._timeout), left - self._reserve)

    def _url(self) -> str:
        try:
            url = self._webhook_url()
        except DeliveryFailed as exc:
            raise DeliveryFailed(f"{self.channel}: {exc}") from None
        except Exception as exc:  # a reader of our own making (tests): its text may hold the URL
            raise DeliveryFailed(
                f"{self.channel}: {self.label} webhook URL unavailable: {type(exc).__name__}"
            ) from None
        if not url.startswith(("https://", "http://")):  # urllib would also open file: and ftp: URLs
            raise DeliveryFailed(f"{self.channel}: the {self.label} webhook URL is not an http(s) URL")
        return url

    def send(self, report: Report) -> None:
        timeout = self._timeout_s()
        request = urllib.request.Request(  # noqa: S310 - http(s) only, checked by _url
            self._url(),
            data=json.dumps(self.body(report)).encode(),
            method="POST",
            headers={"Content-Type": self.content_type},
        )
        where = f"{self.channel}: {self.label} webhook"
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
                status = response.status
        except HTTPError as exc:  # answered, refused: not posted (429 and 5xx included: the sweep resends)
            raise DeliveryFailed(f"{where} answered HTTP {exc.code}") from None
        except URLError as exc:  # urllib wraps what fails while connecting and sending: not posted
            raise DeliveryFailed(f"{where} failed: {type(exc.reason).__name__}") from None
        except (OSError, HTTPException) as exc:  # sent, no (readable) answer: may have landed
            raise DeliveryUnconfirmed(f"{where} sent, answer lost: {type(exc).__name__}; not posted again") from None
        if not 200 <= status < 300:
            raise DeliveryFailed(f"{where} answered HTTP {status}")
