"""Partial evaluation: ``ClassAd.flatten``, and the expression tree that stands for a value.

Apart from the evaluator because nothing the evaluator runs calls it: it sits
on top of :mod:`roost.classad.evaluate` (and of the operators), which it calls
for every part of an expression that has a value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roost.classad import values as _values
from roost.classad.ast import (
    AdExpr,
    AttrRef,
    BinaryOp,
    Conditional,
    FuncCall,
    ListExpr,
    Literal,
    Node,
    Paren,
    Subscript,
    UnaryOp,
)
from roost.classad.codegen import functions
from roost.classad.errors import EvaluationFailed
from roost.classad.evaluate import _top, evaluate
from roost.classad.operators import _cond, binary, unary
from roost.classad.values import RelTimeLiteral, Value

if TYPE_CHECKING:  # the class itself is values.RECORD_CLASS at run time
    from roost.classad.classad import ClassAd


def _value_node(v: Any) -> Node:
    """An expression tree standing for a runtime value."""
    if isinstance(v, _values.RECORD_CLASS):
        return AdExpr(tuple((v._names[k], n) for k, n in v._attrs.items()))
    if type(v) is list:
        return ListExpr(tuple(_value_node(x) for x in v))
    return Literal(v)


def _flatten(ad: ClassAd, node: Node, seen: set[int]) -> tuple[bool, Any]:
    """Partial evaluation: (True, value) when ``node`` has a value in ``ad``, else (False, tree).

    Follows HTCondor's Flatten for the common shapes: defined attributes whose
    value is computable are replaced by it; undefined ones stay; constant parts
    of ``+``/``*`` chains are folded and put first; ``&&``/``||`` with one known
    side simplify where the result no longer depends on the other.
    """
    t = type(node)
    if t is Literal:
        v = node.value
        return True, (float(v.secs) if type(v) is RelTimeLiteral else v)  # as evaluate.gen does
    if t is AttrRef:
        base = node.base
        if base is None or (
            type(base) is AttrRef and base.base is None and not base.absolute
            and base.lname in ("my", "self") and base.lname not in ad._attrs
        ):
            # a name of this ad: its expression flattened (a missing one stays)
            found = (_top(ad) if node.absolute else ad)._attrs.get(node.lname)
            if found is None or type(found) is AdExpr:
                return False, node
            if id(found) in seen:  # a reference cycle: HTCondor's Flatten fails
                raise EvaluationFailed("reference cycle")
            seen.add(id(found))
            ok, v = _flatten(ad, found, seen)
            seen.discard(id(found))
            return (True, v) if ok and not isinstance(v, _values.RECORD_CLASS) and type(v) is not list else (False, node)
        # a selection from an expression: evaluated; a record, list or UNDEFINED keeps it
        v = evaluate(node, ad)
        if v is Value.Undefined or type(v) is list or isinstance(v, _values.RECORD_CLASS):
            return False, node
        return True, v
    if t is Subscript:
        okb, bv = _flatten(ad, node.base, seen)
        oki, iv = _flatten(ad, node.index, seen)
        if okb and oki:
            return True, evaluate(Subscript(_value_node(bv), _value_node(iv)), ad)
        return False, Subscript(
            _value_node(bv) if okb else bv, _value_node(iv) if oki else iv
        )
    if t is ListExpr:
        items = []
        for x in node.items:
            ok, v = _flatten(ad, x, seen)
            items.append(_value_node(v) if ok else v)
        return False, ListExpr(tuple(items))
    if t is AdExpr:
        # flattened in the record's own scope (HTCondor sets curAd to it)
        inner = _values.RECORD_CLASS._from_pairs(node.attrs, None)
        pairs = []
        for name, x in node.attrs:
            ok, v = _flatten(inner, x, seen)
            pairs.append((name, _value_node(v) if ok else v))
        return False, AdExpr(tuple(pairs))
    if t is Paren:
        ok, v = _flatten(ad, node.expr, seen)
        return (True, v) if ok else (False, Paren(v))
    if t is UnaryOp:
        ok, v = _flatten(ad, node.operand, seen)
        return (True, unary(node.op, v)) if ok else (False, UnaryOp(node.op, v))
    if t is BinaryOp:
        op = node.op
        if op in ("+", "*", "&", "|", "^"):  # commutative and associative: constants folded first
            vals: list[Any] = []
            trees: list[Node] = []
            stack = [node]
            order: list[Node] = []
            while stack:  # the operands of a same-operator chain, left to right
                n = stack.pop()
                if type(n) is BinaryOp and n.op == op:
                    stack.append(n.right)
                    stack.append(n.left)
                else:
                    order.append(n)
            for n in order:
                ok, v = _flatten(ad, n, seen)
                (vals if ok else trees).append(v if ok else v)
            acc = None
            for v in vals:
                acc = v if acc is None else binary(op, acc, v)
            if not trees:
                return True, acc
            tree = trees[0]
            for tr in trees[1:]:
                tree = BinaryOp(op, tree, tr)
            if acc is None:
                return False, tree
            return False, BinaryOp(op, _value_node(acc), tree)
        okl, lv = _flatten(ad, node.left, seen)
        okr, rv = _flatten(ad, node.right, seen)
        if okl and okr:
            return True, binary(op, lv, rv)
        if op in ("&&", "||") and okl != okr:
            known = lv if okl else rv
            probe = binary(op, known, Value.Undefined) if okl else binary(op, Value.Undefined, known)
            if type(probe) is bool:
                return True, probe
            if op == "&&" and known is True:
                return False, (rv if okl else lv)
            if not okl:  # HTCondor puts the known operand first
                return False, BinaryOp(op, _value_node(rv), lv)
        left = _value_node(lv) if okl else lv
        right = _value_node(rv) if okr else rv
        return False, BinaryOp(op, left, right)
    if t is Conditional:
        okc, c = _flatten(ad, node.cond, seen)
        if node.then is None:  # a ?: b folds only when both sides have values
            oke, e = _flatten(ad, node.else_, seen)
            if okc and oke:
                return True, (e if c is Value.Undefined else c)
            return False, Conditional(
                _value_node(c) if okc else c, None, _value_node(e) if oke else e
            )
        if okc and c is Value.Undefined:
            okc, c = False, node.cond  # HTCondor keeps an UNDEFINED selector as written
        if okc:
            b = _cond(c) if type(c) is not bool else c
            if b is True:
                return _flatten(ad, node.then, seen)
            if b is False:
                return _flatten(ad, node.else_, seen)
            return True, b
        parts = []
        for part in (node.then, node.else_):
            if part is None:
                parts.append(None)
                continue
            ok, v = _flatten(ad, part, seen)
            parts.append(_value_node(v) if ok else v)
        return False, Conditional(c, parts[0], parts[1])
    if t is FuncCall:
        # lazy: the built-ins' module, kept out of start-up as codegen.functions() does
        from roost.classad.functions import SPECIAL_FORMS

        if node.lname not in SPECIAL_FORMS and node.lname not in functions():
            return True, Value.Error  # an unknown function flattens to ERROR, as in HTCondor
        args = []
        all_values = True
        for x in node.args:
            ok, v = _flatten(ad, x, seen)
            all_values = all_values and ok
            args.append(_value_node(v) if ok else v)
        call = FuncCall(node.name, tuple(args))
        if all_values:
            return True, evaluate(call, ad)
        return False, call
    return False, node
