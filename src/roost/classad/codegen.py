"""The ClassAd compiler's code generator: an expression tree to the source of one Python function.

:class:`_Gen` walks a tree once and writes straight-line Python with the fast
paths inline (int and string operands, ``TARGET.x``/``MY.x`` read from the ads'
literal dicts, ``&&``/``||`` short circuits) and calls, by name, to the helpers
of :mod:`roost.classad.operators` and :mod:`roost.classad.evaluate` for every
rare case. Constants become parameters of the function, so expressions that
differ only in constants share one generated text. Operator trees over
literals are folded here (:func:`_fold_constant`).

Separate from the evaluator because it only writes text: it runs nothing.
:func:`roost.classad.evaluate.compile_node` turns the text into a function in
the helpers' namespace, and hands itself to :class:`_Gen` for the sub-expressions
nested too deep to inline.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

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
from roost.classad.errors import EvaluationFailed
from roost.classad.operators import (
    _BINARY_HELPERS,
    _BOOLISH_OPS,
    _UNARY_HELPERS,
    _fold,
    binary,
    unary,
)
from roost.classad.values import INT64_MAX, INT64_MIN, RelTimeLiteral, Value

UNDEFINED = Value.Undefined
ERROR = Value.Error

FAST_DEPTH = 60
"""Attribute-reference depth above which evaluation switches to the precise (stack) mode."""

_MISS = object()  # "not in the dict" marker

_functions_cache: dict[str, Callable[..., Any]] | None = None


def functions() -> dict[str, Callable[..., Any]]:
    """The table of ordinary built-ins (:mod:`roost.classad.functions`), loaded on first use."""
    global _functions_cache
    if _functions_cache is None:
        # lazy: the built-ins (~10 ms) load with the first call compiled, not with the library
        from roost.classad.functions import FUNCTIONS

        _functions_cache = FUNCTIONS
    return _functions_cache


_INDENT_LIMIT = 24  # deeper sub-expressions become functions of their own


class _Gen:
    """Generates the source of one function for one expression tree.

    ``compile`` is the compiler itself (:func:`roost.classad.evaluate.compile_node`),
    for sub-expressions nested deeper than :data:`_INDENT_LIMIT`.
    """

    def __init__(self, compile: Callable[[Node], Callable[..., Any]]) -> None:
        self.compile = compile
        self.lines: list[str] = []
        self.consts: dict[str, Any] = {}
        self.n = 0
        self.uses_l = False
        self.uses_t = False
        self.uses_m = False
        self.boolish: set[str] = set()  # names whose value is a bool, UNDEFINED or ERROR
        self.memo: dict[int, Any] = {}  # _fold_constant results by node id

    def tmp(self) -> str:
        self.n += 1
        return f"v{self.n}"

    def const(self, value: Any) -> str:
        name = f"c{len(self.consts)}"
        if type(value) is str and len(value) <= 64:
            value = sys.intern(value)  # ads intern short strings too: == is then `is`
        self.consts[name] = value
        return name

    def emit(self, ind: int, line: str) -> None:
        self.lines.append("    " * ind + line)

    def literal(self, v: Any) -> str:
        # Numbers and strings become parameters of the generated code, so that
        # expressions differing only in constants share one compiled code object.
        if type(v) is bool:
            return repr(v)
        if v is UNDEFINED:
            return "_U"
        if v is ERROR:
            return "_E"
        return self.const(v)

    # Each gen_* emits statements at indent ``ind`` and returns an expression
    # (a name or a constant) holding the node's value.
    def gen(self, node: Node, ind: int) -> str:
        t = type(node)
        if t is Literal:
            v = node.value
            if type(v) is RelTimeLiteral:
                # HTCondor quirk: a relative-time *literal* (what the parser makes of
                # relTime("1:00")) evaluates to a real, the seconds; computed relative
                # times (relTime(60)) stay relative times.
                v = float(v.secs)
            return self.literal(v)
        if t is Paren:
            return self.gen(node.expr, ind)
        folded = _fold_constant(node, self.memo)
        if folded is not _MISS:
            return self.literal(folded)
        if ind > _INDENT_LIMIT and t is not AttrRef:
            f = node._compiled or self.compile(node)
            r = self.tmp()
            self.emit(ind, f"{r} = {self.const(f)}(cur, tgt, d)")
            return r
        if t is AttrRef:
            return self.gen_attr(node, ind)
        if t is BinaryOp:
            # Walk down the left operands iteratively: parsers build long
            # left-associative chains (a || b || c ...) that would otherwise
            # recurse once per operand.
            spine = [node]
            n = node.left
            while (
                type(n) is BinaryOp
                and _fold_constant(n, self.memo) is _MISS
                and len(spine) < 100000
            ):
                spine.append(n)
                n = n.left
            acc = self.gen(n, ind)
            for s in reversed(spine):
                acc = self.gen_binary(s, ind, acc)
            return acc
        if t is UnaryOp:
            a = self.gen(node.operand, ind)
            r = self.tmp()
            if node.op == "-":
                self.emit(ind, f"{r} = -{a} if _type({a}) is _float else _neg({a})")
            else:
                self.emit(ind, f"{r} = {_UNARY_HELPERS[node.op]}({a})")
            return r
        if t is Conditional:
            return self.gen_cond(node, ind)
        if t is FuncCall:
            return self.gen_call(node, ind)
        if t is ListExpr:
            items = [self.gen(item, ind) for item in node.items]
            r = self.tmp()
            self.emit(ind, f"{r} = [{', '.join(items)}]")
            return r
        if t is AdExpr:
            r = self.tmp()
            self.emit(ind, f"{r} = _make_ad({self.const(node)}, cur)")
            return r
        if t is Subscript:
            a = self.gen(node.base, ind)
            b = self.gen(node.index, ind)
            r = self.tmp()
            self.emit(ind, f"{r} = _subscript({a}, {b}, cur, tgt, d)")
            return r
        raise TypeError(f"cannot evaluate node {node!r}")

    def gen_attr(self, node: AttrRef, ind: int) -> str:
        k = repr(node.lname)
        r = self.tmp()
        if node.absolute:
            self.emit(ind, f"{r} = _absref(cur, tgt, {k}, d)")
            return r
        base = node.base
        while type(base) is Paren:
            base = base.expr
        if base is None:
            # literal in this ad / other expression in this ad / the scope rules
            self.uses_l = True
            self.emit(ind, f"if {k} in L: {r} = L[{k}]")
            self.emit(ind, f"elif {k} in A:")
            self.emit(ind + 1, f"{r} = A[{k}]")
            self.emit(
                ind + 1,
                f"{r} = ({r}._compiled or _compile({r}))(cur, tgt, d + 1) "
                f"if d < {FAST_DEPTH} else _deref_slow({r}, cur, tgt, d)",
            )
            self.emit(ind, f"else: {r} = _bare(cur, tgt, {k}, d)")
            return r
        if type(base) is AttrRef and base.base is None and not base.absolute:
            if base.lname == "target":
                self.uses_t = True
                self.emit(ind, f"if {k} in TL: {r} = TL[{k}]")
                # an expression in the target: evaluated there, with this ad as its target
                self.emit(ind, f"elif TX and {k} in TA:")
                self.emit(ind + 1, f"{r} = TA[{k}]")
                self.emit(
                    ind + 1,
                    f"{r} = ({r}._compiled or _compile({r}))(T, cur, d + 1) "
                    f"if d < {FAST_DEPTH} else _deref_slow({r}, T, cur, d)",
                )
                self.emit(ind, f"else: {r} = _sel(T, {k}, cur, tgt, d)")
                return r
            if base.lname == "my":
                self.uses_m = True
                self.emit(ind, f"if {k} in ML: {r} = ML[{k}]")
                self.emit(ind, f"elif M is cur and {k} in cur._attrs:")
                self.emit(ind + 1, f"{r} = cur._attrs[{k}]")
                self.emit(
                    ind + 1,
                    f"{r} = ({r}._compiled or _compile({r}))(cur, tgt, d + 1) "
                    f"if d < {FAST_DEPTH} else _deref_slow({r}, cur, tgt, d)",
                )
                self.emit(ind, f"else: {r} = _sel(M, {k}, cur, tgt, d)")
                return r
        b = self.gen(base, ind)
        self.emit(ind, f"{r} = _sel({b}, {k}, cur, tgt, d)")
        return r

    def gen_binary(self, node: BinaryOp, ind: int, a: str) -> str:
        """``node`` whose left operand is already generated into ``a``."""
        op = node.op
        if op == "&&" or op == "||":
            return self.gen_logic(node, ind, a)
        rlit = _fold_constant(node.right, self.memo)
        b = self.gen(node.right, ind)
        r = self.tmp()
        helper = _BINARY_HELPERS[op]
        if op in _BOOLISH_OPS:
            self.boolish.add(r)
        if op in ("==", "!=") and type(rlit) is str:
            # attr == "literal": exact match first, then ASCII case folding (which
            # keeps the length, so a length check rules most strings out cheaply)
            lit = self.const(rlit)
            low = self.const(_fold(rlit))
            n = self.const(len(rlit))
            if rlit.isascii():
                eq = f"{a} == {lit} or (_len({a}) == {n} and {a}.lower() == {low} and {a}.isascii())"
            else:
                eq = f"{a} == {lit} or (_len({a}) == {n} and _fold({a}) == {low})"
            if op == "==":
                self.emit(ind, f"if _type({a}) is _str: {r} = {eq}")
            else:
                self.emit(ind, f"if _type({a}) is _str: {r} = not ({eq})")
            self.emit(ind, f"else: {r} = {helper}({a}, {b})")
            return r
        if op in ("<", "<=", ">", ">=", "==", "!="):
            if type(rlit) is int:
                cond = f"_type({a}) is _int"
            elif type(rlit) is float:
                cond = f"_type({a}) is _float"
            else:
                cond = f"_type({a}) is _int and _type({b}) is _int"
            self.emit(ind, f"if {cond}: {r} = {a} {op} {b}")
            self.emit(ind, f"else: {r} = {helper}({a}, {b})")
            return r
        if op in ("+", "-", "*"):
            if type(rlit) is int:
                cond = f"_type({a}) is _int"
            else:
                cond = f"_type({a}) is _int and _type({b}) is _int"
            self.emit(ind, f"if {cond}:")
            self.emit(ind + 1, f"{r} = {a} {op} {b}")
            self.emit(ind + 1, f"if not {INT64_MIN} <= {r} <= {INT64_MAX}: {r} = _wrap({r})")
            self.emit(ind, f"else: {r} = {helper}({a}, {b})")
            return r
        self.emit(ind, f"{r} = {helper}({a}, {b})")
        return r

    def gen_logic(self, node: BinaryOp, ind: int, a: str) -> str:
        r = self.tmp()
        if node.op == "&&":
            stop, go, post = "False", "True", "_and_post"
        else:
            stop, go, post = "True", "False", "_or_post"
        if a != r:
            self.emit(ind, f"{r} = {a}")
        if a not in self.boolish:
            # numbers count as booleans, strings and lists are errors
            self.emit(ind, f"if {r} is not True and {r} is not False: {r} = _logic_pre({r})")
        self.emit(ind, f"if {r} is not {stop} and {r} is not _E:")
        b = self.gen(node.right, ind + 1)
        if b in self.boolish:
            self.emit(ind + 1, f"{r} = {b} if {r} is {go} else {post}({r}, {b})")
        else:
            self.emit(ind + 1, f"if {r} is {go} and _type({b}) is _bool: {r} = {b}")
            self.emit(ind + 1, f"else: {r} = {post}({r}, {b})")
        self.boolish.add(r)
        return r

    def gen_cond(self, node: Conditional, ind: int) -> str:
        c = self.gen(node.cond, ind)
        r = self.tmp()
        if node.then is None:  # elvis
            self.emit(ind, f"{r} = {c}")
            self.emit(ind, f"if {r} is _U:")
            e = self.gen(node.else_, ind + 1)
            self.emit(ind + 1, f"{r} = {e}")
            return r
        self.emit(ind, f"{r} = {c}")
        self.emit(ind, f"if {r} is not True and {r} is not False: {r} = _cond_arms({r}, cur, tgt, d, {self.const(node)})")
        self.emit(ind, f"if {r} is True:")
        th = self.gen(node.then, ind + 1)
        self.emit(ind + 1, f"{r} = {th}")
        self.emit(ind, f"elif {r} is False:")
        el = self.gen(node.else_, ind + 1)
        self.emit(ind + 1, f"{r} = {el}")
        return r

    def gen_call(self, node: FuncCall, ind: int) -> str:
        name = node.lname
        args = node.args
        r = self.tmp()
        if name == "ifthenelse":
            if len(args) != 3:
                return "_E"
            c = self.gen(args[0], ind)
            self.emit(ind, f"{r} = {c}")
            self.emit(ind, f"if _type({r}) is not _bool: {r} = _ite_cond({r})")
            self.emit(ind, f"if {r} is True:")
            th = self.gen(args[1], ind + 1)
            self.emit(ind + 1, f"{r} = {th}")
            self.emit(ind, f"elif {r} is False:")
            el = self.gen(args[2], ind + 1)
            self.emit(ind + 1, f"{r} = {el}")
            return r
        if name == "eval":
            if len(args) != 1:
                return "_E"
            a = self.gen(args[0], ind)
            self.emit(ind, f"{r} = _fn_eval(cur, tgt, d, {a})")
            return r
        if name == "unparse":
            self.emit(ind, f"{r} = _fn_unparse(cur, {self.const(args)})")
            return r
        if name in ("evalineachcontext", "countmatches"):
            count = name == "countmatches"
            self.emit(ind, f"{r} = _fn_eval_each(cur, tgt, d, {self.const(args)}, {count})")
            return r
        if name == "unresolved":
            self.emit(ind, f"{r} = _fn_unresolved(cur, tgt, d, {self.const(args)})")
            return r
        fn = functions().get(name)
        if fn is None:
            return "_E"
        if name in _MAY_FAIL:
            fn = _failing_call(name, fn)
        vals = [self.gen(a, ind) for a in args]
        if name in _LIST_AS_TEXT:
            # These show a list argument as text; HTCondor's lists are lazy, so the
            # text is that of the list *expression* ("{ 1 + 1,x }"), see _list_text.
            n = len(args)
            for i, a in enumerate(args):
                if type(a) is Literal or (name == "join" and n <= 2 and i == n - 1):
                    continue  # join(sep, list) joins the items
                v = self.tmp()
                self.emit(ind, f"{v} = {vals[i]}")
                self.emit(ind, f"if _type({v}) is list: {v} = _list_text({v}, {self.const(a)}, cur, tgt)")
                vals[i] = v
        self.emit(ind, f"{r} = {self.const(fn)}({', '.join(vals)})")
        return r


# Built-ins for which HTCondor's Evaluate() itself fails (not ERROR) on some
# arguments: userHome with a wrong argument count, random(n <= 0), absTime(n, -1).
# The whole evaluation is then aborted (classad2 raises), see fails_evaluation.
_MAY_FAIL = frozenset(("userhome", "random", "abstime"))


def _failing_call(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` raising :class:`EvaluationFailed` where HTCondor's evaluation fails."""
    # lazy: the built-ins' module, kept out of start-up as in functions() (``fn`` came from it)
    from roost.classad.functions import fails_evaluation

    def call(*args: Any) -> Any:
        r = fn(*args)
        if r is ERROR and fails_evaluation(name, args):
            raise EvaluationFailed(f"{name}() failed to evaluate")
        return r

    return call


