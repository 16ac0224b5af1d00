"""``-format FMT ATTR``: printf-style output of job and machine ads, as HTCondor's tools do it.

Each ``-format`` is one column: a printf format with (at most) one conversion and
the attribute or expression it prints. No separators are added between columns
nor a newline after the last (``\\n`` in the format gives one). The rules are
condor_q's:

- ``%s`` prints a string; an attribute that is not a string prints as ClassAd text
  (``Requirements``: its expression), an expression must evaluate to a string.
- ``%d %i %u %c %x %X %o`` and ``%f %e %g`` print numbers (booleans count as 0/1);
  ``%v`` any value (strings bare), ``%V`` any value as ClassAd text (strings
  quoted), ``%r`` the unevaluated expression, ``%T`` seconds as ``D+HH:MM:SS``,
  ``%Y`` a Unix time as ``M/D HH:MM``.
- when the value does not fit the conversion (undefined, a string for ``%d``) the
  whole column prints nothing, its literal text included;
- a format with no conversion prints its text as it is.

Ads arrive as JSON-form dicts (``roost.net.adwire``); only expressions pay for a ClassAd.
"""

from __future__ import annotations

import time
from typing import Any

from roost.cli.advalues import is_expr, to_classad, value_text

_FLAGS = "-+ #0'"
_INT, _FLOAT = "diucxXo", "fFeEgGaA"
_LENGTH = "hlLqjzt"
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "a": "\a", "b": "\b",
            "f": "\f", "v": "\v"}
_MISSING = object()


def unescape(text: str) -> str:
    """``\\n``, ``\\t`` ... as the characters they name (HTCondor collapses them too)."""
    if "\\" not in text:
        return text
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in _ESCAPES:
            out.append(_ESCAPES[text[i + 1]])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _split(fmt: str) -> tuple[str, str | None, str]:
    """(text before, the conversion as Python % text or None, text after); ``%%`` stays literal
    in the parts (each is later printed with ``%%`` collapsed)."""
    i = 0
    while True:
        i = fmt.find("%", i)
        if i < 0 or i + 1 >= len(fmt):
            return fmt, None, ""
        if fmt[i + 1] == "%":
            i += 2
            continue
        j = i + 1
        while j < len(fmt) and fmt[j] in _FLAGS:
            j += 1
        while j < len(fmt) and (fmt[j].isdigit() or fmt[j] == "."):
            j += 1
        head = fmt[i + 1:j].replace("'", "")
        while j < len(fmt) and fmt[j] in _LENGTH:
            j += 1
        if j >= len(fmt):
            return fmt, None, ""
        return fmt[:i], "%" + head + fmt[j], fmt[j + 1:]


def _duration(secs: int) -> str:
    days, secs = divmod(secs, 86400)
    hours, secs = divmod(secs, 3600)
    mins, secs = divmod(secs, 60)
    return f"{days:3d}+{hours:02d}:{mins:02d}:{secs:02d}"


def _date(epoch: int) -> str:
    if epoch < 0:
        return "    ???    "
    t = time.localtime(epoch)
    return f"{t.tm_mon:2d}/{t.tm_mday:<2d} {t.tm_hour:02d}:{t.tm_min:02d}"


