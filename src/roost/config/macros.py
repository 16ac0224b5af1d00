"""``$(NAME)`` expansion and the ``$FUNC(...)`` macro functions.

Two parts. The scanner (``MacroRef``, ``Syntax``, ``references``, ``expand``)
finds ``$(...)`` and ``$NAME(...)`` references, nested parentheses and all,
and knows nothing of what they mean; the configuration language, the submit
language (``roost.submit.macros``) and DAGMan's VARS share it, each with its
own ``Syntax`` and replacement function. ``Expander`` is the configuration
language's meaning for them.

Config expansion is lazy (done when a value is read) and recursive: the value
substituted for ``$(A)`` is itself expanded, with ``A`` on a stack so a
cycle is reported instead of looping.  Text produced by a substitution is
not rescanned, which is why ``$(DOLLAR)(X)`` yields a literal ``$(X)``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator, Mapping

from roost.config.arith import ArithError, evaluate
from roost.config.errors import ConfigError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the submit language imports this)

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from roost.config.table import Entry

NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
_FUNCS = {"ENV", "INT", "REAL", "CHOICE", "SUBSTR", "RANDOM_CHOICE", "RANDOM_INTEGER"}
_FILE_FUNC = re.compile(r"F[a-z]*\Z")
MAX_DEPTH = 100

Lookup = Callable[[str], "Entry | None"]

# -- the scanner, shared by every language that writes $(NAME) ------------------

#: where a reference starts: ``$(`` or ``$NAME(``
_OPEN_RE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\(")


class MacroRef:
    """One reference: ``text[start:end]`` is ``$func(body)`` (``$(body)`` when func is "")."""

    __slots__ = ("start", "end", "func", "body")

    def __init__(self, start: int, end: int, func: str, body: str) -> None:
        self.start = start
        self.end = end
        self.func = func
        self.body = body

    def __repr__(self) -> str:
        return f"MacroRef({self.start}, {self.end}, {self.func!r}, {self.body!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MacroRef):
            return NotImplemented
        return (self.start, self.end, self.func, self.body) == (
            other.start, other.end, other.func, other.body
        )

    __hash__ = None  # type: ignore[assignment]


class Syntax:
    """Where languages read the same text differently; everything else is shared.

    ``is_function``: which ``$NAME(`` open a reference (None: every name);
    any other is plain text and scanning goes on inside its parentheses.
    ``dollar_pair``: True, ``$$`` is plain text (config); False, a whole
    ``$$(...)`` is, the schedd's match-time reference (submit).
    ``stop_at_unclosed``: an unclosed ``$NAME(`` makes the rest of the text
    plain (submit); otherwise only the ``$NAME(`` itself is (config).
    (A plain class, not a dataclass: this module is on ``roost submit``'s start-up path.)
    """

    __slots__ = ("is_function", "dollar_pair", "stop_at_unclosed")

    def __init__(
        self, *, is_function: Callable[[str], bool] | None, dollar_pair: bool, stop_at_unclosed: bool
    ) -> None:
        self.is_function = is_function
        self.dollar_pair = dollar_pair
        self.stop_at_unclosed = stop_at_unclosed


def matching_paren(text: str, open_pos: int) -> int:
    """Index of the ``)`` closing the ``(`` at ``open_pos`` (which must be one), or -1."""
    depth = 1
    i = open_pos + 1
    # from one ")" to the next, counting the "(" between: str methods, not a loop per character
    while True:
        close = text.find(")", i)
        if close < 0:
            return -1
        depth += text.count("(", i, close) - 1
        if depth == 0:
            return close
        i = close + 1


def _scan(text: str, syntax: Syntax) -> Iterator[tuple[int, int, str, str]]:
    """``references`` as plain tuples, for ``expand``'s inner loop."""
    find = text.find
    is_function = syntax.is_function
    i = 0
    while True:
        j = find("$", i)
        if j < 0:
            return
        if text.startswith("$$", j):
            if syntax.dollar_pair:
                i = j + 2
                continue
            if text.startswith("$$(", j):
                close = matching_paren(text, j + 2)
                if close < 0:
                    if syntax.stop_at_unclosed:
                        return
                    i = j + 3
                else:
                    i = close + 1
                continue
        m = _OPEN_RE.match(text, j)
        if m is None:
            i = j + 1
            continue
        func = m.group(1) or ""
        opened = m.end()
        if is_function is not None and not is_function(func):
            i = opened
            continue
        close = matching_paren(text, opened - 1)
        if close < 0:
            if syntax.stop_at_unclosed:
                return
            i = opened
            continue
        yield j, close + 1, func, text[opened:close]
        i = close + 1


def references(text: str, syntax: Syntax) -> Iterator[MacroRef]:
    """The references in ``text``, left to right. One nested in another's body is not
    yielded on its own: the body is the caller's to expand, or not."""
    for start, end, func, body in _scan(text, syntax):
        yield MacroRef(start, end, func, body)


def expand(text: str, replace: Callable[[str, str], str | None], syntax: Syntax) -> str:
    """``text`` with each reference replaced by ``replace(func, body)``; None keeps it as written.

    ``func`` is "" for ``$(body)``. Replacements are not rescanned: ``replace``
    expands what it returns itself (and the body, if it should be).
    """
    if "$" not in text:
        return text
    out: list[str] = []
    last = 0
    for start, end, func, body in _scan(text, syntax):
        got = replace(func, body)
        if got is not None:
            out.append(text[last:start])
            out.append(got)
            last = end
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


def split_args(text: str) -> list[str]:
    """Split on commas that are not inside parentheses or double quotes."""
    args, depth, quoted, start = [], 0, False, 0
    for i, c in enumerate(text):
        if c == '"':
            quoted = not quoted
        elif quoted:
            continue
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "," and depth == 0:
            args.append(text[start:i])
            start = i + 1
    args.append(text[start:])
    return args


# -- the configuration language's meaning --------------------------------------


def _is_config_function(name: str) -> bool:
    return name == "" or name.upper() in _FUNCS or _FILE_FUNC.match(name) is not None


#: ``$$`` is text (the schedd expands ``$$(X)`` at match time); unknown ``$NAME(`` is text
CONFIG_SYNTAX = Syntax(is_function=_is_config_function, dollar_pair=True, stop_at_unclosed=False)


class Expander:
    """Expands macro references against a lookup function.

    ``where`` (file, line) locates errors found in text that is not a
    stored knob, such as an ``if`` condition being parsed.
    """

    def __init__(
        self,
        lookup: Lookup,
        env: Mapping[str, str],
        rng: random.Random | None = None,
    ) -> None:
        self._lookup = lookup
        self._env = env
        self._rng = rng or random.Random()

    def expand_entry(self, entry: Entry) -> str:
        """Fully expand a stored knob, with its own name on the loop stack."""
        return self._expand(entry.value, [entry.name.upper()], entry.file, entry.line)

    def expand(self, text: str, file: str = "<string>", line: int = 0) -> str:
        return self._expand(text, [], file, line)

    def _expand(self, text: str, stack: list[str], file: str, line: int) -> str:
        if "$" not in text:
            return text

        def replace(func: str, body: str) -> str | None:
            return self._call(func, self._expand(body, stack, file, line), stack, file, line)

        return expand(text, replace, CONFIG_SYNTAX)

    def _call(
        self, func: str, body: str, stack: list[str], file: str, line: int
    ) -> str | None:
        if func == "":
            return self._macro(body, stack, file, line)
        upper = func.upper()
        if upper == "ENV":
            # HTCondor gives an unset variable with no default as UNDEFINED,
            # which ClassAd expressions then treat as undefined.
            name, colon, default = body.partition(":")
            return self._env.get(name.strip(), default if colon else "UNDEFINED")
        if upper in ("INT", "REAL"):
            return self._number(upper, body, stack, file, line)
        if upper == "CHOICE":
            args = split_args(body)
            index = self._integer(args[0], stack, file, line, "$CHOICE")
            choices = args[1:]
            if not 0 <= index < len(choices):
                raise ConfigError(
                    file, line, f"$CHOICE index {index} is out of range for {len(choices)} choices"
                )
            return choices[index].strip()
        if upper == "SUBSTR":
            return self._substr(body, stack, file, line)
        if upper == "RANDOM_CHOICE":
            return self._rng.choice(split_args(body)).strip()
        if upper == "RANDOM_INTEGER":
            args = [a.strip() for a in split_args(body)]
            if len(args) not in (2, 3):
                raise ConfigError(file, line, "$RANDOM_INTEGER needs (min, max[, step])")
            lo, hi = (self._integer(a, stack, file, line, "$RANDOM_INTEGER") for a in args[:2])
            step = self._integer(args[2], stack, file, line, "$RANDOM_INTEGER") if len(args) == 3 else 1
            return str(self._rng.randrange(lo, hi + 1, max(step, 1)))
        return self._file_parts(func[1:], body, stack, file, line)

    # -- $(NAME) -----------------------------------------------------------

    def _macro(self, body: str, stack: list[str], file: str, line: int) -> str | None:
        name, colon, default = body.partition(":")
        name = name.strip()
        if not NAME_RE.match(name):
            return None
        entry = self._lookup(name)
        if entry is None:
            if name.upper() == "DOLLAR":
                return "$"
            return default if colon else ""
        key = entry.name.upper()
        if key in stack or len(stack) >= MAX_DEPTH:
            chain = " -> ".join([*stack[stack.index(key) :], key] if key in stack else stack)
            raise ConfigError(entry.file, entry.line, f"macro loop in {chain}")
        return self._expand(entry.value, [*stack, key], entry.file, entry.line)

    def _value_of(self, arg: str, stack: list[str], file: str, line: int) -> str:
        """A function argument: the expanded value of a knob if it names one, else itself."""
        arg = arg.strip()
        if NAME_RE.match(arg):
            got = self._macro(arg, stack, file, line)
            if self._lookup(arg) is not None and got is not None:
                return got
        return arg

    def _integer(self, arg: str, stack: list[str], file: str, line: int, what: str) -> int:
        text = self._value_of(arg, stack, file, line)
        try:
            return int(evaluate(text))
        except ArithError as e:
            raise ConfigError(file, line, f"{what}: {e}") from None

    def _number(self, upper: str, body: str, stack: list[str], file: str, line: int) -> str:
        arg, comma, fmt = body.partition(",")
        text = self._value_of(arg, stack, file, line)
        try:
            value = evaluate(text)
        except ArithError as e:
            raise ConfigError(file, line, f"${upper}({arg.strip()}): {e}") from None
        number: int | float = int(value) if upper == "INT" else float(value)
        if comma:
            try:
                return fmt % number
            except (TypeError, ValueError):
                raise ConfigError(file, line, f"${upper}: bad format {fmt.strip()!r}") from None
        return str(number) if upper == "INT" else f"{number:.16g}"

    def _substr(self, body: str, stack: list[str], file: str, line: int) -> str:
        args = split_args(body)
        if len(args) not in (2, 3):
            raise ConfigError(file, line, "$SUBSTR needs (name, start[, length])")
        text = self._value_of(args[0], stack, file, line)
        start = self._integer(args[1], stack, file, line, "$SUBSTR")
        if start < 0:
            start = max(len(text) + start, 0)
        if len(args) == 2:
            return text[start:]
        length = self._integer(args[2], stack, file, line, "$SUBSTR")
        return text[start : start + length] if length >= 0 else text[start:length]

    def _file_parts(self, opts: str, body: str, stack: list[str], file: str, line: int) -> str:
        """``$F[pdnxqabwu](NAME)``: pieces of the file path held by knob NAME."""
        path = self._value_of(body, stack, file, line)
        if path.startswith('"') and path.endswith('"') and len(path) >= 2:
            path = path[1:-1]
        slash = max(path.rfind("/"), path.rfind("\\"))
        directory, base = path[: slash + 1], path[slash + 1 :]
        dot = base.rfind(".")
        stem, ext = (base[:dot], base[dot:]) if dot > 0 else (base, "")
        if any(c in opts for c in "pdnx"):
            result = ""
            if "p" in opts:
                result += directory
            elif "d" in opts:
                parent = directory.rstrip("/\\")
                cut = max(parent.rfind("/"), parent.rfind("\\"))
                result += directory[cut + 1 :]
            if "n" in opts:
                result += stem
            if "x" in opts:
                result += ext
        else:
            result = path
        if "b" in opts:
            result = result.rstrip("/\\") or result
        if "w" in opts:
            result = result.replace("/", "\\")
        if "u" in opts:
            result = result.replace("\\", "/")
        if "q" in opts:
            result = f'"{result}"'
        return result
