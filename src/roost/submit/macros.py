"""Submit-language macro expansion: ``$(name)``, ``$(name:default)``, ``$ENV()``,
``$INT()``, ``$REAL()``, ``$F[fpdnxqbawu]()``, ``$BASENAME()``, ``$DIRNAME()``,
``$CHOICE()``, ``$RANDOM_INTEGER()``, ``$RANDOM_CHOICE()``; ``$$(Attr)`` is kept
for the schedd to expand at match time.

Finding the references (nested parentheses, ``$$``) is the scanner shared with the
configuration language (``roost.config.macros``, with ``SUBMIT_SYNTAX``); what each
one means is this module's.

Names are case-insensitive. *Live* variables (ClusterId, ProcId, Item, Row,
Step, the queue's own variables...) change per proc, so the expander records
whether a value touched one: per-proc work then re-expands only the commands
that did, from a pre-split template when the live values are used verbatim.
"""

from __future__ import annotations

import math
import os
import random
import re
from collections.abc import Callable, Mapping

from roost.config.macros import Syntax, expand
from roost.submit.errors import SubmitError

#: every ``$NAME(`` is a reference (an unknown one is kept as written); ``$$(...)``
#: is kept for the schedd; an unclosed ``$NAME(`` leaves the rest of the text as written
SUBMIT_SYNTAX = Syntax(is_function=None, dollar_pair=False, stop_at_unclosed=True)
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.+]*\Z")
_SENTINEL_RE = re.compile("\x01(\\d+)\x02")
MAX_DEPTH = 64

#: per-proc names condor_submit sets itself (lower case)
BUILTIN_LIVE = ("cluster", "clusterid", "process", "procid", "item", "itemindex", "step", "row", "node")


class Template:
    """A value whose only per-proc parts are live variables used verbatim."""

    __slots__ = ("parts", "slots", "fmt", "named")

    def __init__(self, probe: str, names: list[str]) -> None:
        pieces = _SENTINEL_RE.split(probe)
        self.parts = pieces[0::2]
        self.slots = [names[int(k)] for k in pieces[1::2]]
        # str.format is the fastest way to splice a handful of values into text
        self.fmt = "".join(
            p.replace("{", "{{").replace("}", "}}") + (f"{{{i}}}" if i < len(self.slots) else "")
            for i, p in enumerate(self.parts)
        )

        # the same with named fields, for ``format_map(live)``: one C call per value
        self.named = (
            "".join(
                p.replace("{", "{{").replace("}", "}}") + (f"{{{self.slots[i]}}}" if i < len(self.slots) else "")
                for i, p in enumerate(self.parts)
            )
            if all(s.isidentifier() for s in self.slots)
            else None
        )

    def render(self, live: Mapping[str, str]) -> str:
        if self.named is not None:
            return self.named.format_map(live)
        return self.fmt.format(*[live[s] for s in self.slots])


def _unquote(s: str) -> str:
    if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
        return s[1:-1]
    return s


def _basename_plus_dirs(path: str, ndirs: int) -> int:
    """Index where the last ``ndirs`` directories plus the file name start."""
    idx = len(path)
    seps = [i for i, c in enumerate(path) if c in "/\\"]
    # the last separator precedes the basename; go ndirs further back
    if len(seps) > ndirs:
        return seps[-1 - ndirs] + 1
    return 0 if not path.startswith(("/", "\\")) else (1 if seps else idx)


