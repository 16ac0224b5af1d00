"""ClassAd trees and values back to text, in HTCondor's canonical spelling.

The compact form is the one ``repr(classad2.ClassAd)`` prints: binary
operators with one space each side, ``a ? b : c``, ``a ?: b``, unary operators
as `` -x`` (HTCondor puts a space before them), lists ``{ 1,2 }``, records
``[ a = 1; b = 2 ]``, empty ones ``{  }``/``[  ]``, function arguments
``f(a,b)``, reals as ``1.000000000000000E+00``, strings escaped with octal
``\\ooo`` for bytes outside printable ASCII.

Deliberate differences, so that ``parse_expr(unparse(t)) == t`` holds (except for an
infinite or NaN real literal, which prints as ``real("INF")``, a function call when read
back, exactly as in HTCondor; it evaluates to the same real):

- A real whose 16-digit form would not read back the same float is printed
  with 17 digits (HTCondor loses the last bit there).
- ``UnaryOp("-", <non-negative number literal>)`` prints as `` - 5`` (HTCondor:
  `` -5``, which reads back as the literal ``-5``).
- An integer literal selected from (``1 .a``) keeps a space before the dot.
- A selected name that needs quotes is quoted (``x.'a b'``); HTCondor writes
  it bare after the dot (``x.a b``), which does not read back.
- Trees built by hand (not by the parser) get parentheses where the
  precedence would otherwise change their meaning, and function names that
  are not identifiers are quoted.

The old form (``unparse_old``, ``printOld`` in classad2) writes strings without
escapes except ``\\"``, reals as ``%.16G`` and ``=?=``/``=!=`` for is/isnt.

The pretty form (``pretty_expr``, classad2's ``str(ExprTree)``) lays nested records
and lists out on indented lines of their own.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable
from typing import Any

from .ast import (
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
from .values import AbsTime, RelTime, RelTimeLiteral, Value

__all__ = [
    "format_abstime",
    "format_real",
    "format_reltime",
    "pretty_expr",
    "quote",
    "quote_name",
    "unparse",
    "unparse_ad",
    "unparse_old",
    "unparse_old_expr",
    "unparse_value",
    "unquote",
]

# ---------------------------------------------------------------- scalars

_ESCAPE_BYTE = {7: "\\a", 8: "\\b", 12: "\\f", 10: "\\n", 13: "\\r", 9: "\\t", 11: "\\v", 92: "\\\\"}
# str.translate table for ASCII text; the delimiter is added per call.
_ASCII_TABLE: dict[int, str] = {}
for _c in range(128):
    if _c in _ESCAPE_BYTE:
        _ASCII_TABLE[_c] = _ESCAPE_BYTE[_c]
    elif _c < 0x20 or _c == 0x7F:
        _ASCII_TABLE[_c] = f"\\{_c:03o}"
_STR_TABLE = dict(_ASCII_TABLE)
_STR_TABLE[ord('"')] = '\\"'
_NAME_TABLE = dict(_ASCII_TABLE)
_NAME_TABLE[ord("'")] = "\\'"
_PLAIN = re.compile(r'[ !#-\[\]-~]*\Z')  # printable ASCII but " and \


def _escape(s: str, table: dict[int, str], delim: str) -> str:
    if s.isascii():
        return s.translate(table)
    out = []
    try:
        data = s.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that is not an escaped byte
        data = s.encode("utf-8", "surrogatepass")
    for b in data:
        if b >= 0x80:
            out.append(f"\\{b:03o}")
        elif b == ord(delim):
            out.append("\\" + delim)
        else:
            out.append(table.get(b) or chr(b))
    return "".join(out)


def quote(s: str) -> str:
    """``s`` as a ClassAd string literal, as ``classad2.quote`` writes it."""
    if _PLAIN.match(s):
        return f'"{s}"'
    return '"' + _escape(s, _STR_TABLE, '"') + '"'


def unquote(s: str) -> str:
    """The value of the string literal ``s``; ClassAdSyntaxError unless ``s`` is exactly one."""
    # lazy: the lexer compiles its patterns (~2 ms); quote() alone, what commands import, never needs it
    from .lexer import syntax_error, tokenize

    toks = tokenize(s)
    if len(toks) != 2 or toks[0][0] != "str":
        bad = toks[0] if toks[0][0] != "str" else toks[1]
        raise syntax_error("expected a single string literal", s, bad[2])
    return toks[0][1]


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_RESERVED = frozenset(["error", "false", "is", "isnt", "parent", "true", "undefined"])


def quote_name(name: str) -> str:
    """An attribute name as written in an expression: bare if it can be, else ``'quoted'``.

    HTCondor also quotes ``parent`` (``'PARENT'.x``), and so do we.
    """
    if _IDENT.match(name) and name.lower() not in _RESERVED:
        return name
    return "'" + _escape(name, _NAME_TABLE, "'") + "'"


def format_real(x: float) -> str:
    """HTCondor's ``%1.15E`` form; 17 digits where 16 would not read back the same float."""
    if x == 0.0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    if x != x:
        return 'real("NaN")'
    if x in (math.inf, -math.inf):
        return 'real("INF")' if x > 0 else 'real("-INF")'
    s = f"{x:.15E}"
    if float(s) != x:
        s = f"{x:.16E}"
    return s


