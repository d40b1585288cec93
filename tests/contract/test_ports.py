"""Store contract: the ports' shape. Each area port is small, ``Store`` is exactly their join, and every
adapter has every area port's methods with the port's signatures (mypy checks the same statically: each
adapter module assigns its area class to ``type[<area port>]``)."""

from __future__ import annotations

import inspect

import pytest

from governor_client.memory import MemoryStore
from tuning_governor.adapters.dynamodb import GovernorStore
from tuning_governor.ports import AREAS, Store

MAX_METHODS = 12


def methods(port: type) -> list[str]:
    """The methods ``port`` declares itself (not those it inherits)."""
    return sorted(name for name, value in vars(port).items() if callable(value) and not name.startswith("_"))


AREA_METHODS = [(area, name) for area in AREAS for name in methods(area)]


@pytest.mark.parametrize("area", AREAS, ids=lambda area: area.__name__)
def test_each_area_port_has_at_most_twelve_methods(area: type) -> None:
    assert 0 < len(methods(area)) <= MAX_METHODS, methods(area)


def test_store_is_the_join_of_the_area_ports_and_declares_nothing_itself() -> None:
    assert methods(Store) == []
    assert set(Store.__mro__) >= set(AREAS)
    names = [name for area in AREAS for name in methods(area)]
    assert len(names) == len(set(names)), "a method in two areas"
    assert len(names) >= 40
    assert {"record_trial", "commit_admission", "claim_delivery", "open_decision", "holders"} <= set(names)


@pytest.mark.parametrize(("area", "name"), AREA_METHODS, ids=lambda v: getattr(v, "__name__", v))
def test_every_adapter_has_the_area_port_signature(area: type, name: str) -> None:
    port = inspect.signature(getattr(area, name))
    for adapter in (GovernorStore, MemoryStore):
        assert inspect.signature(getattr(adapter, name)) == port, f"{adapter.__name__}.{name} ({area.__name__})"
