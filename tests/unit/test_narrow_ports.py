"""Each use case declares the store areas it uses: only the composition root (``app.wiring``) and the
services it builds (``app.services``) name the whole ``Store`` or the ``Services`` that carry it in a
type annotation; every other module of ``app`` and ``governance`` takes an area port, or services
typed ``EngineServices[S]`` / ``AppServices[S]`` with ``S`` a join of area ports (``ports.uses``), so
mypy refuses a call to an area it did not declare."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

LAYER = Path(__file__).resolve().parents[2] / "layers" / "governor" / "tuning_governor"
ROOTS = ("app/wiring.py", "app/services.py")
"""The composition root and the services it builds: the only modules that hold the whole table."""
WHOLE = frozenset({"Store", "Services"})
"""The whole store, and the services whose ``store`` is it."""
NARROWED = frozenset({"EngineServices", "AppServices"})
"""Services with the store narrowed to their parameter: never named without it."""


def _annotations(tree: ast.AST) -> Iterator[ast.expr]:
    """Every type expression of a module: parameters, returns, annotated names, type aliases and the
    bounds of type parameters (string annotations parsed)."""
    for node in ast.walk(tree):
        found: list[ast.expr | None] = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            every = [*a.posonlyargs, *a.args, *a.kwonlyargs, *(x for x in (a.vararg, a.kwarg) if x)]
            found += [arg.annotation for arg in every]
            found.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
        elif isinstance(node, ast.TypeAlias):
            found.append(node.value)
        elif isinstance(node, ast.TypeVar):
            found.append(node.bound)
        for expr in found:
            if expr is not None:
                yield from _parsed(expr)


def _parsed(expr: ast.expr) -> Iterator[ast.expr]:
    """``expr`` with every string inside it (a forward reference) parsed as the expression it names."""
    yield expr
    for node in ast.walk(expr):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield from _parsed(ast.parse(node.value, mode="eval").body)


def _named(expr: ast.expr) -> Iterator[tuple[str, ast.expr]]:
    """Each name in a type expression (``Store``, ``ports.Store``: both ``Store``) and where it is."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Name):
            yield node.id, node
        elif isinstance(node, ast.Attribute):
            yield node.attr, node


def _bare(expr: ast.expr) -> Iterator[str]:
    """Narrowed services named without their store parameter (``EngineServices``, not ``EngineServices[S]``)."""
    subscripted = {id(node.value) for node in ast.walk(expr) if isinstance(node, ast.Subscript)}
    for name, node in _named(expr):
        if name in NARROWED and id(node) not in subscripted:
            yield name


def violations(source: str, where: str) -> list[str]:
    """What a module's annotations say that a use case may not: the whole store, or unnarrowed services."""
    out: list[str] = []
    for expr in _annotations(ast.parse(source)):
        out += [f"{where}:{node.lineno} names {name}" for name, node in _named(expr) if name in WHOLE]
        out += [f"{where}:{expr.lineno} names {name} without its store areas" for name in _bare(expr)]
    return out


def use_case_modules(layer: Path = LAYER) -> list[Path]:
    """Every module of ``app`` and ``governance`` but the composition root and its services."""
    modules = sorted([*(layer / "app").rglob("*.py"), *(layer / "governance").rglob("*.py")])
    return [m for m in modules if m.relative_to(layer).as_posix() not in ROOTS]


def test_no_use_case_is_handed_the_whole_store() -> None:
    found = [
        v
        for module in use_case_modules()
        for v in violations(module.read_text(encoding="utf-8"), module.relative_to(LAYER).as_posix())
    ]
    assert found == [], "declare the store areas used (a port, or a join in ports.uses):\n" + "\n".join(found)


def test_the_check_sees_every_way_of_naming_the_whole_store() -> None:
    source = """
from tuning_governor import ports
type One = Callable[["Services"], None]
def a(store: Store) -> None: ...
def b(*, store: ports.Store) -> list["Store"]: ...
def c[T: Services](services: T, **kw: EngineServices) -> AppServices: ...
class D:
    store: Store
"""
    found = violations(source, "m.py")
    assert sum("names Store" in v for v in found) == 4
    assert sum("names Services" in v for v in found) == 2
    assert sum("without its store areas" in v for v in found) == 2


def test_narrowed_services_and_area_ports_pass() -> None:
    source = """
def a(store: DeliveryStore, services: EngineServices[AdmissionStore]) -> AppServices[object]: ...
def b[S: SweepStore](services: AppServices[S], stored: "StoredPrices") -> None: ...
"""
    assert violations(source, "m.py") == []


def test_the_check_covers_the_use_cases() -> None:
    names = {m.relative_to(LAYER).as_posix() for m in use_case_modules()}
    assert {"governance/engine.py", "app/finalise.py", "app/events/training.py", "app/sweep/run.py"} <= names
    assert names.isdisjoint(ROOTS)
