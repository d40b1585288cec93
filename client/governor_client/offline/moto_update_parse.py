"""moto's parse of an UpdateExpression, made once per expression text.

moto parses an UpdateItem's ``UpdateExpression`` twice per request (once in the response handler, to
list the names and values it uses, once in the backend before applying it), and a transaction's
updates once more each. The governor sends the same few expression texts again and again (its names
and values are placeholders), and the parse (tokenizer and recursive-descent parser, in Python) was
about 3 % of the integration tests' CPU. moto only reads the parsed tree: its handler lists clauses
(``find_clauses``) and its ``Validator`` deep-copies the tree before it substitutes and normalises
anything. So the tree of each text is kept (at most 1,024 texts) and given again; a text moto refuses
raises at every request, as before, since nothing is kept for it.

With ``TUNING_GOVERNOR_MOTO_SPEED_CHECK=1`` every request parses the text afresh too and compares the
two trees node by node (type, value and children): a kept tree that anything changed, or a parse that
depended on more than its text, fails with :class:`ParseCacheMismatch`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

from moto.dynamodb.parsing import ast_nodes as _ast_nodes
from moto.dynamodb.parsing import expressions as _expressions

ast_nodes: Any = _ast_nodes  # moto's parsing modules carry no types
expressions: Any = _expressions
Node = ast_nodes.Node
UpdateExpressionParser = expressions.UpdateExpressionParser

_installed: dict[str, Callable[..., Any]] = {}


class ParseCacheMismatch(AssertionError):
    """A kept tree differs from a fresh parse of its text (check mode)."""


def shape(node: Any) -> Any:
    """The tree as plain values: each node's type and its children's shapes (a leaf's children are its
    values: names, placeholders, indexes), each value as its type and ``repr``."""
    if isinstance(node, Node):
        return (type(node).__name__, tuple(shape(child) for child in node.children or []))
    return (type(node).__name__, repr(node))


def _parse(expression: str) -> Any:
    return _installed["make"](UpdateExpressionParser, expression)


_kept = functools.lru_cache(maxsize=1024)(_parse)


def make(cls: Any, expression: Any) -> Any:
    """``UpdateExpressionParser.make``: the tree kept for ``expression`` (a ``str``), parsed on first use."""
    if cls is not UpdateExpressionParser or type(expression) is not str:
        return _installed["make"](cls, expression)
    tree = _kept(expression)
    if os.environ.get("TUNING_GOVERNOR_MOTO_SPEED_CHECK") == "1":
        fresh = _installed["make"](cls, expression)
        if shape(fresh) != shape(tree):
            raise ParseCacheMismatch(f"UpdateExpression {expression!r}: the kept tree differs from a fresh parse")
    return tree


def install() -> None:
    if not _installed:
        _installed["make"] = UpdateExpressionParser.__dict__["make"].__func__  # moto's, unbound
        UpdateExpressionParser.make = classmethod(make)
        _kept.cache_clear()


def uninstall() -> None:
    """Put moto's parser back (and forget the kept trees)."""
    if _installed:
        UpdateExpressionParser.make = classmethod(_installed["make"])
        _installed.clear()
        _kept.cache_clear()


def installed() -> bool:
    return bool(_installed)
