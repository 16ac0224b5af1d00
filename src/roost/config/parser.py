"""Reading configuration text into a table of raw values.

Reading is sequential because the language is: ``if defined X`` and
``X = $(X) more`` depend on what came before, and ``include`` and ``use``
splice text in place.  Values themselves stay unexpanded (lazy), except
for self-references, which mean "the value so far" and so are resolved
as they are read.  The parser touches no filesystem: includes and
commands go through callbacks supplied by the loader.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from roost.config import templates
from roost.config.errors import ConfigError
from roost.config.macros import Expander, matching_paren, split_args
from roost.config.table import Entry, find

# The HTCondor language level roost claims for ``if version >= x.y.z``,
# so configs written for HTCondor 8.x–25.0 take the branches they expect.
_TEMPLATE_NAME = re.compile(r"[A-Za-z0-9_]+")
COMPAT_VERSION = (25, 0, 0)

_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*)\s*=(.*)\Z", re.S)
_MULTILINE = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*)\s*@=\s*(\S*)\s*\Z")
_KEYWORD = re.compile(r"(if|elif|else|endif|include|use|error|warning)\b(.*)\Z", re.I | re.S)
_VERSION = re.compile(r"version\s*(==|!=|<=|>=|<|>)\s*(\S*)\s*\Z", re.I)
_VERSION_LITERAL = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?\Z")
_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\Z")
MAX_NESTING = 20

ReadFile = Callable[[str], str]
RunCommand = Callable[[str], str]


@dataclass
class _Cond:
    """One open ``if``: whether any branch was taken, whether this one is live."""

    line: int
    parent_live: bool
    taken: bool
    live: bool
    seen_else: bool = False


@dataclass
class ParseState:
    """Everything reading needs: the table being built and the outside world.

    ``lower`` are the layers below the files (defaults, host facts), used
    by ``defined``, self-references and parse-time expansion.
    ``read_file`` is None when includes are not possible (pure text);
    ``run_command`` is None unless the caller allowed commands.
    """

    table: dict[str, Entry]
    lower: list[Mapping[str, Entry]]
    env: Mapping[str, str]
    subsys: str | None = None
    localname: str | None = None
    read_file: ReadFile | None = None
    run_command: RunCommand | None = None
    warnings: list[str] = field(default_factory=list)
    include_stack: list[str] = field(default_factory=list)

    def lookup(self, name: str) -> Entry | None:
        return find(name, [self.table, *self.lower], self.subsys, self.localname)

    def expander(self) -> Expander:
        return Expander(self.lookup, self.env)


@dataclass(frozen=True)
class _Origin:
    """Where text spliced in by ``use`` is reported: the ``use`` line itself."""

    file: str
    line: int
    via: str


def logical_lines(text: str, file: str) -> list[tuple[int, str]]:
    """Join continuations (trailing backslash) and ``NAME @=TAG ... @TAG`` blocks.

    A comment line inside a continuation is dropped and ends it, as in
    HTCondor (which then reads the next line as a statement of its own).
    Each logical line carries the number of its first physical line.
    """
    out: list[tuple[int, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start = i + 1
        line = lines[i]
        i += 1
        m = _MULTILINE.match(line.strip())
        if m:
            tag = "@" + m.group(2)
            body: list[str] = []
            while i < len(lines) and lines[i].strip() != tag:
                body.append(lines[i].strip())
                i += 1
            if i >= len(lines):
                raise ConfigError(file, start, f"{m.group(1)} @= block has no closing {tag}")
            i += 1
            out.append((start, f"{m.group(1)} = " + "\n".join(body)))
            continue
        parts = []
        while line.rstrip().endswith("\\"):
            parts.append(line.rstrip()[:-1])
            if i >= len(lines):
                line = ""
                break
            if lines[i].lstrip().startswith("#"):
                i += 1
                line = ""
                break
            line = lines[i].lstrip()
            i += 1
        parts.append(line)
        out.append((start, "".join(parts)))
    return out


def parse_text(state: ParseState, text: str, file: str, _origin: _Origin | None = None) -> None:
    """Read ``text`` (from ``file``) into ``state.table``."""
    conds: list[_Cond] = []
    for lineno, raw in logical_lines(text, file):
        where = (_origin.file, _origin.line) if _origin else (file, lineno)
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        live = conds[-1].live if conds else True
        assign = _ASSIGN.match(line)
        kw = None if assign else _KEYWORD.match(line)
        try:
            if kw and kw.group(1).lower() in ("if", "elif", "else", "endif"):
                _conditional(state, conds, kw.group(1).lower(), kw.group(2), lineno, where)
                continue
            if not live:
                continue
            if assign is not None:
                _assign(state, assign.group(1), assign.group(2).strip(), where, _origin)
            elif kw:
                _statement(state, kw.group(1).lower(), kw.group(2), file, where, _origin)
            else:
                raise ConfigError(*where, f"expected NAME = value, found {line[:60]!r} (missing '=')")
        except ConfigError as e:
            if _origin and not e.message.startswith("in use "):
                raise ConfigError(_origin.file, _origin.line, f"in {_origin.via}: {e.message}") from None
            raise
    if conds:
        where = (_origin.file, _origin.line) if _origin else (file, conds[-1].line)
        raise ConfigError(*where, "'if' is never closed by 'endif'")


def _assign(
    state: ParseState, name: str, value: str, where: tuple[str, int], origin: _Origin | None
) -> None:
    value = resolve_self_reference(state, name, value)
    state.table[name.upper()] = Entry(name, value, where[0], where[1], origin.via if origin else None)


def resolve_self_reference(state: ParseState, name: str, value: str) -> str:
    """Replace ``$(NAME)`` in NAME's own value by the value it had until now.

    For ``SCHEDD.X = $(X) more`` the unqualified ``$(X)`` counts as a self
    reference too, as in HTCondor.
    """
    base = name.rsplit(".", 1)[-1]
    names = {name.upper(), base.upper()}
    if "$" not in value:
        return value
    pattern = re.compile(
        r"\$\((" + "|".join(re.escape(n) for n in names) + r")(?::([^()]*))?\)", re.I
    )
    if not pattern.search(value):
        return value
    layers = [state.table, *state.lower]
    prev = find(name, layers, None, None)
    if prev is None and base != name:
        prev = find(base, layers, None, None)

    def replace(m: re.Match[str]) -> str:
        if prev is not None:
            return prev.value
        return m.group(2) or ""

    return pattern.sub(replace, value)


def _conditional(
    state: ParseState, conds: list[_Cond], kw: str, rest: str, lineno: int, where: tuple[str, int]
) -> None:
    rest = rest.strip()
    if kw == "if":
        parent = conds[-1].live if conds else True
        value = _condition(state, rest, where) if parent else False
        conds.append(_Cond(lineno, parent, value, value))
        return
    if not conds:
        raise ConfigError(*where, f"'{kw}' without a matching 'if'")
    top = conds[-1]
    if kw == "endif":
        conds.pop()
        return
    if top.seen_else:
        raise ConfigError(*where, f"'{kw}' after 'else'")
    if kw == "else":
        top.seen_else = True
        top.live = top.parent_live and not top.taken
    else:
        value = top.parent_live and not top.taken and _condition(state, rest, where)
        top.live = value
    top.taken = top.taken or top.live


def _condition(state: ParseState, text: str, where: tuple[str, int]) -> bool:
    """Evaluate an ``if``: constants, ``defined NAME``, ``version OP x.y.z``, ``!``."""
    text = text.strip()
    if text.startswith("!"):
        return not _condition(state, text[1:], where)
    words = text.split(None, 1)
    if words and words[0].lower() == "defined":
        if len(words) < 2:
            raise ConfigError(*where, "'defined' needs a knob name")
        name = state.expander().expand(words[1], *where).strip()
        entry = state.lookup(name)
        return entry is not None and entry.value.strip() != ""
    expanded = state.expander().expand(text, *where).strip()
    m = _VERSION.match(expanded)
    if m:
        lit = _VERSION_LITERAL.match(m.group(2))
        if not lit:
            raise ConfigError(*where, f"{text!r}: version must be written major.minor[.patch]")
        want = tuple(int(p or 0) for p in lit.groups())
        have = COMPAT_VERSION
        op = m.group(1)
        return {
            "==": have == want, "!=": have != want, "<": have < want,
            "<=": have <= want, ">": have > want, ">=": have >= want,
        }[op]
    low = expanded.lower()
    if low in ("", "false", "no", "f"):
        return False
    if low in ("true", "yes", "t"):
        return True
    if _NUMBER.match(expanded):
        return float(expanded) != 0
    raise ConfigError(
        *where,
        f"{text!r} is not a valid if condition (use a boolean, 'defined NAME' or 'version OP x.y.z';"
        " complex conditionals are not supported)",
    )


def _statement(
    state: ParseState, kw: str, rest: str, file: str, where: tuple[str, int], origin: _Origin | None
) -> None:
    head, colon, body = rest.partition(":")
    if not colon:
        raise ConfigError(*where, f"'{kw}' needs a ':' (as in '{kw} : ...')")
    head, body = head.strip(), body.strip()
    if kw == "error":
        raise ConfigError(*where, state.expander().expand(body, *where))
    if kw == "warning":
        state.warnings.append(f"{where[0]}:{where[1]}: {state.expander().expand(body, *where)}")
        return
    if kw == "use":
        _use(state, head, body, where, origin)
        return
    _include(state, head.lower(), body, file, where)


def _template_refs(text: str, where: tuple[str, int]) -> list[tuple[str, list[str]]]:
    """Parse ``A, B(x, y) C`` into [(A, []), (B, [x, y]), (C, [])]."""
    refs: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(text):
        if text[i] in " \t,":
            i += 1
            continue
        m = _TEMPLATE_NAME.match(text, i)
        if not m:
            raise ConfigError(*where, f"bad template name in 'use': {text[i:]!r}")
        name, i = m.group(0), m.end()
        args: list[str] = []
        if i < len(text) and text[i] == "(":
            close = matching_paren(text, i)
            if close < 0:
                raise ConfigError(*where, f"unclosed '(' after {name} in 'use'")
            args = [a.strip() for a in split_args(text[i + 1 : close])]
            i = close + 1
        refs.append((name, args))
    return refs


def _use(
    state: ParseState, category: str, body: str, where: tuple[str, int], origin: _Origin | None
) -> None:
    cat = category.upper()
    if cat not in templates.CATEGORIES:
        known = ", ".join(sorted(templates.CATEGORIES))
        raise ConfigError(*where, f"unknown 'use' category {category!r} (known: {known})")
    refs = _template_refs(body, where)
    if not refs:
        raise ConfigError(*where, f"'use {category} :' names no template")
    depth = origin.via.count("use ") if origin else 0
    if depth >= MAX_NESTING:
        raise ConfigError(*where, "templates nest too deeply (a template uses itself?)")
    for name, args in refs:
        tmpl = templates.lookup(cat, name)
        if tmpl is None:
            known = ", ".join(templates.names(cat))
            raise ConfigError(*where, f"unknown template {cat}:{name} (known: {known})")
        via = f"use {tmpl.category}:{tmpl.name}"
        if origin:
            via = f"{origin.via} > {via}"
        text = templates.instantiate(tmpl, args)
        parse_text(state, text, where[0], _Origin(where[0], where[1], via))


def _include(state: ParseState, mode: str, body: str, file: str, where: tuple[str, int]) -> None:
    if mode not in ("", "ifexist", "command"):
        raise ConfigError(*where, f"unknown include mode {mode!r} (use 'include', 'include ifexist' or 'include command')")
    target = state.expander().expand(body, *where).strip()
    command = mode == "command"
    if target.endswith("|"):
        command, target = True, target[:-1].strip()
    if not target:
        raise ConfigError(*where, "include names nothing")
    if command:
        if state.run_command is None:
            raise ConfigError(
                *where,
                f"refusing to run include command {target!r}: commands in config are not allowed"
                " (pass allow_commands=True to permit them)",
            )
        try:
            text = state.run_command(target)
        except (OSError, RuntimeError) as e:
            raise ConfigError(*where, f"include command {target!r} failed: {e}") from None
        parse_text(state, text, f"<command: {target}>")
        return
    if state.read_file is None:
        raise ConfigError(*where, f"cannot include {target!r}: this config was given as text, not read from files")
    if not posixpath.isabs(target) and not file.startswith("<"):
        target = posixpath.join(posixpath.dirname(file), target)
    target = posixpath.normpath(target)
    if target in state.include_stack:
        chain = " -> ".join([*state.include_stack[state.include_stack.index(target) :], target])
        raise ConfigError(*where, f"include loop: {chain}")
    try:
        text = state.read_file(target)
    except FileNotFoundError:
        if mode == "ifexist":
            return
        raise ConfigError(*where, f"included file {target!r} does not exist") from None
    except OSError as e:
        raise ConfigError(*where, f"cannot read included file {target!r}: {e.strerror or e}") from None
    state.include_stack.append(target)
    try:
        parse_text(state, text, target)
    finally:
        state.include_stack.pop()
