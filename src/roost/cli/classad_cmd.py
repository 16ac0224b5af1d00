"""``roost classad``: evaluate, match and convert ClassAds from the command line.

    roost classad match JOB.ad MACHINES.ads [-json]
    roost classad eval [-file AD] [-target AD] EXPR|NAME=EXPR ...
    roost classad convert [-json|-jsonl|-old|-new] FILE

Ad files may be in old format (``Name = expr`` lines, ads separated by blank
lines, as ``condor_q -long``/``condor_status -long`` print them), new format
(``[ ... ]``) or JSON (``condor_q -json``); the format is detected. ``-`` reads
standard input. A file that cannot be read or parsed is reported on one line,
``roost classad: FILE:LINE:COLUMN: problem``, with exit status 1.

Matching is HTCondor's symmetric match: the job's Requirements must be true
with the machine as TARGET and the machine's Requirements true with the job as
TARGET. A machine ad without Requirements falls back to its START expression
(hand-written ads often have only START; ``condor_status`` ads have both).
Non-numeric Rank counts as 0, as in the negotiator.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from roost.classad.adstream import iter_ads
from roost.classad.errors import ClassAdSyntaxError
from roost.classad.values import Value
from roost.core.analyze import failing_clause, show_value, slot_refusal
from roost.core.analyze import truth as _truth

USAGE = """\
usage: roost classad <command> [args...]

commands:
  match JOB.ad MACHINES.ads [-json]
        match one job ad against every machine ad, best job Rank first
  eval [-file AD] [-target AD] EXPR|NAME=EXPR ...
        evaluate expressions (in the context of AD, TARGET being the -target
        ad); NAME=EXPR arguments add attributes to the ad first
  convert [-json|-jsonl|-old|-new] FILE
        re-print the ads in FILE (any format) in another form (default -new)

FILE may be '-' for standard input."""


class UsageError(Exception):
    """Bad command-line arguments: reported with the usage text, exit status 2."""


class InputError(Exception):
    """An input file that cannot be read or parsed: one line, exit status 1."""


# ---------------------------------------------------------------------------
# Input


def _read_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            return f.read()
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror or e}") from None


def _syntax_line(e: ClassAdSyntaxError, path: str) -> str:
    return f"{e.file or path}:{e.line}:{e.column}: {e.message}"


def read_ads(path: str) -> list[Any]:
    """Every ad in the file at ``path`` (format detected); InputError if unreadable or bad."""
    text = _read_text(path)
    name = "<stdin>" if path == "-" else path
    try:
        return list(iter_ads(text, file=name))
    except ClassAdSyntaxError as e:
        raise InputError(_syntax_line(e, name)) from None


def read_one_ad(path: str) -> Any:
    ads = read_ads(path)
    if not ads:
        raise InputError(f"{path}: no ClassAd found")
    return ads[0]


# ---------------------------------------------------------------------------
# Showing values


def _rank_number(value: Any) -> float:
    """Rank as the negotiator uses it: numbers and booleans count, anything else is 0."""
    if type(value) in (int, float, bool):
        return float(value)
    return 0.0


def _json_value(value: Any) -> Any:
    if type(value) in (int, bool, str) or (type(value) is float and math.isfinite(value)):
        return value
    if value is Value.Undefined:
        return None
    return show_value(value)


# ---------------------------------------------------------------------------
# match


@dataclass
class MatchRow:
    """One machine's result against the job."""

    name: str
    matches: bool
    rejected_by: list[str]
    job_rank: Any
    machine_rank: Any
    clauses: list[str]  # for each rejection, the && clause that caused it ("" if none found)


def _has(ad: Any, name: str) -> bool:
    return name in ad


def _eval(ad: Any, name: str, target: Any) -> Any:
    # lazy: no cost reason (roost.core.analyze loads it at import); the roost.classad split owns this line
    from roost.classad.evaluate import eval_attr

    return eval_attr(ad, name, target)


