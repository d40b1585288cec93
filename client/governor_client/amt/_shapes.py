"""Helpers for building AWS response and request shapes."""

from __future__ import annotations

from typing import Any


def drop_none(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` without its ``None`` entries (AWS leaves unset members out)."""
    return {key: value for key, value in values.items() if value is not None}
