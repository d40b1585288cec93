"""The governor's model base: schemas built on first use, one build at a time across threads."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from pydantic import ConfigDict, ValidationError
from pydantic._internal import _model_construction

from tuning_governor.model_base import GovernorModel


def test_a_model_is_built_once_on_its_first_use_even_from_many_threads_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a slow schema build (so that first uses overlap) counted
    builds: list[str] = []
    complete = _model_construction.complete_model_class

    def slow_complete(cls: type[Any], *args: Any, **kwargs: Any) -> bool:
        builds.append(cls.__name__)
        time.sleep(0.05)
        return complete(cls, *args, **kwargs)

    monkeypatch.setattr(_model_construction, "complete_model_class", slow_complete)

    class Trial(GovernorModel):
        model_config = ConfigDict(frozen=True, extra="forbid")

        name: str
        instances: int

    assert not Trial.__pydantic_complete__  # defined, not built
    start = threading.Barrier(8)

    def first_use(i: int) -> Trial:
        start.wait()
        return Trial.model_validate({"name": f"t{i}", "instances": i})

    # When eight threads validate their first one at the same moment
    with ThreadPoolExecutor(8) as pool:
        trials = list(pool.map(first_use, range(8)))

    # Then every one is validated, the schema was built once, and it validates as an eager model does
    assert [t.instances for t in trials] == list(range(8))
    assert builds == ["Trial"]
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        Trial.model_validate({"name": "t", "instances": 1, "other": 1})