def format_real_old(x: float) -> str:
    """Old-format reals: ``%.16G`` with ``.0`` added when it would look like an integer."""
    if x == 0.0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    if x != x:
        return 'real("NaN")'
    if x in (math.inf, -math.inf):
        return 'real("INF")' if x > 0 else 'real("-INF")'
    s = f"{x:.16G}"
    if "." not in s and "E" not in s:
        s += ".0"
    return s


def format_abstime(t: AbsTime) -> str:
    """``absTime("2020-01-01T00:00:00-00:00")``; a zero offset prints as -00:00, as HTCondor does."""
    off = int(t.offset)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(int(t.secs) + off))
    sign = "+" if off > 0 else "-"
    off = abs(off)
    return f'absTime("{stamp}{sign}{off // 3600:02d}:{(off // 60) % 60:02d}")'


def _c_int(x: float) -> int:
    """C's ``(int)`` of a double on x86: out of range (or NaN) gives INT_MIN."""
    if x != x or not -2147483649.0 < x < 2147483648.0:
        return -2147483648
    return int(x)


def _c_divmod(a: int, b: int) -> tuple[int, int]:
    """C's ``/`` and ``%`` (truncating toward zero)."""
    q = abs(a) // b
    q = q if a >= 0 else -q
    return q, a - q * b


def _format_reltime_value(secs: float) -> str:
    """A run-time relative time as HTCondor prints it: whole seconds through C ``int``
    (so 2**31 and beyond come out as INT_MIN's garbage, exactly as HTCondor's do)."""
    n = _c_int(secs)
    sign = ""
    if n < 0:
        sign = "-"
        n = _c_int(-float(n))
    whole = n
    days, hrs = _c_divmod(whole, 86400)
    hrs, mins = _c_divmod(hrs, 3600)
    mins, sec = _c_divmod(mins, 60)
    if days:
        body = f"{days}+{hrs:02d}:{mins:02d}:{sec:02d}"
    elif hrs:
        body = f"{hrs:02d}:{mins:02d}:{sec:02d}"
    elif mins:
        body = f"{mins:02d}:{sec:02d}"
    else:
        body = f"{sec:02d}"
    return f'relTime("{sign}{body}")'


