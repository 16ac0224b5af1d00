"""The top-level ``&&`` clauses of an expression.

Its own module because two parts read Requirements clause by clause: ``q -analyze``
(:mod:`roost.core.analyze`) counts each clause across the pool, and the matchmaker
(:mod:`roost.core.thresholds`) finds the clauses that only compare a slot's resources
with a number. Neither imports the other.
"""

from __future__ import annotations

from roost.classad.ast import BinaryOp, Node, Paren


def unparen(node: Node) -> Node:
    """``node`` with any parentheses around it looked through."""
    while type(node) is Paren:
        node = node.expr  # type: ignore[attr-defined]
    return node


def conjuncts(node: Node) -> list[Node]:
    """The top-level ``&&`` clauses of ``node`` (parentheses around it looked through)."""
    node = unparen(node)
    if type(node) is BinaryOp and node.op == "&&":
        return conjuncts(node.left) + conjuncts(node.right)
    return [node]


__all__ = ["conjuncts", "unparen"]