def match_one(job: Any, machine: Any, index: int) -> MatchRow:
    """The symmetric match of ``job`` and ``machine``, with the side(s) that refused."""
    reasons: list[str] = []
    clauses: list[str] = []
    if _has(job, "Requirements"):
        why = _truth(_eval(job, "Requirements", machine))
        if why:
            reasons.append(f"job Requirements {why}")
            clauses.append(failing_clause(job, "Requirements", machine))
    else:
        reasons.append("job has no Requirements")
        clauses.append("")

    refusal = slot_refusal(machine, job)
    if refusal is not None:
        policy, why, clause = refusal
        if why == "missing":
            reasons.append("machine has no Requirements or START")
            clauses.append("")
        else:
            reasons.append(f"machine {policy} {why}")
            clauses.append(clause)

    name = _eval(machine, "Name", None)
    if type(name) is not str:
        name = _eval(machine, "Machine", None)
    if type(name) is not str:
        name = f"ad #{index + 1}"
    job_rank = _eval(job, "Rank", machine) if _has(job, "Rank") else 0
    machine_rank = _eval(machine, "Rank", job) if _has(machine, "Rank") else 0
    return MatchRow(name, not reasons, reasons, job_rank, machine_rank, clauses)


def match_rows(job: Any, machines: Sequence[Any]) -> list[MatchRow]:
    """Every machine's row: matching machines first, each group by job Rank, best first."""
    rows = [match_one(job, m, i) for i, m in enumerate(machines)]
    rows.sort(key=lambda r: (not r.matches, -_rank_number(r.job_rank)))
    return rows


def _job_label(job: Any) -> str:
    cluster, proc = _eval(job, "ClusterId", None), _eval(job, "ProcId", None)
    owner = _eval(job, "Owner", None)
    label = f"job {cluster}.{proc}" if type(cluster) is int and type(proc) is int else "job"
    return f"{label} ({owner})" if type(owner) is str else label


def _summary(rows: list[MatchRow]) -> str:
    n = sum(r.matches for r in rows)
    best = next((r.name for r in rows if r.matches), None)
    return f"{n} of {len(rows)} machines match" + (f"; best: {best}" if best else "")


def format_match_table(job: Any, rows: list[MatchRow], source: str) -> str:
    headers = ("Name", "Match", "Rejected by", "Job Rank", "Machine Rank")
    table = [
        (
            r.name,
            "yes" if r.matches else "no",
            "; ".join(r.rejected_by) or "-",
            show_value(r.job_rank),
            show_value(r.machine_rank),
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(row[i]) for row in table)) if table else len(h) for i, h in enumerate(headers)]
    right = (False, False, False, True, True)

    def line(cells: Sequence[str]) -> str:
        out = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)]
        return "  ".join(out).rstrip()

    head = f"Matching {_job_label(job)} against {len(rows)} machine ad(s) from {source}"
    body = [line(headers)] + [line(row) for row in table]
    why = [
        f"  {r.name}: {reason}: {clause}"
        for r in rows
        for reason, clause in zip(r.rejected_by, r.clauses)
        if clause
    ]
    if why:
        body += ["", "Why not:", *why]
    return "\n".join([head, "", *body, "", _summary(rows)]) + "\n"


