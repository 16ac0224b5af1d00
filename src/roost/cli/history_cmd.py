"""``roost history``: jobs that have left the queue, newest first, as condor_history shows them."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from roost.api.errors import PoolError
from roost.api.jobids import is_job_id, parse_job_id
from roost.api.schedd import Schedd
from roost.cli.jobview import STATUS_LETTERS, command
from roost.cli.options import add_pool_args
from roost.cli.printf import _date, _duration
from roost.cli.restrict import Restriction, check_exprs, error_line, split_af, split_format
from roost.vocabulary import JobStatus

ATTRS = ["ClusterId", "ProcId", "Owner", "QDate", "RemoteWallClockTime", "JobStatus", "CompletionDate",
         "EnteredCurrentStatus", "Cmd", "Arguments", "Args", "RemoteUserCpu", "TransferringInput",
         "TransferringOutput", "TransferQueued"]


def main(argv: list[str]) -> int:
    argv, af_flags = split_af(argv)
    try:
        argv, formats = split_format(argv, shortest=2)
    except ValueError as e:
        print(f"roost history: {e}", file=sys.stderr)
        return 2
    p = argparse.ArgumentParser(prog="roost history", add_help=False,
                                description="Show finished jobs (like condor_history). Positional "
                                            "arguments are job ids (C or C.P) and user names.")
    p.add_argument("-h", "-help", "--help", action="help", help="show this help and exit")
    p.add_argument("restrict", nargs="*", metavar="ID|USER")
    p.add_argument("-constraint", "--constraint", default=None, metavar="EXPR")
    p.add_argument("-limit", "-match", "--limit", "--match", dest="limit", type=int, default=None,
                   help="at most this many jobs")
    p.add_argument("-since", "--since", default=None, metavar="ID|EXPR",
                   help="stop at this job (C.P, or C: its first job met) or where this expression is true")
    p.add_argument("-completedsince", "--completedsince", type=int, default=None, metavar="TIME",
                   help="only jobs that completed after this Unix time")
    p.add_argument("-userlog", "--userlog", default=None, metavar="FILE",
                   help="the jobs of a job event log instead of the schedd's history")
    p.add_argument("-file", "--file", default=None, metavar="FILE",
                   help="the jobs of an HTCondor history file (ads each ended by a *** line)")
    p.add_argument("-forwards", "--forwards", action="store_true", help="oldest first (default: newest first; a -userlog is read in its order)")
    p.add_argument("-backwards", "--backwards", action="store_false", dest="forwards", help="newest first")
    p.add_argument("-af", "-autoformat", "--af", dest="af", nargs="+", metavar="ATTR")
    p.add_argument("-format", metavar="FMT ATTR", help="printf-style columns (repeatable; see roost q)")
    p.add_argument("-attributes", "--attributes", default=None, metavar="A,B", help="only these attributes")
    p.add_argument("-long", "-l", "--long", action="store_true")
    p.add_argument("-json", "--json", action="store_true")
    p.add_argument("-xml", "--xml", action="store_true")
    p.add_argument("-wide", "--wide", action="store_true")
    add_pool_args(p)
    ns = p.parse_args(argv)
    try:
        check_exprs(list(ns.af or ()), "-af")
        check_exprs([e for _f, e in formats], "-format")
    except ValueError as e:
        print(f"roost history: {e}", file=sys.stderr)
        return 2
    r = Restriction.parse(ns.restrict)
    raw = ns.af or ns.long or ns.json or ns.xml or ns.attributes
    projection = None if raw else ATTRS
    if ns.af and all(a.isidentifier() for a in ns.af):
        projection = ns.af
    if ns.attributes:
        projection = [a.strip() for a in ns.attributes.split(",") if a.strip()]
    if formats:
        exprs = [e for _f, e in formats]
        projection = exprs if all(e.isidentifier() for e in exprs) else None
    constraint = r.constraint(ns.constraint)
    if ns.completedsince is not None:
        done = f"CompletionDate > {ns.completedsince}"
        constraint = f"({constraint}) && {done}" if constraint else done
    since_id = ns.since if ns.since and is_job_id(ns.since) else None
    if ns.since and since_id is None and projection is not None:
        projection = None  # the expression may read any attribute
    try:
        if ns.userlog:
            jobs = _userlog_jobs(ns.userlog, constraint, r)
        elif ns.file:
            jobs = _file_jobs(ns.file, constraint, r)
            if not ns.forwards:
                jobs.reverse()  # a history file is oldest first; condor_history prints newest first
        else:
            jobs = Schedd(name=ns.name, pool=ns.pool).history(
                constraint, projection, match=None if ns.since or ns.forwards else ns.limit,
                owner=r.owner(), ids=r.ids)
            if ns.forwards:
                jobs.reverse()
        if ns.since:
            jobs = _until(jobs, ns.since, since_id)
        if ns.limit is not None:
            jobs = jobs[:max(0, ns.limit)]
    except PoolError as e:
        print(error_line("roost history", e), file=sys.stderr)
        return 1
    except (OSError, ValueError) as e:
        print(f"roost history: {e}", file=sys.stderr)
        return 1
    out = sys.stdout
    if formats:
        # lazy: only -format prints printf columns
        from roost.cli import printf

        out.write(printf.text(formats, jobs))
        return 0
    if raw:
        # lazy: only -af/-long/-json print ads; adtext compiles a regex on import (~1 ms)
        from roost.cli import adtext

        if ns.xml:
            out.write(adtext.xml_text(jobs))
        else:
            out.write(adtext.ads_text(jobs, json=ns.json, long=ns.long, af=ns.af, af_flags=af_flags))
        return 0
    out.write(table(jobs, ns.wide))
    return 0


def _userlog_jobs(path: str, constraint: str | None, r: Restriction) -> list[dict[str, Any]]:
    """The jobs of an event log, with the command line's restrictions applied here."""
    # lazy: only -userlog rebuilds ads from an event log
    from roost.cli.userlog_ads import ads_from_userlog

    try:
        jobs = ads_from_userlog(path)
    except OSError as e:
        raise ValueError(f"can't open userlog {path}: {e.strerror or e}") from None
    return _restricted(jobs, constraint, r)


