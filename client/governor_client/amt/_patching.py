"""Reversible attribute swaps: how the stand-in plugs into moto and unplugs again."""

from __future__ import annotations

from typing import Any

_MISSING = object()


class Patches:
    """Records every attribute it sets so :meth:`undo` restores the previous state exactly.

    Undo runs in reverse order and deletes attributes that did not exist before.
    """

    def __init__(self) -> None:
        self._undo: list[tuple[object, str, object]] = []

    def set(self, target: object, name: str, value: Any) -> None:
        previous = target.__dict__.get(name, _MISSING) if isinstance(target, type) else getattr(target, name, _MISSING)
        self._undo.append((target, name, previous))
        setattr(target, name, value)

    def undo(self) -> None:
        while self._undo:
            target, name, previous = self._undo.pop()
            if previous is _MISSING:
                delattr(target, name)
            else:
                setattr(target, name, previous)
