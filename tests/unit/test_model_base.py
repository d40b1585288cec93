"""The governor's model base: schemas built on first use, one build at a time across threads."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from pydantic import ConfigDict, PrivateAttr, ValidationError
from pydantic._internal import _model_construction

from tuning_governor.domain.job import JobState
from tuning_governor.domain.spend import RunningTrial
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


def _instance_state(model: GovernorModel) -> tuple[Any, ...]:
    return (model.__dict__, model.model_fields_set, model.__pydantic_extra__, model.__pydantic_private__)


def test_from_fields_makes_the_instance_model_construct_makes() -> None:
    values = {"job_key": "j", "trial": "t", "start": "2026-11-30", "instances": {"a": 1}}
    full = values | {"spot": False, "region": None, "max_seconds": None}
    made = RunningTrial.from_fields(dict(full))
    assert _instance_state(made) == _instance_state(RunningTrial.model_construct(**full))
    assert made == RunningTrial.model_construct(**full) and type(made) is RunningTrial
    # Not every field named: model_construct itself (its defaults filled, fields_set as given)
    assert _instance_state(RunningTrial.from_fields(dict(values))) == _instance_state(
        RunningTrial.model_construct(**values)
    )
    item = {"pk": "JOB#j", "sk": "META", "job_name": "j", "status": "InProgress", "running": {}}
    job = JobState.from_item(item)
    assert _instance_state(job) == _instance_state(JobState.model_construct(**dict(job.__dict__)))

    class WithPrivate(GovernorModel):
        name: str
        _seen: int = PrivateAttr(default=3)

    assert WithPrivate.from_fields({"name": "x"})._seen == 3  # private attributes: model_construct's way