# Built-ins that turn a list argument into its text (all of them, for join all but
# the list of join(sep, list)/join(list)).
_LIST_AS_TEXT = frozenset((
    "strcat", "string", "toupper", "tolower", "strcmp", "stricmp", "join", "versioncmp",
    "versiongt", "versionge", "versionlt", "versionle", "versioneq", "version_in_range",
))  # fmt: skip


def _fold_constant(node: Node, memo: dict[int, Any] | None = None) -> Any:
    """The value of an operator tree over scalar literals, or _MISS (folded at compile time).

    Iterative along left operands, so long ``a || b || c ...`` chains do not
    hit Python's recursion limit; ``memo`` (by node id) keeps it linear.
    """
    if memo is None:
        memo = {}
    spine: list[Node] = []
    n = node
    while True:
        if id(n) in memo:
            v = memo[id(n)]
            break
        t = type(n)
        if t is BinaryOp:
            spine.append(n)
            n = n.left
        elif t is Paren:
            spine.append(n)
            n = n.expr
        elif t is UnaryOp:
            spine.append(n)
            n = n.operand
        else:
            if t is Literal and type(n.value) in (int, float, str, bool, Value):
                v = n.value
            else:
                v = _MISS
            memo[id(n)] = v
            break
    for s in reversed(spine):
        if v is not _MISS:
            t = type(s)
            if t is BinaryOp:
                b = _fold_constant(s.right, memo)
                v = _MISS if b is _MISS else binary(s.op, v, b)
            elif t is UnaryOp:
                v = unary(s.op, v)
        memo[id(s)] = v
    return v
