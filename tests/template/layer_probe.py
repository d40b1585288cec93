"""Imports modules on a given sys.path and reports what failed; run by tests/template/test_build.py.

Runs as a script in a bare interpreter (``python -I -S``: no site-packages), so only the paths it is
given can satisfy an import. Reads JSON from stdin: ``{"path": [dirs...], "imports": [[module,
[names...]], ...]}``, where names are what a ``from module import name`` statement asks for (a
submodule or an attribute). Writes JSON to stdout: ``{"failed": {statement: error}, "origins":
{top-level package: file}}``. Standard library only.
"""

from __future__ import annotations

import importlib
import json
import sys


def _import(module: str, names: list[str]) -> None:
    imported = importlib.import_module(module)
    for name in names:
        if not hasattr(imported, name):
            importlib.import_module(f"{module}.{name}")


def main() -> int:
    request = json.load(sys.stdin)
    sys.path[:0] = request["path"]
    failed: dict[str, str] = {}
    for module, names in request["imports"]:
        statement = f"from {module} import {', '.join(names)}" if names else f"import {module}"
        try:
            _import(module, names)
        except Exception as exc:  # report every failure, not only the first
            failed[statement] = f"{type(exc).__name__}: {exc}"
    origins = {
        name: str(getattr(module, "__file__", "") or "")
        for name, module in sorted(sys.modules.items())
        if "." not in name and module is not None
    }
    json.dump({"failed": failed, "origins": origins}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
