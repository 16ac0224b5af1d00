"""A tiny arithmetic evaluator for ``$INT()``, ``$REAL()`` and numeric knobs.

HTCondor evaluates these as ClassAd expressions; roost.config must not
depend on the ClassAd evaluator, and the values met in practice are plain
arithmetic (``24*3600``, ``(8)*60 - 29.5``), so this covers numbers,
``+ - * / %``, unary signs, parentheses and the boolean constants.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(
    r"\s*(?:(?P<num>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)|(?P<op>[-+*/%()])|(?P<word>[A-Za-z]+))"
)


class ArithError(ValueError):
    """The text is not a plain arithmetic expression."""


def _tokens(text: str) -> list[str | int | float | bool]:
    out: list[str | int | float | bool] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ArithError(f"cannot evaluate {text.strip()!r} as a number")
        pos = m.end()
        if m.group("num") is not None:
            s = m.group("num")
            out.append(float(s) if any(c in s for c in ".eE") else int(s))
        elif m.group("op") is not None:
            out.append(m.group("op"))
        else:
            word = m.group("word").lower()
            if word == "true":
                out.append(True)
            elif word == "false":
                out.append(False)
            else:
                raise ArithError(f"cannot evaluate {text.strip()!r} as a number")
    return out


def evaluate(text: str) -> int | float | bool:
    """Evaluate ``text``; integer division truncates toward zero as in ClassAds."""
    toks = _tokens(text)
    if not toks:
        raise ArithError("empty expression")
    pos = 0

    def peek() -> str | int | float | bool | None:
        return toks[pos] if pos < len(toks) else None

    def take() -> str | int | float | bool:
        nonlocal pos
        pos += 1
        return toks[pos - 1]

    def atom() -> int | float | bool:
        tok = peek()
        if tok == "(":
            take()
            val = expr()
            if take_if(")") is None:
                raise ArithError(f"missing ')' in {text.strip()!r}")
            return val
        if tok in ("-", "+"):
            take()
            val = atom()
            return -val if tok == "-" else +val
        if tok is None or isinstance(tok, str):
            raise ArithError(f"cannot evaluate {text.strip()!r} as a number")
        take()
        return tok

    def take_if(op: str) -> str | None:
        if peek() == op:
            take()
            return op
        return None

    def term() -> int | float | bool:
        val = atom()
        while peek() in ("*", "/", "%"):
            op = take()
            rhs = atom()
            if op == "*":
                val = val * rhs
            elif rhs == 0:
                raise ArithError(f"division by zero in {text.strip()!r}")
            elif op == "/":
                if isinstance(val, float) or isinstance(rhs, float):
                    val = val / rhs
                else:
                    val = int(val / rhs)
            elif isinstance(val, float) or isinstance(rhs, float):
                val = val - rhs * int(val / rhs)
            else:
                val = int(val - rhs * int(val / rhs))
        return val

    def expr() -> int | float | bool:
        val = term()
        while peek() in ("+", "-"):
            op = take()
            rhs = term()
            val = val + rhs if op == "+" else val - rhs
        return val

    result = expr()
    if pos != len(toks):
        raise ArithError(f"cannot evaluate {text.strip()!r} as a number")
    return result
