"""A seeded generator of hostile EventBridge events, mutated from the real samples in ``events/``.

Each fuzzed event is one sample with 1-3 mutations: wrong types, huge/negative/NaN/tiny numbers (and
the same as strings), deep nesting, hostile Unicode (NUL, lone surrogates, right-to-left marks,
emoji), deleted keys, empty keys, oversized strings (up to 100,000 characters, so the event stays
under EventBridge's 256 KB), Tags in every wrong shape, and a ``detail`` that is not an object.
The same seed gives the same events, in the same order.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import EVENTS_DIR

Path_ = tuple[str | int, ...]

HOSTILE_NUMBERS: tuple[Any, ...] = (
    10**40,
    -(10**40),
    10**38,
    2**63,
    2**64 + 1,
    -1,
    0,
    1e308,
    -1e308,
    float("inf"),
    float("-inf"),
    float("nan"),
    1e-200,
    5e-324,
    1e126,
    9.99e125,
    0.1,
    True,
)
HOSTILE_NUMBER_STRINGS = ("1e40", "NaN", "Infinity", "-Infinity", "1e-400", "0x1F", "١٢٣", "1_000", "-0", "")
HOSTILE_STRINGS = (
    "",
    " ",
    "\x00",
    "\ud800",  # a lone surrogate: not encodable as UTF-8
    "\u202eevil",  # right-to-left override
    "\u200b",  # zero-width space
    "\N{ROCKET}",
    "Équipe Vision",
    "../../etc/passwd",
    "${jndi:ldap://example.invalid/a}",
    "'; DROP TABLE jobs; --",
    "JOB#other",
    "a\nb",
    "aws:reserved",
    "ml.",
    "-",
)
# What the governor reads (and so what can reach DynamoDB or a decision): most mutations aim here.
GOVERNED_KEYS = frozenset(
    {
        "id",
        "time",
        "region",
        "detail-type",
        "source",
        "HyperParameterTuningJobName",
        "HyperParameterTuningJobArn",
        "HyperParameterTuningJobStatus",
        "HyperParameterTuningJobConfig",
        "TrainingJobDefinition",
        "TrainingJobDefinitions",
        "TrainingJobName",
        "TrainingJobArn",
        "TrainingJobStatus",
        "SecondaryStatus",
        "TuningJobArn",
        "ResourceConfig",
        "HyperParameterTuningResourceConfig",
        "ResourceLimits",
        "StoppingCondition",
        "CreationTime",
        "LastModifiedTime",
        "HyperParameterTuningEndTime",
        "TrainingStartTime",
        "TrainingEndTime",
        "TrainingTimeInSeconds",
        "BillableTimeInSeconds",
        "FinalMetricDataList",
        "WarmPoolStatus",
        "TrainingJobStatusCounters",
        "ObjectiveStatusCounters",
        "BestTrainingJob",
        "ConsumedResources",
        "Tags",
        "HyperParameters",
        "StaticHyperParameters",
        "FailureReason",
        "EnableManagedSpotTraining",
    }
)
WRONG_TYPES: tuple[Any, ...] = (None, True, 0, -7, 3.5, "", "text", [], [1, "a", None], {}, {"k": "v"}, {"": ""})


def load_samples(directory: Path = EVENTS_DIR) -> list[dict[str, Any]]:
    """Every sample event, in file-name order."""
    return [json.loads(path.read_text()) for path in sorted(directory.glob("*.json"))]


def _paths(node: Any, prefix: Path_ = (), depth: int = 0) -> Iterator[tuple[Path_, Any]]:
    yield prefix, node
    if depth >= 12:
        return
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*prefix, key), depth + 1)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, (*prefix, index), depth + 1)


def _parent(event: Any, path: Path_) -> Any:
    node = event
    for step in path[:-1]:
        node = node[step]
    return node


def _replace(event: dict[str, Any], path: Path_, value: Any) -> dict[str, Any] | Any:
    if not path:
        return value
    _parent(event, path)[path[-1]] = value
    return event


@dataclass(frozen=True)
class Fuzzed:
    """One fuzzed event, the sample it came from and what was done to it."""

    event: Any
    sample_detail_type: str
    mutations: tuple[str, ...]


class EventFuzzer:
    """Seeded: ``EventFuzzer(seed).events(n)`` is the same list for the same seed and samples."""

    def __init__(self, seed: int, samples: list[dict[str, Any]] | None = None) -> None:
        self.rng = random.Random(seed)
        self.samples = samples if samples is not None else load_samples()
        self._mutations: dict[str, Callable[[Any], Any]] = {
            "hostile-number": self._hostile_number,
            "number-as-string": self._number_as_string,
            "wrong-type": self._wrong_type,
            "delete-key": self._delete_key,
            "empty-key": self._empty_key,
            "hostile-string": self._hostile_string,
            "hostile-key": self._hostile_key,
            "oversized-string": self._oversized_string,
            "deep-nesting": self._deep_nesting,
            "non-dict-detail": self._non_dict_detail,
            "tags-shape": self._tags_shape,
        }

    def events(self, count: int) -> list[Fuzzed]:
        return [self.one() for _ in range(count)]

    def one(self) -> Fuzzed:
        sample = self.rng.choice(self.samples)
        event: Any = copy.deepcopy(sample)
        applied: list[str] = []
        for _ in range(self.rng.choice((1, 1, 2, 3))):
            name = self.rng.choice(list(self._mutations))
            event = self._mutations[name](event)
            applied.append(name)
        return Fuzzed(event=event, sample_detail_type=str(sample["detail-type"]), mutations=tuple(applied))

    # -- helpers -------------------------------------------------------------------------------------
    def _pick(self, event: Any, want: Callable[[Any], bool]) -> Path_ | None:
        candidates = [path for path, node in _paths(event) if want(node)]
        # Three times in four, aim at what the governor reads (a key on the path is a governed one).
        focused = [path for path in candidates if any(step in GOVERNED_KEYS for step in path)]
        if focused and self.rng.random() < 0.75:
            candidates = focused
        return self.rng.choice(candidates) if candidates else None

    def _in_detail_first(self, event: Any, want: Callable[[Any], bool]) -> Path_ | None:
        # Most of the time hit the detail, where the governor reads; sometimes the envelope.
        path = self._pick(event, want)
        if isinstance(event, dict) and isinstance(event.get("detail"), dict) and self.rng.random() < 0.8:
            inner = self._pick(event["detail"], want)
            if inner is not None:
                return ("detail", *inner)
        return path

    # -- mutations -----------------------------------------------------------------------------------
    def _hostile_number(self, event: Any) -> Any:
        path = self._in_detail_first(event, lambda n: isinstance(n, int | float) and not isinstance(n, bool))
        if path is None:
            path = self._in_detail_first(event, lambda n: True)
        return _replace(event, path or (), self.rng.choice(HOSTILE_NUMBERS))

    def _number_as_string(self, event: Any) -> Any:
        path = self._in_detail_first(event, lambda n: isinstance(n, int | float) and not isinstance(n, bool))
        return _replace(event, path, self.rng.choice(HOSTILE_NUMBER_STRINGS)) if path else event

    def _wrong_type(self, event: Any) -> Any:
        path = self._in_detail_first(event, lambda n: True)
        return _replace(event, path or (), copy.deepcopy(self.rng.choice(WRONG_TYPES)))

    def _delete_key(self, event: Any) -> Any:
        path = self._in_detail_first(event, lambda n: isinstance(n, dict) and bool(n))
        if path is None:
            return event
        node = event if not path else _parent(event, path)[path[-1]]
        del node[self.rng.choice(list(node))]
        return event

    def _empty_key(self, event: Any) -> Any:
        path = self._in_detail_first(event, lambda n: isinstance(n, dict))
        if path is None:
            return event
        node = event if not path else _parent(event, path)[path[-1]]
        node[self.rng.choice(("", " ", "\x00"))] = self.rng.choice(("x", "", 5, None, {"": ""}))
        return event

    def _hostile_string(self, event: Any) -> Any:
        path = self._in_detail_first(event, lambda n: isinstance(n, str))
        return _replace(event, path, self.rng.choice(HOSTILE_STRINGS)) if path else event

    def _hostile_key(self, event: Any) -> Any:
        path = self._in_detail_first(event, lambda n: isinstance(n, dict) and bool(n))
        if path is None:
            return event
        node = event if not path else _parent(event, path)[path[-1]]
        key = self.rng.choice(list(node))
        node[self.rng.choice(HOSTILE_STRINGS) + str(key)[: self.rng.randint(0, 3)]] = node.pop(key)
        return event

    def _oversized_string(self, event: Any) -> Any:
        path = self._in_detail_first(event, lambda n: isinstance(n, str))
        if path is None:
            return event
        length = self.rng.choice((129, 257, 1025, 2501, 10_000, 100_000))
        return _replace(event, path, self.rng.choice("aZ9-é") * length)

    def _deep_nesting(self, event: Any) -> Any:
        path = self._in_detail_first(event, lambda n: True)
        node: Any = "bottom"
        for level in range(self.rng.randint(20, 200)):
            node = [node] if level % 2 else {"n": node}
        return _replace(event, path or ("detail",), node)

    def _non_dict_detail(self, event: Any) -> Any:
        if not isinstance(event, dict):
            return event
        event["detail"] = copy.deepcopy(self.rng.choice((None, "detail", 42, [], [event.get("detail")], True)))
        return event

    def _tags_shape(self, event: Any) -> Any:
        if not isinstance(event, dict) or not isinstance(event.get("detail"), dict):
            return event
        event["detail"]["Tags"] = copy.deepcopy(
            self.rng.choice(
                (
                    {"": "x", "team": "vision"},
                    {"team": 5, "governance:exempt": ["true"]},
                    [{"Key": "", "Value": "x"}, {"Value": "no key"}, "junk", {"Key": "team", "Value": None}],
                    {"governance:exempt": "true\n", "team": "vis\u0000ion", "governance:budget-usd": "1" * 300},
                    {"k" * 129: "x", "team": "v" * 257},
                    "team=vision",
                    {f"tag{i}": str(i) for i in range(2000)},
                )
            )
        )
        return event