def filename_parts(func: str, value: str, cwd: str = "", suffix: str | None = None) -> str:
    """``$F...()`` (and ``$BASENAME``/``$DIRNAME``): keep the requested parts of a path."""
    parts = 0
    ndirs = 0
    quoted = bare = full = argq = False
    conv = ""
    fu = func.upper()
    if fu == "BASENAME":
        parts = 1 | 2
    elif fu == "DIRNAME":
        parts = 4
    else:
        for ch in func[1:].lower():
            if ch == "x":
                parts |= 1
            elif ch == "n":
                parts |= 2
            elif ch == "p":
                parts |= 4
            elif ch == "d":
                parts |= 8
                ndirs += 1
            elif ch == "a":
                argq = True
            elif ch == "b":
                bare = True
            elif ch == "f":
                full = True
            elif ch == "w":
                conv = "\\"
            elif ch == "u":
                conv = "/"
            elif ch == "q":
                quoted = True
    buf = _unquote(value)
    if full and not os.path.isabs(buf) and cwd:
        buf = os.path.normpath(os.path.join(cwd, buf))
    if conv:
        buf = buf.replace("/" if conv == "\\" else "\\", conv)
    end = len(buf)
    ixn = max(buf.rfind("/"), buf.rfind("\\")) + 1
    dot = buf.rfind(".", ixn)
    ixx = dot if dot > ixn else end
    if suffix and end - len(suffix) >= ixn and buf[end - len(suffix):].lower() == suffix.lower():
        ixx = end - len(suffix)
        parts &= ~1
    if not ixn and parts & 3:
        parts &= ~(4 | 8)
    start = 0
    p = parts & 0xF
    if p == 1:
        start = ixx + (1 if bare and ixx < end else 0)
    elif p == 3:
        start = ixn
    elif p == 2:
        start, end = ixn, ixx
    elif p in (0, 7, 5):
        start = 0
    elif p == 4:
        end = ixn - 1 if bare and ixn > 0 else ixn
    elif p == 6:
        end = ixx
    else:
        if ixn > 0:
            start = _basename_plus_dirs(buf, ndirs)
            if parts & 3 == 2:
                end = ixx
            elif parts & 3 == 0:
                end = ixn - 1 if bare else ixn
        else:
            start = end = 0
    out = buf[start:end]
    if quoted:
        q = "'" if argq else '"'
        out = f"{q}{out}{q}"
    return out


def _split_args(body: str) -> list[str]:
    return [a.strip() for a in body.split(",")]


