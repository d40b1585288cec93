"""The code's shape holds (docs/explanation/architecture.md): small modules, short functions, small ports, no
import cycles, thin handlers. The figures come from scripts/shape.py, which prints them."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

# One worker runs this module: its module-scoped (or cached) runs are built once, not once per worker.
pytestmark = pytest.mark.xdist_group("architecture")

ROOT = Path(__file__).resolve().parents[2]
MAX_PORT_METHODS = 12
HANDLER_MAY_IMPORT = ("tuning_governor.app", "tuning_governor.observability")


@pytest.fixture(scope="module")
def shape() -> ModuleType:
    spec = importlib.util.spec_from_file_location("shape", ROOT / "scripts" / "shape.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["shape"] = module
    spec.loader.exec_module(module)
    return module


def test_no_module_is_over_400_lines(shape: ModuleType) -> None:
    assert shape.long_modules(shape.production_files()) == []


def test_a_function_over_50_lines_says_why(shape: ModuleType) -> None:
    unexplained = [row for row in shape.long_functions(shape.production_files()) if not row["reason"]]
    assert unexplained == []


def test_the_length_check_sees_a_long_function(
    shape: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The instrument the two tests above rely on: a 60-line function is found, and its reason read.
    body = "\n".join(f"    x{i} = {i}" for i in range(60))
    (tmp_path / "long.py").write_text(
        f"def long() -> None:\n{body}\n\n\n# Long: a table\ndef explained() -> None:\n{body}\n"
    )
    monkeypatch.setattr(shape, "ROOT", tmp_path)
    found = {str(row["function"]): bool(row["reason"]) for row in shape.long_functions([tmp_path / "long.py"])}
    assert found == {"long": False, "explained": True}


def test_every_port_has_at_most_12_methods(shape: ModuleType) -> None:
    ports = shape.port_methods()
    assert "store.Store" in ports and len(ports) >= 8, ports
    assert {name: n for name, n in ports.items() if n > MAX_PORT_METHODS} == {}


def test_no_import_cycles(shape: ModuleType) -> None:
    assert shape.import_cycles() == []


def test_handlers_call_the_application_layer_only() -> None:
    handlers = sorted((ROOT / "functions").glob("*/*.py"))
    assert len(handlers) == 6  # five governing functions and the queue consumer (docs/explanation/queue.md)
    for path in handlers:
        imported = [
            node.module
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tuning_governor")
        ]
        assert imported, path
        assert all(module.startswith(HANDLER_MAY_IMPORT) for module in imported), (path.name, imported)