def format_reltime(t: RelTime) -> str:
    """``relTime("1+02:03:04")``: days+hh:mm:ss with leading parts dropped when zero.

    A parsed ``relTime("...")`` literal keeps its fraction of a second; a relative
    time computed at run time prints whole seconds, as in HTCondor.
    """
    if type(t) is not RelTimeLiteral:
        return _format_reltime_value(float(t.secs))
    secs = float(t.secs)
    sign = ""
    if secs < 0:
        sign, secs = "-", -secs
    frac = secs - math.floor(secs)
    whole = int(secs)
    days, rest = divmod(whole, 86400)
    hrs, rest = divmod(rest, 3600)
    mins, s = divmod(rest, 60)
    # C's %02g; Python's "g" format spec has the same rules
    sec = f"{s:02d}" if frac == 0 else format(s + frac, "02g")
    if days:
        body = f"{days}+{hrs:02d}:{mins:02d}:{sec}"
    elif hrs:
        body = f"{hrs:02d}:{mins:02d}:{sec}"
    elif mins:
        body = f"{mins:02d}:{sec}"
    else:
        body = sec
    return f'relTime("{sign}{body}")'


# ---------------------------------------------------------------- trees

# Printing levels: a child whose level is below what its place needs gets
# parentheses.  The parser always yields Paren nodes where they are needed,
# so parsed trees never get extra ones.
_BINPREC = {
    "||": 1, "&&": 2, "|": 3, "^": 4, "&": 5,
    "==": 6, "!=": 6, "=?=": 6, "=!=": 6,
    "<": 7, "<=": 7, ">": 7, ">=": 7,
    "<<": 8, ">>": 8, ">>>": 8,
    "+": 9, "-": 9,
    "*": 10, "/": 10, "%": 10,
}
_L_UNARY = 11
_L_ELVIS = 12
_L_POSTFIX = 13
_L_PRIMARY = 14

_NEW_OPS = {op: f" {op} " for op in _BINPREC}
_NEW_OPS["=?="] = " is "
_NEW_OPS["=!="] = " isnt "
_OLD_OPS = {op: f" {op} " for op in _BINPREC}


def _level(n: Node) -> int:
    t = type(n)
    if t is BinaryOp:
        return _BINPREC.get(n.op, 1)  # type: ignore[attr-defined]
    if t is Conditional:
        return 0 if n.then is not None else _L_ELVIS  # type: ignore[attr-defined]
    if t is UnaryOp:
        return _L_UNARY
    if t is Subscript or (t is AttrRef and n.base is not None):  # type: ignore[attr-defined]
        return _L_POSTFIX
    return _L_PRIMARY  # negative literals too: "-1" reads back as one wherever it stands


