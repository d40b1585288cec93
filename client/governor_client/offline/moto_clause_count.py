"""moto's check that an UpdateExpression has at most one ADD, one REMOVE and one SET clause, made linear.

moto's ``ActionCountValidator`` visits the parsed expression bottom up and, at every ``UpdateExpression``
node, lists the node's ADD, REMOVE and SET clauses by walking its whole subtree (``Node.find_clauses``).
The parser nests one ``UpdateExpression`` per clause, so an UpdateItem with many clauses walked its tree
once per clause, three times over; the governor's item updates made it a fifth of an UpdateItem's time.

Here each node's count of each clause type is worked out once (the same rule as ``find_clauses``: a child
of exactly that type counts one and is not entered; an ``Expression`` or ``UpdateExpressionFunction``
child is entered), and the nodes are checked in moto's order (children first; ADD, then REMOVE, then
SET), so an expression moto refuses is refused with the same ``TooManyClauses``. The node is returned
unchanged, as moto's processor returns it. With ``TUNING_GOVERNOR_MOTO_SPEED_CHECK=1`` moto's own
traversal runs too and both outcomes are compared.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from moto.dynamodb.exceptions import TooManyClauses
from moto.dynamodb.parsing import ast_nodes as _ast_nodes
from moto.dynamodb.parsing import validators

ast_nodes: Any = _ast_nodes  # moto's AST module carries no types

_CLAUSES = (
    ("ADD", ast_nodes.UpdateExpressionAddClause),
    ("REMOVE", ast_nodes.UpdateExpressionRemoveClause),
    ("SET", ast_nodes.UpdateExpressionSetClause),
)
_ENTERED = (ast_nodes.Expression, ast_nodes.UpdateExpressionFunction)
_installed: dict[str, Callable[..., Any]] = {}


class ClauseCountMismatch(AssertionError):
    """The linear check and moto's own disagree on an expression (check mode)."""


def _count(node: Any, clause: type, memo: dict[int, int]) -> int:
    """How many clauses of type ``clause`` ``node.find_clauses([clause])`` lists."""
    known = memo.get(id(node))
    if known is not None:
        return known
    total = 0
    for child in node.children or []:
        if type(child) is clause:
            total += 1
        elif isinstance(child, _ENTERED):
            total += _count(child, clause, memo)
    memo[id(node)] = total
    return total


def _check(node: Any, memos: tuple[dict[int, int], ...]) -> None:
    if not isinstance(node, ast_nodes.Node):
        return
    for child in node.children or []:
        _check(child, memos)
    if isinstance(node, ast_nodes.UpdateExpression):
        for (name, clause), memo in zip(_CLAUSES, memos, strict=True):
            if _count(node, clause, memo) > 1:
                raise TooManyClauses(name)


def _outcome(run: Callable[[], Any]) -> str:
    try:
        run()
    except TooManyClauses as exc:
        return f"TooManyClauses: {exc}"
    return "accepted"


def traverse(self: Any, node: Any) -> Any:
    """``ActionCountValidator.traverse``: the same refusals, each subtree counted once."""
    if os.environ.get("TUNING_GOVERNOR_MOTO_SPEED_CHECK") == "1":
        slow = _outcome(lambda: _installed["traverse"](self, node))
        fast = _outcome(lambda: _check(node, ({}, {}, {})))
        if slow != fast:
            raise ClauseCountMismatch(f"ActionCountValidator: moto {slow!r}, linear {fast!r}")
    _check(node, ({}, {}, {}))
    return node


def install() -> None:
    if not _installed:
        _installed["traverse"] = validators.ActionCountValidator.traverse
        validators.ActionCountValidator.traverse = traverse


def uninstall() -> None:
    """Put moto's traversal back (the one ``ActionCountValidator`` inherits)."""
    if _installed:
        del validators.ActionCountValidator.traverse
        _installed.clear()
