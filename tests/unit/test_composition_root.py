"""One composition root: every handler's services are built by ``tuning_governor.app.wiring``, and a
handler's cold start loads only its own use case (the root imports each builder's adapters lazily)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENVIRONMENT = {
    "TABLE_NAME": "governor-test",
    "TOPIC_ARN": "arn:aws:sns:us-east-1:111111111111:governor-reports",
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_CONFIG_FILE": "/nonexistent",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "POWERTOOLS_TRACE_DISABLED": "true",
}
#: A cold start per handler: its import, then the services Lambda builds before the first event.
COLD_START = """
import json, sys
import {handler} as m
{build}
print(json.dumps(sorted(sys.modules)))
"""
BUILDS = {
    "tuning_events": "m.default_services()",
    "sweep": "m.default_services()",
    "price_refresh": "m.default_refresh_services()",
    "queue_submissions": "m.default_services(); m.default_queue_services()",
}


def _loaded(handler: str) -> set[str]:
    done = subprocess.run(  # noqa: S603 - this interpreter, our own snippet
        [sys.executable, "-c", COLD_START.format(handler=handler, build=BUILDS[handler])],
        # The parent's path: this checkout's layer, client and handlers, however they were put there.
        env={**ENVIRONMENT, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return set(json.loads(done.stdout.splitlines()[-1]))


def _under(modules: set[str], *prefixes: str) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_every_handler_takes_its_services_from_the_composition_root() -> None:
    for path in sorted((ROOT / "functions").glob("*/*.py")):
        builders = {
            alias.name: node.module
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
            if alias.name.startswith("default_") and alias.name.endswith("services")
        }
        assert builders, path.name
        assert set(builders.values()) == {"tuning_governor.app.wiring"}, (path.name, builders)


@pytest.mark.parametrize("handler", sorted(BUILDS))
def test_a_cold_start_builds_its_services_in_the_root_and_loads_no_other_use_case(handler: str) -> None:
    loaded = _loaded(handler)

    assert "tuning_governor.app.wiring" in loaded
    others = {
        "tuning_events": ("tuning_governor.app.sweep", "tuning_governor.app.queue", "tuning_governor.app.prices"),
        "sweep": ("tuning_governor.app.events", "tuning_governor.app.queue", "tuning_governor.app.prices"),
        "price_refresh": ("tuning_governor.app.events", "tuning_governor.app.sweep", "tuning_governor.app.queue"),
        "queue_submissions": ("tuning_governor.app.events", "tuning_governor.app.sweep", "tuning_governor.app.prices"),
    }[handler]
    assert _under(loaded, *others, "tuning_governor.app.checks") == []


def test_the_price_refresh_loads_none_of_the_event_paths_adapters_or_policy() -> None:
    loaded = _loaded("price_refresh")

    event_path = (
        "tuning_governor.app.services",
        "tuning_governor.adapters.channels",
        "tuning_governor.adapters.sagemaker",
        "tuning_governor.policy.routing",
        "aws_lambda_powertools.utilities.parameters",
    )
    assert _under(loaded, *event_path) == []


def test_what_only_some_events_need_is_loaded_on_use() -> None:
    # A tag change's re-read, the queue's requeue (a Stopped job) and the member places' walk (a policy
    # with member accounts) are imported by the step that needs them, not at a cold start.
    assert _under(_loaded("tuning_events"), "tuning_governor.app.tag_rereads", "tuning_governor.app.finalise") == []
    assert _under(_loaded("sweep"), "tuning_governor.app.sweep.places", "tuning_governor.app.finalise") == []
    assert _under(_loaded("queue_submissions"), "tuning_governor.app.queue.requeue") == []