class _Unparser:
    __slots__ = ("old", "ops", "real", "string", "name")

    def __init__(self, old: bool) -> None:
        self.old = old
        self.ops = _OLD_OPS if old else _NEW_OPS
        self.real = format_real_old if old else format_real
        self.string = _old_quote if old else quote
        self.name = _old_quote_name if old else quote_name

    def sub(self, n: Node, need: int, out: list[str]) -> None:
        if _level(n) < need:
            out.append("(")
            self.node(n, out)
            out.append(")")
        else:
            self.node(n, out)

    def node(self, n: Node, out: list[str]) -> None:
        t = type(n)
        if t is Literal:
            out.append(self.literal(n.value))  # type: ignore[attr-defined]
        elif t is AttrRef:
            base = n.base  # type: ignore[attr-defined]
            if base is not None:
                self.sub(base, _L_POSTFIX, out)
                if type(base) is Literal and type(base.value) is int:  # type: ignore[attr-defined]
                    out.append(" ")  # "1.a" would lex as a bad number
                out.append(".")
            elif n.absolute:  # type: ignore[attr-defined]
                out.append(".")
            name = n.name  # type: ignore[attr-defined]
            if base is not None and name.lower() == "parent":
                out.append(name)  # after a dot HTCondor writes it bare, and it reads back
            else:
                out.append(self.name(name))
        elif t is BinaryOp:
            self.binary(n, out)  # type: ignore[arg-type]
        elif t is Paren:
            out.append("(")
            self.node(n.expr, out)  # type: ignore[attr-defined]
            out.append(")")
        elif t is UnaryOp:
            op = n.op  # type: ignore[attr-defined]
            operand = n.operand  # type: ignore[attr-defined]
            if op == "-":
                inner: list[str] = []
                self.sub(operand, _L_UNARY, inner)
                text = "".join(inner)
                # " -5" (or " -5 ?: x") would read back with the literal -5
                out.append(" - " if text[:1].isdigit() else " -")
                out.append(text)
            else:
                out.append(" " + op)
                self.sub(operand, _L_UNARY, out)
        elif t is Conditional:
            if n.then is None:  # type: ignore[attr-defined]
                self.sub(n.cond, _L_POSTFIX, out)  # type: ignore[attr-defined]
                out.append(" ?: ")
                self.sub(n.else_, _L_ELVIS, out)  # type: ignore[attr-defined]
            else:
                self.sub(n.cond, 1, out)  # type: ignore[attr-defined]
                out.append(" ? ")
                self.node(n.then, out)  # type: ignore[attr-defined]
                out.append(" : ")
                self.node(n.else_, out)  # type: ignore[attr-defined]
        elif t is Subscript:
            self.sub(n.base, _L_POSTFIX, out)  # type: ignore[attr-defined]
            out.append("[")
            self.node(n.index, out)  # type: ignore[attr-defined]
            out.append("]")
        elif t is FuncCall:
            name = n.name  # type: ignore[attr-defined]
            out.append(name if _IDENT.match(name) else quote_name(name))
            out.append("(")
            first = True
            for a in n.args:  # type: ignore[attr-defined]
                if not first:
                    out.append(",")
                first = False
                self.node(a, out)
            out.append(")")
        elif t is ListExpr:
            out.append("{ ")
            first = True
            for a in n.items:  # type: ignore[attr-defined]
                if not first:
                    out.append(",")
                first = False
                self.node(a, out)
            out.append(" }")
        elif t is AdExpr:
            self.record(n.attrs, out)  # type: ignore[attr-defined]
        else:
            raise TypeError(f"cannot unparse {type(n).__name__}")

    def binary(self, n: BinaryOp, out: list[str]) -> None:
        # Walk the left spine iteratively: long chains (a || b || c ...) are
        # common in generated expressions and would otherwise recurse deeply.
        spine: list[BinaryOp] = []
        cur: Node = n
        while type(cur) is BinaryOp:
            spine.append(cur)  # type: ignore[arg-type]
            left = cur.left  # type: ignore[attr-defined]
            if type(left) is not BinaryOp or _BINPREC.get(left.op, 1) < _BINPREC.get(cur.op, 1):  # type: ignore[attr-defined]
                break
            cur = left
        bottom = spine[-1]
        self.sub(bottom.left, _BINPREC.get(bottom.op, 1), out)
        ops = self.ops
        for b in reversed(spine):
            out.append(ops.get(b.op) or f" {b.op} ")
            self.sub(b.right, _BINPREC.get(b.op, 1) + 1, out)

    def record(self, attrs: Iterable[tuple[str, Any]], out: list[str]) -> None:
        out.append("[ ")
        first = True
        for name, value in attrs:
            if not first:
                out.append("; ")
            first = False
            out.append(self.name(name))
            out.append(" = ")
            if isinstance(value, Node):
                self.node(value, out)
            else:
                out.append(self.value(value))
        out.append(" ]")

    def literal(self, v: Any) -> str:
        t = type(v)
        if t is int:
            return str(v)
        if t is str:
            return self.string(v)
        if t is bool:
            return "true" if v else "false"
        if t is float:
            return self.real(v)
        if v is Value.Undefined:
            return "undefined"
        if v is Value.Error:
            return "error"
        return self.value(v)

    def value(self, v: Any) -> str:
        t = type(v)
        if t is int:
            return str(v)
        if t is bool:
            return "true" if v else "false"
        if t is float:
            return self.real(v)
        if t is str:
            return self.string(v)
        if v is Value.Undefined:
            return "undefined"
        if v is Value.Error:
            return "error"
        if t is list or t is tuple:
            return "{ " + ",".join(self.value(x) for x in v) + " }"
        if t is AbsTime:
            return format_abstime(v)
        if t is RelTime or t is RelTimeLiteral:
            return format_reltime(v)
        if isinstance(v, Node):
            out: list[str] = []
            self.node(v, out)
            return "".join(out)
        if hasattr(v, "unparse"):
            return v.unparse()
        raise TypeError(f"not a ClassAd value: {v!r}")