def _file_jobs(path: str, constraint: str | None, r: Restriction) -> list[dict[str, Any]]:
    """The jobs of a history file (or any file of job ads), restricted as asked."""
    # lazy: only -file reads ad files
    from roost.cli.file_queue import read_jobads

    return _restricted(read_jobads(path), constraint, r)


def _restricted(jobs: list[dict[str, Any]], constraint: str | None, r: Restriction) -> list[dict[str, Any]]:
    """The jobs of a file that the command line's ids, users and constraint select."""
    if r.ids:
        want = [parse_job_id(i) for i in r.ids]
        jobs = [j for j in jobs if any(j.get("ClusterId") == c and p in (None, j.get("ProcId")) for c, p in want)]
    if r.users:
        jobs = [j for j in jobs if j.get("Owner") in r.users]
    if constraint:
        test = _predicate(constraint)
        jobs = [j for j in jobs if test(j)]
    return jobs


def _predicate(expr: str) -> Any:
    """A function telling whether an ad (JSON form) makes ``expr`` true; ValueError if it
    does not parse."""
    # lazy: the ClassAd library only to evaluate -since/-userlog expressions here
    from roost.classad import ExprTree
    from roost.net.adwire import obj_to_ad

    try:
        tree = ExprTree(expr)
    except Exception as e:
        raise ValueError(f"bad expression {expr!r}: {e}") from None

    def test(obj: dict[str, Any]) -> bool:
        try:
            return tree.eval(obj_to_ad(obj)) is True
        except Exception:
            return False

    return test


def _is_job(cluster: int, proc: int | None) -> Any:
    def test(obj: dict[str, Any]) -> bool:
        return obj.get("ClusterId") == cluster and (proc is None or obj.get("ProcId") == proc)

    return test


def _until(jobs: list[dict[str, Any]], since: str, since_id: str | None) -> list[dict[str, Any]]:
    """The jobs before the one ``-since`` names (a job id, or the first for which the
    expression is true), as condor_history stops reading there."""
    stop = _predicate(since) if since_id is None else _is_job(*parse_job_id(since_id))
    out = []
    for j in jobs:
        if stop(j):
            break
        out.append(j)
    return out


def _int(v: Any) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _status(j: dict[str, Any]) -> str:
    """JOB_STATUS: the state's letter and a blank, or `` >``/``< `` while files move."""
    st = _int(j.get("JobStatus"))
    if st is None:
        return "  "
    text = (STATUS_LETTERS.get(st, " ") if st in JobStatus.LETTERS else " ") + " "  # type: ignore[arg-type]
    if j.get("TransferringInput") is True:
        text = "<" + ("q" if j.get("TransferQueued") is True else " ")
    if j.get("TransferringOutput") is True or st == JobStatus.TRANSFERRING_OUTPUT:
        text = ("q" if j.get("TransferQueued") is True else " ") + ">"
    return text


def row(j: dict[str, Any]) -> str:
    """One job as condor_history 25's default print format shows it."""
    cluster, proc = _int(j.get("ClusterId")), _int(j.get("ProcId"))
    jid = f"{cluster}.{proc or 0}" if cluster is not None else ""
    owner = j.get("Owner")
    owner = owner if isinstance(owner, str) else "??"
    qdate = _int(j.get("QDate"))
    wall = _int(j.get("RemoteWallClockTime"))
    if wall is None:
        wall = _int(j.get("RemoteUserCpu")) or 0
    done = _int(j.get("CompletionDate"))
    cmd = command(j, True) if isinstance(j.get("Cmd"), str) else ""
    return (f"{jid:<12} {owner[:14]:<14} {_date(qdate) if qdate is not None else '??':>11} "
            f"{_duration(wall):>12} {_status(j):<2} {_date(done) if done is not None else '':>11} {cmd}")


HEADING = f"{' ID         ':<12} {'OWNER':<14} {'  SUBMITTED':<11} {'  RUN_TIME  ':<12} ST {'  COMPLETED':<11} CMD"


def table(jobs: list[dict[str, Any]], wide: bool = False) -> str:
    """condor_history's default listing (its defaultJob_PrintFormat): the heading, then a
    line per job, each cut to the display (a terminal's width less one; 1024 into a
    pipe), not at all with ``-wide``."""
    lines = [HEADING] + [row(j) for j in jobs]
    if not wide:
        try:
            limit = os.get_terminal_size(sys.stdout.fileno()).columns - 1
        except (OSError, ValueError, AttributeError):
            limit = 1024
        lines = [line[:limit] for line in lines]
    return "\n".join(lines) + "\n"
