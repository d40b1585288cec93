"""The code's shape, as issue 16's table measures it: module sizes, long functions, port sizes, cycles.

    .venv/bin/python scripts/shape.py            # the table, as text
    .venv/bin/python scripts/shape.py --json     # the same figures, for tests and the architecture doc

Counted on production code only (layers/, client/, functions/; tests and benchmarks excluded):
- modules over ``MODULE_LINES`` lines;
- functions (methods included) over ``FUNCTION_LINES`` lines, from ``def`` to the last line of the body,
  and whether a reason stands beside them: a comment line starting ``# Long:`` directly above the
  ``def`` (or its decorators);
- methods per Protocol class in ``tuning_governor/ports/``;
- import cycles between modules (strongly connected components of grimp's import graph of the layer
  package and the client package, imports under ``TYPE_CHECKING`` included).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("layers", "client", "functions")
PORTS = ROOT / "layers/governor/tuning_governor/ports"
PACKAGES = ("tuning_governor", "governor_client")
MODULE_LINES = 400
FUNCTION_LINES = 50
REASON = "# Long:"


def production_files() -> list[Path]:
    """Every production module, by path."""
    return sorted(path for top in SOURCES for path in (ROOT / top).rglob("*.py") if ".aws-sam" not in path.parts)


def long_modules(files: list[Path]) -> list[tuple[str, int]]:
    """Modules over ``MODULE_LINES`` lines, largest first."""
    sizes = [(str(path.relative_to(ROOT)), len(path.read_text().splitlines())) for path in files]
    return sorted(((name, n) for name, n in sizes if n > MODULE_LINES), key=lambda row: -row[1])


def _has_reason(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    above = lines[first - 2].strip() if first >= 2 else ""
    return above.startswith(REASON)


def long_functions(files: list[Path]) -> list[dict[str, object]]:
    """Functions over ``FUNCTION_LINES`` lines: where, how long, and whether a reason is written beside."""
    found: list[dict[str, object]] = []
    for path in files:
        text = path.read_text()
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > FUNCTION_LINES:
                    found.append(
                        {
                            "where": f"{path.relative_to(ROOT)}:{node.lineno}",
                            "function": node.name,
                            "lines": length,
                            "reason": _has_reason(lines, node),
                        }
                    )
    return sorted(found, key=lambda row: -int(str(row["lines"])))


def _is_protocol(node: ast.ClassDef) -> bool:
    return any(
        (isinstance(base, ast.Name) and base.id == "Protocol")
        or (isinstance(base, ast.Attribute) and base.attr == "Protocol")
        for base in node.bases
    )


def port_methods() -> dict[str, int]:
    """Methods each Protocol in ``ports/`` declares itself (inherited ones not counted again)."""
    counts: dict[str, int] = {}
    for path in sorted(PORTS.glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef) and _is_protocol(node):
                methods = [
                    item
                    for item in node.body
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and not item.name.startswith("__")
                ]
                counts[f"{path.stem}.{node.name}"] = len(methods)
    return counts


def import_cycles() -> list[list[str]]:
    """Cycles between modules: each strongly connected component of more than one module (Tarjan)."""
    import grimp  # noqa: PLC0415 - a dev tool, imported only when cycles are measured

    graph = grimp.build_graph(*PACKAGES)
    edges = {module: sorted(graph.find_modules_directly_imported_by(module)) for module in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(start: str) -> None:
        # Iterative Tarjan: the graph is small, but recursion depth should not depend on it.
        work = [(start, iter(edges.get(start, [])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges.get(child, []))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return sorted(components)


def measure() -> dict[str, object]:
    """Every figure of the table."""
    files = production_files()
    return {
        "modules_over_limit": long_modules(files),
        "functions_over_limit": long_functions(files),
        "port_methods": port_methods(),
        "import_cycles": import_cycles(),
    }


def render(figures: dict[str, object]) -> str:
    """The figures as a short text table."""
    modules = figures["modules_over_limit"]
    functions = figures["functions_over_limit"]
    ports = figures["port_methods"]
    cycles = figures["import_cycles"]
    assert isinstance(modules, list) and isinstance(functions, list)
    assert isinstance(ports, dict) and isinstance(cycles, list)
    lines = [f"modules over {MODULE_LINES} lines: {len(modules)}"]
    lines += [f"  {name} {n}" for name, n in modules]
    unexplained = [row for row in functions if not row["reason"]]
    lines.append(
        f"functions over {FUNCTION_LINES} lines: {len(functions)} ({len(unexplained)} without a '{REASON}' reason)"
    )
    lines += [
        f"  {row['where']} {row['function']} {row['lines']}{'' if row['reason'] else ' (no reason)'}"
        for row in functions
    ]
    lines.append(f"ports: {len(ports)}, largest {max(ports.values(), default=0)} methods")
    lines += [f"  {name} {n}" for name, n in sorted(ports.items())]
    lines.append(f"import cycles: {len(cycles)}")
    lines += [f"  {' <-> '.join(component)}" for component in cycles]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    figures = measure()
    print(json.dumps(figures, indent=1) if args.json else render(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