class Expander:
    """Expands macros against a submit hash, the environment and live variables.

    ``probe`` mode replaces live variables by sentinels so a value can be
    turned into a Template once; ``complex`` is set when a live variable fed a
    function (``$INT(Process)``, ``$Fn(Item)``...) or a random function ran,
    in which case the value must be fully re-expanded per proc.
    """

    def __init__(
        self,
        macros: Mapping[str, str],
        *,
        env: Mapping[str, str] | None = None,
        live: Mapping[str, str] | None = None,
        defaults: Mapping[str, str] | None = None,
        cwd: str = "",
        rng: random.Random | None = None,
        evaluate: Callable[[str], object] | None = None,
    ) -> None:
        self.macros = macros
        self.env = env if env is not None else {}
        self.live: Mapping[str, str] = live or {}
        self.defaults = defaults or {}
        self.cwd = cwd
        self.rng = rng or random.Random(0)
        self.evaluate = evaluate if evaluate is not None else classad_number
        self.used_live: set[str] = set()
        self.used: set[str] = set()
        self.complex = False
        self._in_func = 0
        self._stack: list[str] = []

    # -- public -----------------------------------------------------------
    def expand(self, text: str) -> str:
        if "$" not in text:
            return text
        return self._expand(text, 0)

    def reset_tracking(self) -> None:
        self.used_live = set()
        self.used = set()
        self.complex = False

    # -- machinery --------------------------------------------------------
    def _expand(self, text: str, depth: int) -> str:
        if depth > MAX_DEPTH:
            raise SubmitError(f"macro expansion too deep (a macro refers to itself?): {text[:60]}")

        def replace(func: str, body: str) -> str | None:
            return self._call(func, body, depth)

        return expand(text, replace, SUBMIT_SYNTAX)

    def _raw(self, name: str) -> tuple[bool, str]:
        """Look a name up: live variables win, then the submit hash, then defaults."""
        low = name.lower()
        if low in self.live:
            self.used_live.add(low)
            if self._in_func:
                self.complex = True
            return True, self.live[low]
        if low in self.macros:
            self.used.add(low)
            return False, self.macros[low]
        if low in self.defaults:
            return False, self.defaults[low]
        raise KeyError(low)

    def lookup(self, name: str, depth: int = 0) -> str | None:
        """The expanded value of a macro, or None when it is not defined."""
        try:
            is_live, raw = self._raw(name)
        except KeyError:
            return None
        if is_live:
            return raw
        low = name.lower()
        if low in self._stack:
            raise SubmitError(f"macro '{name}' refers to itself")
        self._stack.append(low)
        try:
            return self._expand(raw, depth + 1) if "$" in raw else raw
        finally:
            self._stack.pop()

    def _arg_value(self, arg: str, depth: int) -> str:
        """Functions take a macro name or, failing that, literal text."""
        if _NAME_RE.match(arg):
            v = self.lookup(arg, depth)
            if v is not None:
                return v
        return self._expand(arg, depth + 1) if "$" in arg else arg

    def _call(self, func: str, body: str, depth: int) -> str | None:
        """What ``$func(body)`` expands to (``$(body)`` when func is ""); None keeps it as written."""
        if not func:
            name, colon, default = body.partition(":")
            if not _NAME_RE.match(name):
                return None
            if colon and name.lower() in self.live:
                self.complex = True
            v = self.lookup(name, depth)
            if v is not None:
                return v
            if name.lower() == "dollar":
                return "$"
            if colon:
                return self._expand(default, depth + 1)
            return ""
        fu = func.upper()
        self._in_func += 1
        try:
            if fu == "ENV":
                name, colon, default = body.partition(":")
                got = self.env.get(name.strip())
                if got is None:
                    return default if colon else "UNDEFINED"
                return got
            if fu in ("INT", "REAL"):
                return self._number(fu, body, depth)
            if fu == "CHOICE":
                return self._choice(body, depth)
            if fu == "RANDOM_INTEGER":
                self.complex = True
                args = _split_args(body)
                try:
                    lo, hi = int(args[0]), int(args[1])
                    step = int(args[2]) if len(args) > 2 else 1
                except (ValueError, IndexError) as e:
                    raise SubmitError(f"$RANDOM_INTEGER({body}) needs integer min, max[, step]") from e
                return str(self.rng.randrange(lo, hi + 1, step))
            if fu == "RANDOM_CHOICE":
                self.complex = True
                return self.rng.choice(_split_args(body))
            if fu in ("BASENAME", "DIRNAME") or fu.startswith("F"):
                if fu.startswith("F") and not re.fullmatch(r"F[FPDNXQBAWU]*", fu):
                    return None
                suffix = None
                arg = body
                if fu == "BASENAME" and "," in body:
                    arg, suffix = body.rsplit(",", 1)
                    suffix = suffix.strip()
                return filename_parts(func, self._arg_value(arg.strip(), depth), self.cwd, suffix)
            return None
        finally:
            self._in_func -= 1

    def _eval_number(self, text: str, what: str) -> float | int:
        s = text.strip()
        try:
            return int(s)
        except ValueError:
            pass
        try:
            return float(s)
        except ValueError:
            pass
        if self.evaluate is not None:
            got = self.evaluate(s)
            if isinstance(got, bool):
                return int(got)
            if isinstance(got, int | float):
                return got
        raise SubmitError(f"{what}: '{text}' does not evaluate to a number")

    def _number(self, fu: str, body: str, depth: int) -> str:
        args = body.split(",", 1)
        val = self._eval_number(self._arg_value(args[0].strip(), depth), f"${fu}({body})")
        fmt = args[1].strip() if len(args) > 1 else ""
        if fu == "INT":
            iv = int(val) if not (isinstance(val, float) and (math.isnan(val) or math.isinf(val))) else 0
            return (fmt % iv) if fmt else str(iv)
        fv = float(val)
        if fmt:
            return fmt % fv
        return f"{fv:.16G}"

    def _choice(self, body: str, depth: int) -> str:
        args = _split_args(body)
        idx = int(self._eval_number(self._arg_value(args[0], depth), f"$CHOICE({body})"))
        if len(args) == 2:
            lst = self._arg_value(args[1], depth)
            items = [a.strip() for a in lst.split(",")]
        else:
            items = [self._expand(a, depth + 1) if "$" in a else a for a in args[1:]]
        if idx < 0 or idx >= len(items):
            raise SubmitError(f"$CHOICE({body}): index {idx} is out of range")
        return items[idx]


def classad_number(text: str) -> object:
    """Evaluate text as a ClassAd expression ($INT(2*3)); None when it is not one."""
    # lazy: the ClassAd library (~35 ms) only for a $INT()/$REAL() of an expression
    from roost.classad import ExprTree

    try:
        return ExprTree(text).eval()
    except Exception:  # not an expression: the caller reports "not a number"
        return None


def probe_template(text: str, expander: Expander, live_names: list[str]) -> tuple[str, Template | None, bool]:
    """Expand ``text`` with sentinels for live variables.

    Returns (probe text, Template or None when the value needs full per-proc
    expansion, whether it depends on live variables at all).
    """
    saved = expander.live
    expander.live = {n: f"\x01{i}\x02" for i, n in enumerate(live_names)}
    expander.reset_tracking()
    try:
        probe = expander.expand(text)
    except SubmitError:
        # a function fed a live variable (a sentinel) cannot run now; it runs per proc
        if not expander.used_live:
            raise
        return text, None, True
    finally:
        expander.live = saved
    live = bool(expander.used_live) or expander.complex
    if not live:
        return probe, None, False
    if expander.complex:
        return probe, None, True
    return probe, Template(probe, live_names), True
