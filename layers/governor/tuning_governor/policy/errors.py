"""The policy's errors and how a problem is worded: key paths as written in the document, given values
as they would appear in it, and what was expected in our words rather than pydantic's."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from pydantic_core import ErrorDetails

from tuning_governor.errors import GovernorError, TransientError

_PLAIN_SEGMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_MAX_PROBLEMS = 8
_MAX_GIVEN = 60
_MAX_MESSAGE = 1000


class PolicyError(GovernorError, ValueError):
    """The policy text is not a valid policy. ``problems`` lists each one (path, expected, given).

    The message stays under about 1 KB. Disposition RETRY: without a policy no event can be governed,
    and the event succeeds once an operator fixes the document.
    """

    def __init__(self, source: str, problems: list[str], headline: str = "is invalid") -> None:
        self.source = source
        self.problems = tuple(problems)
        message = f"policy {source[:200]} {headline}" + (":" if problems else "")
        for index, problem in enumerate(problems):
            line = "\n  - " + (problem if len(problem) <= 300 else problem[:297] + "...")
            rest = len(problems) - index
            # Keep room for the "... and N more" line so the message never ends mid-problem.
            if index == _MAX_PROBLEMS or len(message) + len(line) > _MAX_MESSAGE - 30:
                message += f"\n  ... and {rest} more"
                break
            message += line
        super().__init__(message)


class PolicyUnavailable(TransientError):
    """The policy source could not be read (SSM error, missing file). Retried like any transient error."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"policy {source} could not be read: {reason[:300]}")
        self.source = source


def render_path(loc: tuple[int | str, ...]) -> str:
    """A key path as written in the document: ``teams.vision.instances["ml.p3.2xlarge"]``.

    Keys that are not plain identifiers (dots, spaces, numbers) are quoted in brackets so the path
    is unambiguous.
    """
    out = ""
    for part in loc:
        if isinstance(part, str) and _PLAIN_SEGMENT.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part, ensure_ascii=False)}]"
    return out or "<document>"


def did_you_mean(given: str, choices: Iterable[str]) -> str:
    """``did you mean "X"? `` naming the one of ``choices`` nearest to ``given`` (difflib's close match),
    or "" when none is near enough to be a likely misspelling."""
    near = difflib.get_close_matches(given, list(choices), n=1)
    return f'did you mean "{near[0]}"? ' if near else ""


def describe(err: ErrorDetails, allowed_keys: Callable[[tuple[int | str, ...]], list[str]]) -> str:
    """One problem as reported: ``<path>: <what was expected>, got <what was given>``.

    ``allowed_keys`` names the keys a mapping at a parent path accepts, for an unknown key's hint.
    """
    loc = tuple(err["loc"])
    if loc and loc[-1] == "[key]":
        nearest = ""
        if err["type"] == "literal_error":
            keys = re.findall(r"'([^']*)'", str(err.get("ctx", {}).get("expected", "")))
            nearest = did_you_mean(str(err.get("input")), keys)
        return f"{render_path(loc[:-1])}: bad key: {nearest}{_expected(err)}"
    path = render_path(loc)
    if err["type"] in {"deprecated_duplicate", "no_grace"}:
        return f"{path}: {err['msg']}"
    if err["type"] == "extra_forbidden":
        allowed = allowed_keys(loc[:-1])
        return f"{path}: unknown key; {did_you_mean(str(loc[-1]), allowed)}expected one of: {', '.join(allowed)}"
    return f"{path}: {_expected(err)}, got {render_value(err.get('input'))}"


# Our own wording for the errors a policy can produce: pydantic's speaks of Python types.
_EXPECTED = {
    "dict_type": "expected a mapping",
    "model_type": "expected a mapping",
    "model_attributes_type": "expected a mapping",
    "string_type": "expected a string",
    "string_too_short": "expected a non-empty string",
}
_BOUNDS = {"greater_than_equal": ("ge", ">="), "greater_than": ("gt", ">")}


def _expected(err: ErrorDetails) -> str:
    kind, ctx = err["type"], err.get("ctx", {})
    if kind in _EXPECTED:
        return _EXPECTED[kind]
    if kind in _BOUNDS:
        bound, sign = _BOUNDS[kind]
        return f"expected a number {sign} {_number(ctx.get(bound))}"
    if kind == "literal_error":
        return f"expected {ctx.get('expected', 'one of the allowed values')}"
    if kind == "string_too_long":
        return f"expected at most {ctx.get('max_length')} characters"
    if kind.startswith(("decimal", "float", "int")):
        return "expected a whole number" if kind.startswith("int") else "expected a number"
    return err["msg"].replace("Input should be", "expected")


def kind_of(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return f"a {type(value).__name__}"


def render_value(value: Any) -> str:
    """A short rendering of a given value, as it would appear in the document."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return json.dumps(value if len(value) <= _MAX_GIVEN else value[: _MAX_GIVEN - 3] + "...", ensure_ascii=False)
    text = _number(value) if isinstance(value, float) else str(value)
    return text if len(text) <= _MAX_GIVEN else text[: _MAX_GIVEN - 3] + "..."


def _number(value: Any) -> str:
    # Pydantic reports a float field's bound as 0.0; the document says 0.
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
