"""Parse a submit description once; expand it into clusters of job ads.

``parse_submit`` reads the text (includes, if/else, queue statements, item
lists) and checks its syntax; ``SubmitDescription.expand`` builds the job ads
(see expansion.py for how per-proc work is kept small). Nothing is returned
until the whole description expanded cleanly, so a schedd never half-submits.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from roost.submit import commands, lexer
from roost.submit.builder import BuildContext, parse_bool
from roost.submit.errors import SubmitError, SubmitWarning
from roost.submit.expansion import QueueBlock, block_procs, expand_block
from roost.submit.include import included_text
from roost.submit.jobads import ClusterSubmission
from roost.submit.macros import Expander, classad_number
from roost.submit.queue import RunCommand, WriteText, _read_text, load_items, parse_queue_args

MAX_INCLUDE_DEPTH = 20


@dataclass
class SubmitDescription:
    """A parsed, validated submit description (no cluster ids assigned yet)."""

    file: str | None
    cwd: str
    env: Mapping[str, str]
    blocks: list[QueueBlock]
    warnings: list[SubmitWarning] = field(default_factory=list)
    file_size: Callable[[str], int] | None = None
    check_path: Callable[[str, str], str | None] | None = None
    #: macro names used while parsing (queue arguments, if conditions, include paths)
    parse_used: set[str] = field(default_factory=set)

    def num_procs(self) -> int:
        return sum(block_procs(b) for b in self.blocks)

    def line_of(self, *keys: str) -> int:
        """The line that sets the first of ``keys`` (submit commands, ``MY.Attr`` for
        ``+Attr``) the description sets, in its first queue block that does; 0: none.
        How a refusal the schedd gives an attribute is pinned to the file."""
        for key in keys:
            for block in self.blocks:
                line = block.lines.get(key.lower(), 0)
                if line:
                    return line
        return 0

    def expand(
        self,
        cluster_id: int = 1,
        qdate: int = 0,
        owner: str | None = None,
        *,
        arch: str = "X86_64",
        opsys: str = "LINUX",
    ) -> list[ClusterSubmission]:
        """Job ads for every queue statement: one cluster (or none, when every queue
        statement is empty), procs numbered on from one statement to the next, as
        condor_submit does (it stopped starting a new cluster for a new executable)."""
        ctx = BuildContext(file=self.file, cwd=self.cwd, env=self.env, owner=owner, qdate=qdate,
                           arch=arch, opsys=opsys, file_size=self.file_size, check_path=self.check_path)
        out: list[ClusterSubmission] = []
        used: set[str] = set()
        for block in self.blocks:
            if block_procs(block) == 0:
                continue
            if not out:
                out.append(ClusterSubmission(cluster_id, {}, []))
            expand_block(block, out[0], ctx, used)
        if out:
            out[0].warnings[:0] = self.warnings + _unused_warnings(self, used)
        return out


def _unused_warnings(desc: SubmitDescription, used: set[str]) -> list[SubmitWarning]:
    seen: dict[str, tuple[str, int]] = {}
    for b in desc.blocks:
        for k in b.keys:
            seen.setdefault(k.lower(), (k, b.lines.get(k.lower(), 0)))
    out = []
    for low, (k, line) in seen.items():
        if low in used or low in desc.parse_used or commands.is_known_key(low) or low.startswith(("+", "my.", "request_")):
            continue
        out.append(SubmitWarning(f"the line '{k} = ...' was unused by condor_submit. Is it a typo?", desc.file, line))
    return out


# -- parsing ------------------------------------------------------------------

_COND_DEFINED = re.compile(r"(!?)\s*defined\s+(\S+)\s*\Z", re.IGNORECASE)
_COND_VERSION = re.compile(r"version\s*(>=|<=|==|!=|>|<)\s*([\d.]+)\s*\Z", re.IGNORECASE)


def _condition(text: str, exp: Expander, file: str | None, line: int) -> bool:
    m = _COND_DEFINED.match(text)
    if m:
        got = exp.lookup(m.group(2))
        res = got is not None and got != ""
        return not res if m.group(1) else res
    s = exp.expand(text).strip()
    m = _COND_VERSION.match(s)
    if m:
        have = (25, 0, 0)
        want = tuple(int(x) for x in m.group(2).split(".") if x)
        op = m.group(1)
        return {">=": have >= want, "<=": have <= want, "==": have[:len(want)] == want,
                "!=": have[:len(want)] != want, ">": have > want, "<": have < want}[op]
    low = s.lower()
    if low in ("true", "yes", "t", "y"):
        return True
    if low in ("false", "no", "f", "n", ""):
        return False
    try:
        return float(s) != 0
    except ValueError:
        pass
    # condor_submit evaluates only defined/version/boolean/number conditions
    raise SubmitError(f"'{s}' is not a valid if condition: complex conditionals are not supported "
                      "(use 'defined NAME', 'version >= X.Y', or a value that expands to true/false)",
                      file=file, line=line)


def parse_submit(
    text: str,
    *,
    file: str | None = None,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, str] | None = None,
    append: list[str] | None = None,
    read_text: Callable[[str], str] = _read_text,
    stdin_text: str | None = None,
    file_size: Callable[[str], int] | None = None,
    require_queue: bool = True,
    check_path: Callable[[str, str], str | None] | None = None,
    run_command: RunCommand | None = None,
    write_text: WriteText | None = None,
) -> SubmitDescription:
    """Parse and validate a submit description.

    ``overrides`` are command-line ``name=value`` assignments (they act as if
    at the top of the file); ``append`` are ``-append`` lines, which act as if
    just before the first queue statement. Files named by ``include`` and
    ``queue ... from file`` are read through ``read_text``; ``queue ... from CMD |`` and
    ``include : CMD |`` run CMD through ``run_command`` (none given: CommandNotAllowed),
    and ``include command into CACHE`` writes CACHE through ``write_text``.
    """
    cwd = cwd if cwd is not None else os.getcwd()
    env = dict(env) if env is not None else {}
    stmts: list[lexer.Statement] = []
    for k, v in (overrides or {}).items():
        stmts.append(lexer.Assign(k, v, 0, "<command line>"))
    body = lexer.lex(text, file)
    extra: list[lexer.Statement] = []
    for line in append or []:
        extra.extend(lexer.lex(line, "<-append>"))
    qi = next((i for i, s in enumerate(body) if isinstance(s, lexer.Queue)), len(body))
    stmts.extend(body[:qi] + extra + body[qi:])

    macros: dict[str, str] = {}
    lines: dict[str, int] = {}
    keys: list[str] = []
    blocks: list[QueueBlock] = []
    warnings: list[SubmitWarning] = []
    # if-stack entries: (taking this branch now, some branch already taken, parent active)
    stack: list[tuple[bool, bool, bool]] = []
    exp = Expander(macros, env=env, cwd=cwd, evaluate=classad_number)

    def active() -> bool:
        return not stack or stack[-1][0]

    def run(seq: list[lexer.Statement], depth: int) -> None:
        for st in seq:
            if isinstance(st, lexer.Conditional):
                w = st.word
                if w == "if":
                    parent = active()
                    take = parent and _condition(st.condition, exp, st.file, st.line)
                    stack.append((take, take, parent))
                elif w in ("elif", "else"):
                    if not stack:
                        raise SubmitError(f"'{w}' without 'if'", file=st.file, line=st.line)
                    _, done, parent = stack[-1]
                    take = parent and not done and (w == "else" or _condition(st.condition, exp, st.file, st.line))
                    stack[-1] = (take, done or take, parent)
                else:
                    if not stack:
                        raise SubmitError("'endif' without 'if'", file=st.file, line=st.line)
                    stack.pop()
                continue
            if not active():
                continue
            if isinstance(st, lexer.Assign):
                key = st.key
                if key.startswith("+"):  # condor_submit files +Attr under MY.Attr
                    key = "MY." + key[1:]
                low = key.lower()
                if low not in macros:
                    keys.append(key)
                macros[low] = st.value
                lines[low] = st.line
            elif isinstance(st, lexer.Include):
                if depth >= MAX_INCLUDE_DEPTH:
                    raise SubmitError("include nested too deeply", file=st.file, line=st.line)
                got = included_text(st, exp.expand, cwd=cwd, read_text=read_text, run_command=run_command,
                                    write_text=write_text, warnings=warnings)
                if got is not None:
                    run(lexer.lex(got[1], got[0]), depth + 1)
            elif isinstance(st, lexer.Queue):
                args = exp.expand(st.args)
                spec = parse_queue_args(args, st.rows, file=st.file, line=st.line)
                count = _count(spec.count_expr, st)
                fail_empty = _flag(exp, "submit_fail_empty_matches", "SubmitFailEmptyMatches", False, st)
                warn_empty = _flag(exp, "submit_warn_empty_matches", "SubmitWarnEmptyMatches", True, st)

                def warn(message: str, st: lexer.Queue = st) -> None:
                    warnings.append(SubmitWarning(message, st.file, st.line))

                items = load_items(spec, cwd=cwd, read_text=read_text, stdin_text=stdin_text,
                                   run_command=run_command, fail_empty=fail_empty,
                                   warn=warn if warn_empty else None)
                blocks.append(QueueBlock(dict(macros), dict(lines), list(keys), spec, count, items))

    run(stmts, 0)
    if stack:
        raise SubmitError("'if' without 'endif'", file=file, line=0)
    if not blocks and require_queue:
        raise SubmitError("no 'queue' statement: nothing to submit", file=file)
    if blocks and not any(block_procs(b) for b in blocks):
        # condor_submit's words; the caller reports "Submitting job(s)." and no cluster
        warnings.append(SubmitWarning(f'"{file or "(stdin)"}" has only empty "queue" commands -- no jobs queued', file))
    return SubmitDescription(file, cwd, env, blocks, warnings, file_size, check_path, set(exp.used))


def _flag(exp: Expander, name: str, alt: str, default: bool, st: lexer.Queue) -> bool:
    """A boolean submit variable as the queue statement ``st`` sees it."""
    v = exp.lookup(name)
    if v is None or not v.strip():
        v = exp.lookup(alt)
    if v is None or not v.strip():
        return default
    b = parse_bool(v)
    if b is None:
        raise SubmitError(f"{name} = {v.strip()}: expected true or false", file=st.file, line=st.line)
    return b


def _count(expr: str, st: lexer.Queue) -> int:
    """The count before a queue's items: a number or a ClassAd expression giving one
    (``queue 2*3``). Anything else (``queue abc``: a variable list without in/from/matching)
    is refused, as condor_submit's "Invalid Queue count expression"."""
    s = expr.strip()
    try:
        n = int(s)
    except ValueError:
        got = classad_number(s)
        if type(got) not in (int, float):  # (the ClassAd's undefined is an int enum)
            raise SubmitError(f"queue {expr}: invalid queue count expression: expected a number of jobs, "
                              "or 'queue [N] [vars] in|from|matching ...'", file=st.file, line=st.line) from None
        n = int(got)
    if n < 0 or n >= 2**31 - 1:
        raise SubmitError(f"queue {expr}: the queue count is out of range", file=st.file, line=st.line)
    return n