def format_match_json(rows: list[MatchRow]) -> str:
    doc = {
        "machines": [
            {
                "Name": r.name,
                "Matches": r.matches,
                "RejectedBy": r.rejected_by,
                "FailingClauses": [c for c in r.clauses if c],
                "JobRank": _json_value(r.job_rank),
                "MachineRank": _json_value(r.machine_rank),
            }
            for r in rows
        ],
        "matching": sum(r.matches for r in rows),
        "total": len(rows),
        "best": next((r.name for r in rows if r.matches), None),
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def cmd_match(args: list[str], out: TextIO) -> int:
    as_json = False
    files: list[str] = []
    for a in args:
        if a in ("-json", "--json"):
            as_json = True
        elif a.startswith("-") and a != "-":
            raise UsageError(f"match: unknown option {a}")
        else:
            files.append(a)
    if len(files) != 2:
        raise UsageError("match needs a job ad file and a machine ads file")
    job = read_one_ad(files[0])
    machines = read_ads(files[1])
    rows = match_rows(job, machines)
    out.write(format_match_json(rows) if as_json else format_match_table(job, rows, files[1]))
    return 0


# ---------------------------------------------------------------------------
# eval


def _split_assignment(arg: str) -> tuple[str, str] | None:
    """``NAME = EXPR`` (a single ``=``, not ``==``/``=?=``/``=!=``) as (name, expr text)."""
    eq = arg.find("=")
    if eq <= 0 or arg[eq + 1 : eq + 2] in ("=", "?", "!") or arg[eq - 1] in "!<>=":
        return None
    name = arg[:eq].strip()
    if not name or not (name[0].isalpha() or name[0] == "_") or not all(
        c.isalnum() or c == "_" for c in name
    ):
        return None
    return name, arg[eq + 1 :]


def cmd_eval(args: list[str], out: TextIO) -> int:
    # lazy: no cost reason (every command parses ads); the roost.classad split owns these lines
    from roost.classad.classad import ClassAd, ExprTree
    from roost.classad.evaluate import evaluate
    from roost.classad.parser import parse_expr

    ad: Any = None
    target: Any = None
    exprs: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-file", "-target"):
            if i + 1 >= len(args):
                raise UsageError(f"eval: {a} needs a file name")
            if a == "-file":
                ad = read_one_ad(args[i + 1])
            else:
                target = read_one_ad(args[i + 1])
            i += 2
            continue
        exprs.append(a)
        i += 1
    if not exprs:
        raise UsageError("eval needs at least one expression")
    if ad is None:
        ad = ClassAd()
    for text in exprs:
        assignment = _split_assignment(text)
        try:
            node = parse_expr(text if assignment is None else assignment[1])
            if assignment is not None:
                ad[assignment[0]] = ExprTree(node)
                continue
        except ClassAdSyntaxError as e:
            raise InputError(f"in argument {text!r}: column {e.column}: {e.message}") from None
        out.write(show_value(evaluate(node, ad, target)) + "\n")
    return 0


# ---------------------------------------------------------------------------
# convert

FORMATS = ("-json", "-jsonl", "-old", "-new")


def convert_text(ads: Sequence[Any], fmt: str) -> str:
    """``ads`` printed in one of :data:`FORMATS`."""
    # lazy: only `convert` prints ads (~3 ms); the roost.classad split owns these lines
    from roost.classad.jsonform import ads_to_json, ads_to_jsonl
    from roost.classad.printing import print_new, print_old

    if fmt == "-json":
        return ads_to_json(ads)
    if fmt == "-jsonl":
        return ads_to_jsonl(ads)
    if fmt == "-old":
        return "\n".join(print_old(ad) for ad in ads)
    return "".join(print_new(ad) + "\n" for ad in ads)


def cmd_convert(args: list[str], out: TextIO) -> int:
    fmt = "-new"
    files: list[str] = []
    for a in args:
        if a in FORMATS:
            fmt = a
        elif a.startswith("-") and a != "-":
            raise UsageError(f"convert: unknown option {a} (use one of {', '.join(FORMATS)})")
        else:
            files.append(a)
    if len(files) != 1:
        raise UsageError("convert needs exactly one file")
    out.write(convert_text(read_ads(files[0]), fmt))
    return 0


COMMANDS = {"match": cmd_match, "eval": cmd_eval, "convert": cmd_convert}


def main(argv: list[str], out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Entry point for ``roost classad ...``; returns the exit status."""
    if out is None:
        out = sys.stdout
        # Strings hold invalid UTF-8 bytes as lone surrogates (surrogateescape);
        # write those bytes back out as HTCondor would rather than crash.
        if hasattr(out, "reconfigure"):
            out.reconfigure(errors="surrogateescape")
    err = err or sys.stderr
    if not argv or argv[0] in ("-h", "-help", "--help", "help"):
        (out if argv else err).write(USAGE + "\n")
        return 0 if argv else 2
    command = COMMANDS.get(argv[0])
    try:
        if command is None:
            raise UsageError(f"unknown command '{argv[0]}'")
        return command(argv[1:], out)
    except UsageError as e:
        err.write(f"roost classad: {e}\n\n{USAGE}\n")
        return 2
    except InputError as e:
        err.write(f"roost classad: {e}\n")
        return 1
