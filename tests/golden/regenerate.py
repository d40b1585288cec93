"""The golden files of tests/golden: what users see, pinned before the issue-16 refactor.

    python -m tests.golden.regenerate          (or: make goldens)   rewrite tests/golden/expected/
    python -m tests.golden.regenerate --logs   first rebuild the input logs of tests/golden/inputs/ too

Each output is built by the code a user runs (the ``tuning-governor replay`` command, ``make demo``'s
``governor_client.demo.run.run``) and serialised canonically (:func:`canonical`), so that the same behaviour
gives the same bytes. ``tests/golden/test_golden.py`` builds them again and compares.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from governor_client.offline.env_vars import use_offline_environment

use_offline_environment()

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
INPUTS = HERE / "inputs"
EXPECTED = HERE / "expected"
#: The three replayed logs, with the ``--sweep-every`` each is replayed with (None: the CLI's default).
LOGS: dict[str, str | None] = {"seed": None, "busy": None, "faulty": "2m"}
#: Logs not replayed on moto by the tests: the busy log takes about 25 s there (a second on the in-memory
#: table); tests/integration/replay/test_store_equivalence.py keeps the two stores equal on such logs.
MEMORY_ONLY = frozenset({"busy"})


def canonical(value: Any) -> str:
    """JSON with sorted keys, one indent per level, Decimals and datetimes as ``str``: the bytes compared."""
    return json.dumps(value, sort_keys=True, indent=1, default=str, ensure_ascii=False) + "\n"


def _sorted(values: list[Any]) -> list[Any]:
    """A list whose order is not behaviour, in the order of its items' canonical text."""
    return sorted(values, key=canonical)


# -- inputs ------------------------------------------------------------------------------------------------
def write_logs() -> None:
    """The three input logs, from the helpers the replay tests already use (seeded: the same bytes each time)."""
    from moto import mock_aws  # imported here: only when the logs are rebuilt

    from governor_client.simulator.delivery import DeliveryFaults
    from governor_client.simulator.scenarios import seed_tuning_request
    from governor_client.simulator.simulation import Simulation
    from tests.integration.replay.conftest import busy_account_log, capture, write_jsonl
    from tests.integration.simulator.conftest import teams_scenario

    # The seed job (built-in XGBoost, Hyperband, 30 trials, 4 in parallel) as the stand-in emits it.
    write_jsonl(INPUTS / "seed.jsonl", capture([(0, seed_tuning_request("xgb-churn-hb"))]).events)
    # A busy account: 12 tuning jobs of five teams and a standalone job, light duplicates and delays.
    busy_account_log(INPUTS / "busy.jsonl", 700)
    # Four jobs of three teams delivered badly: duplicates (same and new id), delays, reordering, drops.
    faults = DeliveryFaults(
        same_id_duplicate_rate=0.1, new_id_duplicate_rate=0.1, max_delay_s=120, reorder_window=4, drop_rate=0.05, seed=9
    )
    with (
        mock_aws(),
        Simulation(teams_scenario(), seed=7, faults=faults, handlers=False, event_log=INPUTS / "faulty.jsonl") as sim,
    ):
        sim.run()


