"""Golden files: what users see (replay results, table items, SNS and Slack messages), byte for byte.

Each output is rebuilt here by ``tests/golden/regenerate.py``, with the governor's table in memory and
on moto (the DynamoDB adapter), and compared with ``tests/golden/expected/``: the contract suite keeps
the two stores equal to each other, these files catch both drifting together. A difference is a change
in behaviour; see tests/golden/README.md.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterator

import pytest

from tests.golden import regenerate

pytestmark = pytest.mark.xdist_group("golden")

STORES = ("memory", "moto")
DIFF_LINES = 60
NAMES = sorted(p.name for p in regenerate.EXPECTED.iterdir())


def expected_names(store: str) -> list[str]:
    """The golden files built on ``store``: all on the in-memory table; on moto, all but MEMORY_ONLY's."""
    if store == "memory":
        return NAMES
    return [n for n in NAMES if not any(n.startswith(f"replay-{log}.") for log in regenerate.MEMORY_ONLY)]


@pytest.fixture(scope="module", autouse=True)
def fake_aws() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SECURITY_TOKEN", "AWS_SESSION_TOKEN"):
            mp.setenv(key, "testing")
        for key in ("AWS_DEFAULT_REGION", "AWS_REGION"):
            mp.setenv(key, "us-east-1")
        mp.delenv("AWS_PROFILE", raising=False)
        mp.delenv("TUNING_GOVERNOR_STORE", raising=False)
        yield


@functools.cache
def built(store: str) -> dict[str, str]:
    """Every output on ``store``, built once per test run."""
    return regenerate.all_outputs(store)


@pytest.mark.parametrize("store", STORES)
def test_every_output_has_its_golden_file_and_no_other(store: str) -> None:
    assert sorted(built(store)) == expected_names(store), "run `make goldens` (see tests/golden/README.md)"


@pytest.mark.parametrize(("store", "name"), [(s, n) for s in STORES for n in expected_names(s)])
def test_output_equals_its_golden_file(store: str, name: str) -> None:
    expected = (regenerate.EXPECTED / name).read_text(encoding="utf-8")
    actual = built(store).get(name)
    assert actual is not None, f"{name}: no longer produced"
    if actual != expected:
        diff = list(
            difflib.unified_diff(
                expected.splitlines(),
                actual.splitlines(),
                f"tests/golden/expected/{name}",
                f"{name} now (store {store})",
                lineterm="",
            )
        )
        more = len(diff) - DIFF_LINES
        shown = "\n".join(diff[:DIFF_LINES]) + (f"\n... {more} more diff lines" if more > 0 else "")
        pytest.fail(
            f"{name} differs from its golden file (store {store}): behaviour changed.\n{shown}\n"
            "If the change is deliberate: `make goldens`, and explain it in the commit (tests/golden/README.md).",
            pytrace=False,
        )
