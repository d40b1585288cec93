"""A package's names imported from their modules on first use (PEP 562), for the packages whose
``__init__`` must stay light (``policy``, ``domain.large_batch``)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package`` (its ``__name__``): ``exports`` maps each public name to
    the module that defines it; once imported, the value is kept in the package, so the next lookup of
    the name does not come here."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