# -- replay results ------------------------------------------------------------------------------------------
def _normalised_replay(text: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(text)
    for job in result["jobs"].values():
        job["decisions"] = _sorted(job["decisions"])
    for key in ("actions", "notifications", "rejected_events", "failed_events"):
        result[key] = _sorted(result[key])
    return result


def replay_outputs(store: str = "memory") -> dict[str, str]:
    """``tuning-governor replay LOG --policy POLICY --out - --store STORE`` of each log (on moto, not those
    of ``MEMORY_ONLY``): the result JSON and the human summary. Both stores give the same bytes."""
    from governor_client.__main__ import main

    outputs: dict[str, str] = {}
    with contextlib.chdir(ROOT):  # relative paths: the result names the policy and log as given
        for name, sweep in LOGS.items():
            if store != "memory" and name in MEMORY_ONLY:
                continue
            argv = [
                "replay",
                f"tests/golden/inputs/{name}.jsonl",
                "--policy",
                f"tests/golden/inputs/{name}-policy.yaml",
            ]
            argv += ["--out", "-", "--store", store, *(["--sweep-every", sweep] if sweep else [])]
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                status = main(argv)
            if status != 0:
                raise RuntimeError(f"replay of {name} exited {status}: {err.getvalue()}")
            outputs[f"replay-{name}.json"] = canonical(_normalised_replay(out.getvalue()))
            outputs[f"replay-{name}.summary.txt"] = err.getvalue()
    return outputs


# -- the demo ------------------------------------------------------------------------------------------------
#: SNS envelope fields moto fills with random uuids or the wall clock; everything else is kept.
SNS_VOLATILE = ("MessageId", "Timestamp", "Signature", "SigningCertURL", "UnsubscribeURL")


def _sns(message: dict[str, Any]) -> dict[str, Any]:
    return {k: ("<volatile>" if k in SNS_VOLATILE else v) for k, v in message.items()}


@contextlib.contextmanager
def _recording_demo(acts: list[dict[str, Any]]) -> Iterator[None]:
    """Run ``governor_client.demo.run`` unchanged, recording each act's whole table, SNS and Slack messages.

    The demo's own ``Simulation`` and ``SlackWebhookServer`` are replaced by subclasses that only look:
    each act's table is scanned (every item, every partition) before its simulation ends.
    """
    from governor_client.demo import run as demo
    from governor_client.offline.slack_server import SlackWebhookServer
    from governor_client.simulator.simulation import Simulation

    servers: list[Any] = []

    class Slack(SlackWebhookServer):
        def __enter__(self) -> Any:
            servers.append(self)
            return super().__enter__()

    class Recording(Simulation):
        def __enter__(self) -> Any:
            self._slack_from = len(servers[-1].messages)
            return super().__enter__()

        def __exit__(self, *exc: Any) -> None:
            if exc[0] is None:
                acts.append(
                    {
                        "mode": self.environment["policy"].mode,
                        "items": list(_scan(self.env.services)),
                        "sns": list(self.env.sns_messages()),
                        "slack": list(servers[-1].messages[self._slack_from :]),
                    }
                )
            super().__exit__(*exc)

    with contextlib.ExitStack() as stack:
        stack.enter_context(_patched(demo, "Simulation", Recording))
        stack.enter_context(_patched(demo, "SlackWebhookServer", Slack))
        yield


@contextlib.contextmanager
def _patched(module: Any, name: str, value: Any) -> Iterator[None]:
    old = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, old)


def _scan(services: Any) -> Iterator[dict[str, Any]]:
    """Every item of the governor's table: the in-memory store's scan, or a DynamoDB Scan of the table on moto
    (through boto3, not the adapter: the adapter is what the goldens watch)."""
    store = services.store
    if hasattr(store, "scan"):
        yield from store.scan()
        return
    import boto3
    from boto3.dynamodb.types import TypeDeserializer

    client, deserializer = boto3.client("dynamodb"), TypeDeserializer()
    for page in client.get_paginator("scan").paginate(TableName=services.settings.table_name, ConsistentRead=True):
        yield from ({k: deserializer.deserialize(v) for k, v in item.items()} for item in page.get("Items", []))


def demo_outputs(store: str = "memory") -> dict[str, str]:
    """``make demo``'s three acts (``--store STORE``): every table item, every SNS message and every Slack
    message of each. Both stores give the same bytes."""
    from governor_client.demo import run as demo

    acts: list[dict[str, Any]] = []
    with _recording_demo(acts):
        data = demo.run(out=io.StringIO(), store=store)
    if data["errors"] or len(acts) != 3:
        raise RuntimeError(f"the demo ran {len(acts)} acts with {data['errors']} handler errors")
    if sum(len(a["sns"]) for a in acts) != len(data["sns"]) or sum(len(a["slack"]) for a in acts) != len(data["slack"]):
        raise RuntimeError("the recorded acts do not add up to the demo's own messages")
    outputs: dict[str, str] = {}
    for number, act in enumerate(acts, start=1):
        prefix = f"demo-act-{number}-{act['mode']}"
        items = sorted(act["items"], key=lambda item: (item["pk"], item["sk"]))
        outputs[f"{prefix}.table.json"] = canonical(items)
        outputs[f"{prefix}.sns.json"] = canonical(_sorted([_sns(m) for m in act["sns"]]))
        outputs[f"{prefix}.slack.json"] = canonical(_sorted(act["slack"]))
    return outputs


def all_outputs(store: str = "memory") -> dict[str, str]:
    """Every golden file's text by file name, built with the governor's table on ``store`` (``memory``: all)."""
    return {**replay_outputs(store), **demo_outputs(store)}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if "--logs" in args:
        write_logs()
    EXPECTED.mkdir(exist_ok=True)
    outputs = all_outputs()
    for stale in {p.name for p in EXPECTED.iterdir()} - set(outputs):
        (EXPECTED / stale).unlink()
    for name, text in sorted(outputs.items()):
        (EXPECTED / name).write_text(text, encoding="utf-8")
        print(f"wrote tests/golden/expected/{name} ({len(text):,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