class PrintfFormat:
    """One ``-format FMT EXPR`` column."""

    def __init__(self, fmt: str, expr: str) -> None:
        self.expr = expr
        pre, conv, post = _split(unescape(fmt))
        self.pre = pre.replace("%%", "%")
        self.post = post.replace("%%", "%")
        self.conv = conv
        self.letter = conv[-1] if conv else ""
        if self.letter == "u":
            self.conv = conv[:-1] + "d"  # type: ignore[index]
        elif self.letter in ("v", "V", "r", "R", "T", "Y"):
            self.conv = conv[:-1] + "s"  # type: ignore[index]
        elif conv and self.letter not in _INT + _FLOAT + "s":
            self.conv = None  # an unknown conversion: HTCondor prints the format as text
            self.pre = unescape(fmt)
            self.post = ""
        self.is_attr = expr.replace("_", "a").isalnum() and not expr[:1].isdigit()

    # -- finding the value --------------------------------------------------------------
    def _lookup(self, obj: dict[str, Any]) -> Any:
        v = obj.get(self.expr, _MISSING)
        if v is _MISSING:
            low = self.expr.lower()
            v = next((val for k, val in obj.items() if k.lower() == low), _MISSING)
        return v

    def _evaluate(self, obj: dict[str, Any], cache: list[Any]) -> Any:
        """The expression's value: a Python value, or the ClassAd Value Undefined/Error."""
        if not cache:
            cache.append(to_classad(obj))
        # lazy: the ClassAd library only for expressions (module docstring)
        from roost.classad import ExprTree, Value

        try:
            return ExprTree(self.expr).eval(cache[0])
        except Exception:
            return Value.Error

    def _value(self, obj: dict[str, Any], cache: list[Any]) -> Any:
        if self.is_attr:
            v = self._lookup(obj)
            if v is _MISSING or v is None:
                # lazy: the ClassAd library only for what is not a plain value (module docstring)
                from roost.classad import Value

                return Value.Undefined
            if not is_expr(v) and type(v) in (str, int, float, bool):
                return v
        return self._evaluate(obj, cache)

    def _raw(self, obj: dict[str, Any]) -> str:
        if self.is_attr:
            v = self._lookup(obj)
            if v is _MISSING or v is None:
                return "undefined"
            if is_expr(v):
                return v[6:-2]
            return _classad_text(v)
        # lazy: the ClassAd library only for expressions (module docstring)
        from roost.classad import ExprTree

        try:
            return str(ExprTree(self.expr))
        except Exception:
            return self.expr

    # -- printing -------------------------------------------------------------------------
    def text(self, obj: dict[str, Any], cache: list[Any] | None = None) -> str:
        """This column for one ad ("" when its value does not fit the conversion)."""
        if self.conv is None:
            return self.pre
        cache = [] if cache is None else cache
        letter = self.letter
        if letter in ("r", "R"):
            return self._cell(self._raw(obj))
        if letter == "s" and self.is_attr:
            v = self._lookup(obj)
            if v is not _MISSING and v is not None and not (type(v) is str and not is_expr(v)):
                if is_expr(v):
                    got = self._evaluate(obj, cache)
                    return self._cell(got if type(got) is str else v[6:-2])
                return self._cell(_classad_text(v))
        v = self._value(obj, cache)
        if letter == "s":
            return self._cell(v) if type(v) is str else ""
        if letter == "v":
            return self._cell(v if type(v) is str else _classad_text(v))
        if letter == "V":
            return self._cell(_classad_text(v))
        number = _number(v)
        if number is None:
            return ""
        if letter == "T":
            return self._cell(_duration(int(number)))
        if letter == "Y":
            return self._cell(_date(int(number)))
        if letter in _INT:
            number = int(number)
        else:
            number = float(number)
        try:
            return self._cell(number)
        except (TypeError, ValueError, OverflowError):
            return ""

    def _cell(self, value: Any) -> str:
        return self.pre + (self.conv % (value,)) + self.post  # type: ignore[operator]


def _number(v: Any) -> int | float | None:
    t = type(v)
    if t is bool:
        return int(v)
    if t is int or t is float:
        return v  # type: ignore[no-any-return]
    return None


def _classad_text(v: Any) -> str:
    """A value as ClassAd text (strings quoted), as %V and %r print it."""
    if type(v) is str:
        if is_expr(v):
            return v[6:-2]
        # lazy: the ClassAd library only when a value needs it (module docstring)
        from roost.classad.unparse import quote

        return quote(v)
    if not isinstance(v, (int, float, bool, str, list, dict)) and v is not None:
        # an evaluated ClassAd value: Undefined, Error, a list or a record
        name = getattr(v, "name", None)
        if name in ("Undefined", "Error"):
            return name.lower()
        # lazy: the ClassAd library only when a value needs it (module docstring)
        from roost.classad.unparse import unparse_value

        return unparse_value(v)
    return value_text(v)


def format_ads(ads: list[dict[str, Any]], formats: list[PrintfFormat]) -> str:
    """Every ad through every ``-format`` column, concatenated (condor_q -format)."""
    out = []
    for obj in ads:
        cache: list[Any] = []
        for f in formats:
            out.append(f.text(obj, cache))
    return "".join(out)


def text(pairs: list[tuple[str, str]], ads: list[dict[str, Any]]) -> str:
    """``-format FMT EXPR`` pairs (as the command line gave them) over ads."""
    return format_ads(ads, [PrintfFormat(f, e) for f, e in pairs])
