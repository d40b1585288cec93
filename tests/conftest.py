"""Fixtures shared by every test layer.

moto >= 5: one ``mock_aws`` fixture built on fake credentials; no per-service decorators.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from governor_client.offline import moto_signing, shared_loader, sns_key, user_agent
from tests import memory_guard

# Powertools reads these when its singletons are created, i.e. at import of the handlers.
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "tuning-governor")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "TuningGovernor")
os.environ.setdefault("POWERTOOLS_DEV", "false")

# moto's whole-table transaction copy and its per-key response serializer, made per request
# (governor_client.offline.moto_speed; tests/integration/test_moto_speed.py holds it to moto's own behaviour).
if os.environ.get("TUNING_GOVERNOR_MOTO_SPEED", "1") == "1":
    from governor_client.offline import moto_speed

    moto_speed.install()

# One botocore data loader per process: moto drops boto3's default session at every start, and each
# session would parse the service models again (governor_client.offline.shared_loader).
shared_loader.install()
# One RSA key per process for moto's SNS signatures, not one per subscription (governor_client.offline.sns_key).
sns_key.install()
# botocore's User-Agent components sanitised once per text, not per request (governor_client.offline.user_agent).
user_agent.install()
# While moto answers, SigV4 requests carry botocore's headers with a signature moto never checks
# (governor_client.offline.moto_signing; tests/integration/test_moto_signing.py compares them in check mode).
moto_signing.install()

# The in-memory table's readers get read-only views: one that changes what it read fails where it does.
memory_guard.install()

# No per-example deadline: on a shared 2-core machine an example's wall time says more about the load
# than about the code (speed is shown by benchmarks/, not by tests), and a deadline missed under load
# fails a property that holds.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

ROOT = Path(__file__).resolve().parents[1]
EVENTS_DIR = ROOT / "events"
REGION = "us-east-1"
# moto's default account; an obvious fake, never a real account.
ACCOUNT_ID = "123456789012"


def load_event(name: str) -> dict[str, Any]:
    """Return the sample event ``events/<name>.json`` (the ``.json`` suffix is optional)."""
    path = EVENTS_DIR / (name if name.endswith(".json") else f"{name}.json")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


@pytest.fixture
def event_loader() -> Callable[[str], dict[str, Any]]:
    return load_event


@pytest.fixture
def aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials and region so nothing can reach a real account."""
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SECURITY_TOKEN": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture
def mocked_aws(aws_credentials: None) -> Iterator[None]:
    from moto import mock_aws

    with mock_aws():
        yield


@pytest.fixture
def atomic_moto_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    """One moto request at a time, as AWS applies each request atomically (moto itself has no lock); a
    governor's cycle of several requests still interleaves freely between threads."""
    import threading

    from moto.core.botocore_stubber import BotocoreStubber

    lock = threading.RLock()
    original = BotocoreStubber.__call__

    def locked(self: BotocoreStubber, event_name: str, request: Any, **kwargs: Any) -> Any:
        with lock:
            return original(self, event_name, request, **kwargs)

    monkeypatch.setattr(BotocoreStubber, "__call__", locked)
