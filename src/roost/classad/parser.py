"""ClassAd parser: text to :mod:`roost.classad.ast` trees, with HTCondor's grammar.

Precedence, lowest first: ``?:`` (ternary, right-assoc), ``||``, ``&&``, ``|``,
``^``, ``&``, equality (``== != =?= =!= is isnt``), relational, shifts,
additive, multiplicative, unary (``- + ! ~``), then postfix: ``.name``,
``[index]`` and, surprisingly, the elvis operator ``a ?: b``, which HTCondor
parses at postfix level (``1 + a ?: b`` is ``1 + (a ?: b)``, and
``-a ?: b`` is ``-(a ?: b)``).  Binary operators associate to the left.

Everything the parser raises is a :class:`ClassAdSyntaxError`; nesting deeper
than :data:`MAX_DEPTH` is reported as such instead of exhausting the stack.

HTCondor behaviours kept on purpose: ``parse_ad`` ignores text after the
record's closing ``]`` (as ``classad2.ClassAd(text)`` does); an old-format
line's name is the raw text before its first ``=`` and text after a complete
value is ignored; ``absTime("...")``/``relTime("...")`` with a constant string
become time literals, an invalid time string being a syntax error (a relTime
literal is a :class:`~roost.classad.values.RelTimeLiteral`, which HTCondor
evaluates as a real); ``real("INF")`` stays a function call; ``..`` is
one selection token.  Differences: roost reports an error where HTCondor's
old-format reader silently stops reading an ad, and nesting is limited to
:data:`MAX_DEPTH` levels (HTCondor: about 165 parentheses, 500 ternaries).

Speed: expression texts are cached (trees are immutable, so sharing them is
safe).  :func:`parse_ad` and :func:`parse_old_ad` split an ordinary ad at
``;`` (or newlines) with string methods and look each ``name = value`` piece
up in a cache; new values that are plain numbers or escape-free strings
become literals without the lexer.  Anything the shortcut cannot vouch for
(a piece that does not parse alone, a ``//`` comment, a backslash...) sends
the text to the full parser, so both always agree.

Size: one grammar. The whole-ad shortcuts must read every text exactly as the
recursive-descent parser they fall back to does, so they live beside it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

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
from .errors import ClassAdSyntaxError
from .lexer import Token, syntax_error, tokenize
from .values import ERROR, UNDEFINED, RelTimeLiteral

__all__ = [
    "MAX_DEPTH",
    "iter_ads",
    "parse_ad",
    "parse_expr",
    "parse_old_ad",
]

#: Deepest nesting of parentheses, lists, records and ternaries accepted.
#: HTCondor's own limit works out at about 165 parentheses.
MAX_DEPTH = 200
#: Longest run of unary operators (``- - - - 1``) accepted; HTCondor allows ~500.
MAX_UNARY = 500

_BINPREC = {
    "||": 1, "&&": 2, "|": 3, "^": 4, "&": 5,
    "==": 6, "!=": 6, "=?=": 6, "=!=": 6,
    "<": 7, "<=": 7, ">": 7, ">=": 7,
    "<<": 8, ">>": 8, ">>>": 8,
    "+": 9, "-": 9,
    "*": 10, "/": 10, "%": 10,
}
_UNARY = frozenset("-+!~")

_LIT_TRUE = Literal(True)
_LIT_FALSE = Literal(False)
_LIT_UNDEF = Literal(UNDEFINED)
_LIT_ERROR = Literal(ERROR)


def _describe(tok: Token, text: str) -> str:
    kind = tok[0]
    if kind == "end":
        return "end of input"
    if kind in ("int", "real", "str", "id", "bool", "undef", "err"):
        start = tok[2]
        snippet = text[start:start + 20].split("\n")[0]
        return repr(snippet)
    return repr(kind)


class _Parser:
    """Recursive descent over a token list; binary operators by operator precedence."""

    __slots__ = ("toks", "i", "text", "depth")

    def __init__(self, text: str, old: bool = False) -> None:
        self.text = text
        self.toks = tokenize(text, old)
        self.i = 0
        self.depth = 0

    def error(self, message: str, tok: Token | None = None) -> ClassAdSyntaxError:
        if tok is None:
            tok = self.toks[self.i]
        return syntax_error(f"{message}, found {_describe(tok, self.text)}", self.text, tok[2])

    def expect(self, kind: str, what: str) -> None:
        tok = self.toks[self.i]
        if tok[0] != kind:
            raise self.error(f"expected {what}")
        self.i += 1

    # Expression ::= Binary | Binary '?' Expression ':' Expression
    def expression(self) -> Node:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error(f"expression nested more than {MAX_DEPTH} levels deep")
        toks = self.toks
        tree = self.postfix(True)
        kind = toks[self.i][0]
        prec = _BINPREC.get(kind)
        if prec is not None:
            operands = [tree]
            ops: list[tuple[str, int]] = []
            while prec is not None:
                self.i += 1
                while ops and ops[-1][1] >= prec:
                    op = ops.pop()[0]
                    right = operands.pop()
                    operands[-1] = BinaryOp(op, operands[-1], right)
                ops.append((kind, prec))
                operands.append(self.postfix(True))
                kind = toks[self.i][0]
                prec = _BINPREC.get(kind)
            while ops:
                op = ops.pop()[0]
                right = operands.pop()
                operands[-1] = BinaryOp(op, operands[-1], right)
            tree = operands[0]
        if kind == "?":
            self.i += 1
            then = self.expression()
            self.expect(":", "':' of the ?: conditional")
            else_ = self.expression()
            tree = Conditional(tree, then, else_)
        self.depth -= 1
        return tree

    # Unary* Primary ('.' name | '[' Expression ']' | '?:' Postfix)*
    def postfix(self, allow_unary: bool) -> Node:
        toks = self.toks
        tok = toks[self.i]
        kind = tok[0]
        unary: list[str] | None = None
        if allow_unary and kind in _UNARY:
            unary = []
            while kind in _UNARY:
                unary.append(kind)
                if len(unary) > MAX_UNARY:
                    raise self.error(f"more than {MAX_UNARY} unary operators in a row")
                self.i += 1
                tok = toks[self.i]
                kind = tok[0]
        self.i += 1
        # -- primary
        if kind == "id":
            if toks[self.i][0] == "(":
                tree = self.call(tok[1])
            else:
                tree = AttrRef(tok[1])
        elif kind == "int" or kind == "real" or kind == "str":
            tree = Literal(tok[1])
        elif kind == "(":
            inner = self.expression()
            self.expect(")", "')'")
            tree = Paren(inner)
        elif kind == "bool":
            tree = _LIT_TRUE if tok[1] else _LIT_FALSE
        elif kind == "[":
            self.i -= 1
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise self.error(f"expression nested more than {MAX_DEPTH} levels deep")
            tree = AdExpr(_dedupe(self.record()))
            self.depth -= 1
        elif kind == "{":
            tree = self.exprlist()
        elif kind == ".":
            name = toks[self.i]
            if name[0] != "id":
                raise self.error("expected an attribute name after '.'", name)
            self.i += 1
            tree = AttrRef(name[1], absolute=True)
        elif kind == "undef":
            tree = _LIT_UNDEF
        elif kind == "err":
            tree = _LIT_ERROR
        else:
            self.i -= 1
            raise self.error("expected an expression", tok)
        # -- postfix operators: each one nests the tree a level deeper (a.b.c is
        # (a.b).c), and the compiler walks that nesting recursively, so a chain counts
        # against MAX_DEPTH like parentheses do
        kind = toks[self.i][0]
        outer = self.depth
        while kind == "." or kind == "[" or kind == "?:":
            self.i += 1
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise self.error(f"expression nested more than {MAX_DEPTH} levels deep", toks[self.i - 1])
            if kind == ".":
                name = toks[self.i]
                if name[0] != "id":
                    raise self.error("expected an attribute name after '.'", name)
                self.i += 1
                tree = AttrRef(name[1], base=tree)
            elif kind == "[":
                index = self.expression()
                self.expect("]", "']' closing the subscript")
                tree = Subscript(tree, index)
            else:
                tree = Conditional(tree, None, self.postfix(False))
            kind = toks[self.i][0]
        self.depth = outer
        if unary:
            for op in reversed(unary):
                tree = UnaryOp(op, tree)
        return tree

    def call(self, name: str) -> Node:
        """Arguments of ``name(``; HTCondor also accepts ``;`` between them."""
        toks = self.toks
        self.i += 1  # '('
        args: list[Node] = []
        if toks[self.i][0] != ")":
            while True:
                args.append(self.expression())
                kind = toks[self.i][0]
                if kind == "," or kind == ";":
                    self.i += 1
                elif kind == ")":
                    break
                else:
                    raise self.error("expected ',' or ')' in the argument list")
        self.i += 1
        if len(args) == 1 and type(args[0]) is Literal and type(args[0].value) is str:
            lname = name.lower()
            if lname == "abstime" or lname == "reltime":
                return self.time_literal(lname, name, args[0])
        # real("INF") & co. (how unparse writes infinite and NaN reals) stay function
        # calls, as in HTCondor: classad2 hands ad["x"] = real("INF") back as an
        # expression, while a literal such as 1e400 converts to a float.
        return FuncCall(name, tuple(args))

    def time_literal(self, lname: str, name: str, arg: Literal) -> Node:
        """``absTime("...")``/``relTime("...")`` with a constant string become time literals
        at parse time, as in HTCondor, and a string that is no valid time is a syntax error."""
        try:
            # lazy: the time built-ins (~5 ms) load only for a text with a time literal
            from .func_time import parse_abstime_literal, parse_reltime_literal
        except ImportError:  # the time functions are unavailable: keep the call
            return FuncCall(name, (arg,))
        if lname == "abstime":
            value: object = parse_abstime_literal(arg.value)
        else:
            secs = parse_reltime_literal(arg.value)
            value = None if secs is None else RelTimeLiteral(secs)
        if value is None:
            raise self.error(f"invalid time string in {name}()", self.toks[self.i - 2])
        return Literal(value)

    def exprlist(self) -> Node:
        toks = self.toks
        items: list[Node] = []
        if toks[self.i][0] != "}":
            while True:
                items.append(self.expression())
                kind = toks[self.i][0]
                if kind == ",":
                    self.i += 1
                elif kind == "}":
                    break
                else:
                    raise self.error("expected ',' or '}' in the list")
        self.i += 1
        return ListExpr(tuple(items))

    def record(self) -> list[tuple[str, Node]]:
        """``[ name = expr; ... ]`` starting at the '['; extra ';' are tolerated as HTCondor does."""
        toks = self.toks
        self.expect("[", "'['")
        attrs: list[tuple[str, Node]] = []
        if toks[self.i][0] == "]":
            self.i += 1
            return attrs
        while toks[self.i][0] == ";":
            self.i += 1
        while True:
            tok = toks[self.i]
            if tok[0] != "id":
                raise self.error("expected an attribute name")
            if not tok[1]:
                raise self.error("an attribute name cannot be empty")
            self.i += 1
            self.expect("=", "'=' after the attribute name")
            attrs.append((tok[1], self.expression()))
            kind = toks[self.i][0]
            if kind != ";" and kind != "]":
                raise self.error("expected ';' or ']' after the attribute value")
            while kind == ";":
                self.i += 1
                kind = toks[self.i][0]
            if kind == "]":
                self.i += 1
                return attrs

    def at_end(self, what: str) -> None:
        if self.toks[self.i][0] != "end":
            raise self.error(f"unexpected text after the {what}")


def _dedupe(attrs: list[tuple[str, Node]]) -> tuple[tuple[str, Node], ...]:
    """Later duplicates replace earlier ones in place (first spelling kept), as in HTCondor."""
    if len(attrs) < 2:
        return tuple(attrs)
    seen: dict[str, int] = {}
    out: list[tuple[str, Node]] = []
    for name, expr in attrs:
        key = name.lower()
        j = seen.get(key)
        if j is None:
            seen[key] = len(out)
            out.append((name, expr))
        else:
            out[j] = (out[j][0], expr)
    return tuple(out)


def _guard(fn, text: str):  # type: ignore[no-untyped-def]
    """Run a parse step, turning stack exhaustion into a syntax error."""
    try:
        return fn()
    except RecursionError:
        raise syntax_error("expression nested too deeply", text, 0) from None


# ---------------------------------------------------------------- expressions

_CACHE: dict[str, Node] = {}
_CACHE_LIMIT = 100_000


def _parse_expr_uncached(text: str) -> Node:
    def run() -> Node:
        p = _Parser(text)
        tree = p.expression()
        p.at_end("expression")
        return tree

    return _guard(run, text)


def parse_expr(text: str) -> Node:
    """Parse one expression; the whole text must be used.  Results are cached by text."""
    node = _CACHE.get(text)
    if node is not None:
        return node
    if type(text) is not str:
        raise TypeError(f"parse_expr needs a str, not {type(text).__name__}")
    node = _fast_literal(text)
    if node is None:
        node = _parse_expr_uncached(text)
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.clear()
    _CACHE[text] = node
    return node


_new_node = object.__new__
_set = object.__setattr__


def _lit(value: object) -> Literal:
    """``Literal(value)`` without the immutability guard's per-field cost (hot path)."""
    node = _new_node(Literal)
    _set(node, "value", value)
    _set(node, "_compiled", None)
    return node


def _fast_literal(text: str) -> Node | None:
    """Plain integers and escape-free strings, the bulk of per-job values, without the lexer."""
    t = text.strip(" \t")
    if not t:
        return None
    c = t[0]
    if c == '"':
        if (
            len(t) > 1 and t[-1] == '"' and t.count('"') == 2
            and "\\" not in t and "\0" not in t
        ):
            return _lit(t[1:-1])
        return None
    if "1" <= c <= "9":
        if len(t) < 19 and t.isdigit() and t.isascii():
            return _lit(int(t))
    elif t == "0":
        return _lit(0)
    elif c == "-" and len(t) < 20 and t[1:2] != "0" and t[1:].isdigit() and t.isascii():
        return _lit(int(t))
    return None


# ---------------------------------------------------------------- new-format ads

def _parse_ad_full(text: str) -> list[tuple[str, Node]]:
    """The record at the start of ``text``; like HTCondor, text after its ``]`` is not read."""
    start = _RECORD_START.match(text).end()  # type: ignore[union-attr]
    if start < len(text) and text[start] == "[":
        text = text[: _record_end(text, start)]

    def run() -> list[tuple[str, Node]]:
        p = _Parser(text)
        attrs = p.record()
        p.at_end("closing ']' of the ad")
        return attrs

    return _guard(run, text)


_WS_CHARS = " \t\r\n\f\v"
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_KEYWORD_NAMES = frozenset(["true", "false", "undefined", "error", "is", "isnt"])
# Names already checked to be plain identifiers (bounded like the caches).
_GOOD_NAMES: set[str] = set()


def _plain_name(name: str) -> bool:
    """True if ``name`` (already stripped) is an identifier usable unquoted as an attribute name."""
    if name in _GOOD_NAMES:
        return True
    if _IDENT_RE.match(name) and name.lower() not in _KEYWORD_NAMES:
        if len(_GOOD_NAMES) >= _CACHE_LIMIT:
            _GOOD_NAMES.clear()
        _GOOD_NAMES.add(name)
        return True
    return False


class _Fallback(Exception):
    """The shortcut met something it does not handle; use the careful path."""


# "name = value" piece of an ad text -> its (name, tree) pair, for pieces
# whose value text has been seen before (most attributes of a job repeat).
_PIECES: dict[str, tuple[str, Node]] = {}
_BLANK: tuple[str, Node] = ("", _LIT_UNDEF)


_STRINGS = re.compile(r'"[^"]*"')


def _piece(piece: str) -> tuple[str, Node]:
    if '"' in piece and piece.count('"') & 1:
        raise _Fallback  # a string holding ';' was split
    if "//" in piece and "//" in _STRINGS.sub("", piece):
        raise _Fallback  # a // comment runs to the end of the line, past any ';'
    name, eq, value = piece.partition("=")
    if not eq:
        if piece.strip(_WS_CHARS):
            raise _Fallback
        return _BLANK
    name = name.strip(_WS_CHARS)
    if name not in _GOOD_NAMES and not _plain_name(name):
        raise _Fallback
    node = _CACHE.get(value)
    if node is None:
        # first sighting of this value text: cache the tree, not yet the piece
        node = _fast_literal(value)
        if node is None:
            try:
                node = parse_expr(value)
            except ClassAdSyntaxError:
                raise _Fallback from None
        elif len(_CACHE) < _CACHE_LIMIT:
            _CACHE[value] = node
        return (name, node)
    pair = (name, node)
    if len(_PIECES) >= _CACHE_LIMIT:
        _PIECES.clear()
    _PIECES[piece] = pair
    return pair


def _fast_ad(s: str) -> list[tuple[str, Node]] | None:
    """Split an ordinary ``[ ... ]`` text at semicolons with string methods.

    Returns None whenever the text holds anything the shortcut does not
    understand (nested brackets, quoted names, backslashes, comments, a
    semicolon inside parentheses...); the full parser then decides.
    """
    body = s[1:-1]
    if "\\" in body:
        return None
    # Brackets, quoted names and /* comments need no check here: a piece
    # cut out of one of them fails to parse on its own, which sends the whole
    # text to the careful path.
    pieces = body.split(";")
    if len(pieces) > 1 and not pieces[0].strip(_WS_CHARS):
        return None  # leading ';' has its own rules in HTCondor's parser
    get = _PIECES.get
    try:
        out = [get(p) or _piece(p) for p in pieces]
    except _Fallback:
        if "'" in body or "/" in body or "[" in body:
            return None
        return _careful_ad(pieces)
    if _BLANK in out:
        out = [x for x in out if x is not _BLANK]
    return out


def _careful_ad(pieces: list[str]) -> list[tuple[str, Node]] | None:
    """Like :func:`_fast_ad`, gluing back pieces of strings that hold ';'."""
    out: list[tuple[str, Node]] = []
    i = 0
    n = len(pieces)
    while i < n:
        piece = pieces[i]
        i += 1
        if '"' in piece and piece.count('"') & 1:
            while i < n:
                piece = piece + ";" + pieces[i]
                i += 1
                if not piece.count('"') & 1:
                    break
            else:
                return None
        name, eq, value = piece.partition("=")
        if not eq:
            if piece.strip(_WS_CHARS):
                return None
            continue
        name = name.strip(_WS_CHARS)
        if not _plain_name(name):
            return None
        try:
            node = parse_expr(value)
        except ClassAdSyntaxError:
            return None
        out.append((name, node))
    return out


def parse_ad(text: str) -> list[tuple[str, Node]]:
    """Parse one new-format record ``[ a = 1; b = "x" ]`` into (name, tree) pairs in order.

    Names keep their spelling; a repeated name appears each time (the later wins
    when a ClassAd is built).  As in HTCondor's ``ClassAd(text)``, whatever
    follows the closing ``]`` is ignored; use :func:`iter_ads` for streams.
    """
    s = text.strip(_WS_CHARS)
    if len(s) >= 2 and s[0] == "[" and s[-1] == "]":
        out = _fast_ad(s)
        if out is not None:
            return out
    return _parse_ad_full(text)


# ---------------------------------------------------------------- old-format ads

_OLD_CACHE: dict[str, Node] = {}


def _parse_old_value(text: str) -> Node:
    """One old-format value with old string rules.

    As in HTCondor, the value is the first complete expression on the line and
    anything after it is ignored (``A = 1;`` and ``A = 1 // note`` are common).
    """
    node = _OLD_CACHE.get(text)
    if node is not None:
        return node
    node = _fast_literal(text)
    if node is None:
        node = _guard(lambda: _leading_expression(text), text)
    if len(_OLD_CACHE) >= _CACHE_LIMIT:
        _OLD_CACHE.clear()
    _OLD_CACHE[text] = node
    return node


def _leading_expression(text: str) -> Node:
    """The expression at the start of ``text``; what follows it is not looked at.

    HTCondor's lexer is lazy, so junk after the expression never matters; our
    lexer is eager, so on a lexical error we retry on the text before it.
    """
    try:
        p = _Parser(text, old=True)
    except ClassAdSyntaxError as exc:
        cut = _offset_of(exc)
        if cut <= 0:
            raise
        try:
            return _leading_expression(text[:cut])
        except ClassAdSyntaxError:
            raise exc from None
    return p.expression()


# whole old-format line -> its pair, for lines whose value text was seen before
_OLD_LINES: dict[str, tuple[str, Node]] = {}


def _old_line(line: str) -> tuple[str, Node]:
    c = line[:1]
    if c == "#" or c == " " or c == "\t" or c == "\r" or c == "":
        body = line.lstrip(" \t\r\f\v")
        if not body or body[0] == "#":
            return _BLANK  # blank or comment line
    name, eq, value = line.partition("=")
    if not eq:
        raise _Fallback
    name = name.strip(" \t")
    if not name:
        raise _Fallback
    if value.endswith("\r"):
        value = value[:-1]
    node = _OLD_CACHE.get(value)
    if node is None:
        node = _fast_literal(value)
        if node is None:
            try:
                node = _parse_old_value(value)
            except ClassAdSyntaxError:
                raise _Fallback from None
        elif len(_OLD_CACHE) < _CACHE_LIMIT:
            _OLD_CACHE[value] = node
        return (name, node)
    pair = (name, node)
    if len(_OLD_LINES) >= _CACHE_LIMIT:
        _OLD_LINES.clear()
    _OLD_LINES[line] = pair
    return pair


def _old_pairs(text: str, start: int, end: int) -> list[tuple[str, Node]]:
    """Pairs of the old-format ad in ``text[start:end]``; errors point into ``text``."""
    chunk = text[start:end] if start or end != len(text) else text
    get = _OLD_LINES.get
    try:
        out = [get(line) or _old_line(line) for line in chunk.split("\n")]
    except _Fallback:
        return _old_pairs_careful(text, start, end)
    if _BLANK in out:
        out = [x for x in out if x is not _BLANK]
    return out


def _old_pairs_careful(text: str, start: int, end: int) -> list[tuple[str, Node]]:
    """Line by line with positions, for error messages."""
    out: list[tuple[str, Node]] = []
    pos = start
    while pos < end:
        eol = text.find("\n", pos, end)
        if eol < 0:
            eol = end
        line = text[pos:eol]
        pair = _old_line_careful(text, pos, line)
        if pair is not None:
            out.append(pair)
        pos = eol + 1
    return out


def _old_line_careful(text: str, pos: int, line: str) -> tuple[str, Node] | None:
    body = line.lstrip(" \t\r\f\v")
    if not body or body[0] == "#":
        return None
    name, eq, value = line.partition("=")
    name = name.strip(" \t")
    if not eq or not name:
        col = len(line) - len(body)
        raise _error_at(text, pos + col, "expected 'Name = expression'")
    vstart = len(line) - len(value)
    if value.endswith("\r"):
        value = value[:-1]
    try:
        node = _parse_old_value(value)
    except ClassAdSyntaxError as exc:
        raise _error_at(text, pos + vstart + _offset_of(exc), exc.message) from None
    return (name, node)


def _error_at(text: str, offset: int, message: str) -> ClassAdSyntaxError:
    return syntax_error(message, text, offset)


def parse_old_ad(text: str) -> list[tuple[str, Node]]:
    """Parse an old-format ad: one ``Name = expression`` per line.

    Blank lines and lines whose first non-blank character is ``#`` are
    skipped; an expression cannot continue onto the next line.  As in
    HTCondor, the name is whatever stands before the first ``=`` (so
    ``MY.x = 1`` names ``MY.x`` and ``'a b' = 1`` names ``'a b'``, quotes
    included), and text after a complete value is ignored.  Values use the
    old string rules HTCondor writes them with: only ``\\"`` is an escape,
    every other backslash is an ordinary character.
    """
    return _old_pairs(text, 0, len(text))


# ---------------------------------------------------------------- streams of ads

def iter_ads(text: str, fmt: str = "auto") -> Iterator[tuple[list[tuple[str, Node]], int]]:
    """Yield ``(pairs, end_offset)`` for each ad in ``text``.

    ``fmt`` is ``"new"`` (consecutive ``[...]`` records, white space and
    comments between them), ``"old"`` (ads separated by blank lines) or
    ``"auto"``: new when the first non-blank character is ``[`` or ``/``.
    """
    if fmt == "auto":
        s = text.lstrip()
        fmt = "new" if s[:1] in ("[", "/") else "old"
    if fmt == "new":
        yield from _iter_new(text)
    elif fmt == "old":
        yield from _iter_old(text)
    else:
        raise ValueError(f"unknown ClassAd format {fmt!r}; use 'new', 'old' or 'auto'")


_RECORD_START = re.compile(r"(?:[ \t\r\n\f\v]+|//[^\n]*|/\*.*?\*/)*", re.DOTALL)
# Text between brackets: anything but brackets, with strings, quoted names and
# comments skipped whole (they may contain brackets).
_NO_BRACKETS = re.compile(
    r"""(?:[^\[\]"'/]+|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|//[^\n]*|/\*.*?\*/|/(?![/*]))*""",
    re.DOTALL,
)


def _iter_new(text: str) -> Iterator[tuple[list[tuple[str, Node]], int]]:
    pos = 0
    n = len(text)
    while True:
        pos = _RECORD_START.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= n:
            return
        end = _record_end(text, pos)
        try:
            pairs = parse_ad(text[pos:end])
        except ClassAdSyntaxError as exc:
            raise syntax_error(exc.message, text, pos + _offset_of(exc)) from None
        yield pairs, end
        pos = end


def _offset_of(exc: ClassAdSyntaxError) -> int:
    lines = exc.text.split("\n")
    return sum(len(x) + 1 for x in lines[: exc.line - 1]) + exc.column - 1


def _record_end(text: str, start: int) -> int:
    """Offset just past the ``]`` closing the record that opens at ``start``."""
    if text[start] != "[":
        raise syntax_error("expected '[' starting a ClassAd", text, start)
    depth = 0
    pos = start
    n = len(text)
    skip = _NO_BRACKETS.match
    while pos < n:
        c = text[pos]
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return pos + 1
        else:
            break  # an unterminated string or comment
        pos = skip(text, pos + 1).end()  # type: ignore[union-attr]
    return n  # let the parser report what is missing


def _iter_old(text: str) -> Iterator[tuple[list[tuple[str, Node]], int]]:
    """Ads separated by lines holding only white space; offsets as classad2's parseNext gives."""
    pos = 0
    n = len(text)
    while pos < n:
        m = _BLANK_LINES.match(text, pos)
        pos = m.end()  # type: ignore[union-attr]
        if pos >= n:
            return
        m2 = _AD_END.search(text, pos)
        if m2 is None:
            yield _old_pairs(text, pos, n), n
            return
        # like HTCondor, the offset includes the blank line that ended the ad
        yield _old_pairs(text, pos, m2.start() + 1), m2.end()
        pos = m2.end()


_BLANK_LINES = re.compile(r"(?:[ \t\r\f\v]*\n)*(?:[ \t\r\f\v]*\Z)?")
# a newline followed by a blank line (or white space up to the end)
_AD_END = re.compile(r"\n[ \t\r\f\v]*(?:\n|\Z)")