def _old_quote(s: str) -> str:
    return '"' + s.replace('"', '\\"') + '"'


def _old_quote_name(name: str) -> str:
    if _IDENT.match(name) and name.lower() not in _RESERVED:
        return name
    return "'" + name.replace("'", "\\'") + "'"


_NEW = _Unparser(False)
_OLD = _Unparser(True)


def unparse(node: Node) -> str:
    """Canonical text of an expression tree; it always parses back to an equal tree."""
    t = type(node)
    if t is Literal:
        return _NEW.literal(node.value)  # type: ignore[attr-defined]
    if t is AttrRef and node.base is None and not node.absolute:  # type: ignore[attr-defined]
        return quote_name(node.name)  # type: ignore[attr-defined]
    out: list[str] = []
    _NEW.node(node, out)
    return "".join(out)


def unparse_ad(pairs: Iterable[tuple[str, Any]]) -> str:
    """A record in the compact new form ``[ a = 1; b = 2 ]`` (values may be trees or values)."""
    out: list[str] = []
    _NEW.record(pairs, out)
    return "".join(out)


def unparse_old(pairs: Iterable[tuple[str, Any]]) -> str:
    """The old form: one ``name = expr`` line per attribute, each ending in a newline."""
    out: list[str] = []
    u = _OLD
    for name, value in pairs:
        out.append(u.name(name))
        out.append(" = ")
        if isinstance(value, Node):
            u.node(value, out)
        else:
            out.append(u.value(value))
        out.append("\n")
    return "".join(out)


def unparse_old_expr(node: Node) -> str:
    """One expression in old-format spelling (the right-hand side of an old-format line)."""
    out: list[str] = []
    _OLD.node(node, out)
    return "".join(out)


class _PrettyUnparser(_Unparser):
    """The compact unparser with records and lists laid out on indented lines."""

    __slots__ = ("level",)

    AD_INDENT = 4
    LIST_INDENT = 3

    def __init__(self) -> None:
        super().__init__(False)
        self.level = 0

    def node(self, n: Node, out: list[str]) -> None:
        t = type(n)
        if t is AdExpr:
            self.pretty_record(n.attrs, out)  # type: ignore[attr-defined]
        elif t is ListExpr:
            self.pretty_list(n.items, out)  # type: ignore[attr-defined]
        else:
            super().node(n, out)

    def pretty_record(self, attrs: tuple[tuple[str, Node], ...] | list[tuple[str, Node]], out: list[str]) -> None:
        self.level += self.AD_INDENT
        out.append("\n" + " " * self.level + "[")
        self.level += self.AD_INDENT
        last = len(attrs) - 1
        for i, (name, expr) in enumerate(attrs):
            out.append("\n" + " " * self.level + quote_name(name) + " = ")
            self.node(expr, out)
            if i != last:
                out.append("; ")
        self.level -= self.AD_INDENT
        out.append("\n" + " " * self.level + "]")
        self.level -= self.AD_INDENT

    def pretty_list(self, items: tuple[Node, ...], out: list[str]) -> None:
        self.level += self.LIST_INDENT
        out.append("\n" + " " * self.level + "{")
        self.level += self.LIST_INDENT
        last = len(items) - 1
        for i, item in enumerate(items):
            out.append("\n" + " " * self.level)
            self.node(item, out)
            if i != last:
                out.append(",")
        self.level -= self.LIST_INDENT
        out.append("\n" + " " * self.level + "}")
        self.level -= self.LIST_INDENT


def pretty_expr(node: Node) -> str:
    """One expression in the indented form classad2's ``str(ExprTree)`` prints."""
    out: list[str] = []
    _PrettyUnparser().node(node, out)
    return "".join(out)


def unparse_value(v: Any) -> str:
    """Text of a runtime value; a record value is printed by its own ``unparse()``."""
    return _NEW.value(v)

