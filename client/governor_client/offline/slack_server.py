"""A local stand-in for a Slack incoming webhook, on 127.0.0.1 only.

It records every JSON body posted to it, and can be told to answer the next requests with errors so
tests can exercise the Slack client's retry handlers and the governor's failure handling.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self


class SlackWebhookServer:
    """``with SlackWebhookServer() as slack: slack.url`` -> messages land in ``slack.messages``."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.requests = 0
        self._failures: deque[int] = deque()
        self._lock = threading.Lock()
        self._random_failures: tuple[float, random.Random, tuple[int, ...]] | None = None
        self.failed: list[int] = []
        #: The Retry-After a 429 carries (seconds, as Slack sends it).
        self.retry_after = 0
        #: Seconds to wait after recording a post before answering it (a slow Slack: the post lands,
        #: the answer may come after the client's timeout).
        self.answer_delay = 0.0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                with server._lock:
                    server.requests += 1
                    status = server._failures.popleft() if server._failures else server._random_status()
                    if status != 200:
                        server.failed.append(status)
                    if status == 200:
                        server.messages.append(json.loads(body or b"{}"))
                payload = b"ok" if status == 200 else b"error"
                if server.answer_delay:
                    time.sleep(server.answer_delay)
                try:
                    self._answer(status, payload)
                except OSError:  # the client gave up waiting: the post has landed all the same
                    return

            def _answer(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                if status == 429:
                    self.send_header("Retry-After", str(server.retry_after))
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                return

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # stop() waits for the serving loop to look up: every 20 ms, not socketserver's 0.5 s (which every
        # test with a Slack server paid at its teardown).
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/services/T000FAKE/B000FAKE/not-a-real-token"

    def fail_next(self, *statuses: int) -> None:
        """Answer the next requests with these HTTP statuses (e.g. 500, 429), then 200 again."""
        with self._lock:
            self._failures.extend(statuses)

    def fail_at_rate(self, rate: float, *, seed: int = 0, statuses: tuple[int, ...] = (500, 503, 429)) -> None:
        """From now on, answer each request with one of ``statuses`` with probability ``rate`` (seeded);
        ``rate`` 0 switches this off. Statuses queued by :meth:`fail_next` come first."""
        with self._lock:
            self._random_failures = (rate, random.Random(f"slack|{seed}"), statuses) if rate > 0 else None

    def _random_status(self) -> int:
        if self._random_failures is None:
            return 200
        rate, rng, statuses = self._random_failures
        draw, pick = rng.random(), rng.randrange(len(statuses))
        return statuses[pick] if draw < rate else 200

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
