"""``roost history``: jobs that have left the queue, newest first, as condor_history shows them."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from roost.api.errors import PoolError
from roost.api.jobids import is_job_id, parse_job_id
from roost.api.schedd import Schedd
from roost.cli.jobview import STATUS_LETTERS, command, duration, short_date
from roost.cli.options import add_pool_args
from roost.cli.restrict import Restriction, check_exprs, error_line, split_af, split_format

ATTRS = ["ClusterId", "ProcId", "Owner", "QDate", "RemoteWallClockTime", "JobStatus", "CompletionDate",
         "EnteredCurrentStatus", "Cmd", "Arguments", "Args", "JobPrio", "ImageSize", "RemoteUserCpu"]


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
    if r.ids:
        want = [parse_job_id(i) for i in r.ids]
        jobs = [j for j in jobs if any(j["ClusterId"] == c and p in (None, j["ProcId"]) for c, p in want)]
    if r.users:
        jobs = [j for j in jobs if j.get("Owner") in r.users]
    if constraint:
        test = _predicate(constraint)
        jobs = [j for j in jobs if test(j)]
    return jobs


def _file_jobs(path: str, constraint: str | None, r: Restriction) -> list[dict[str, Any]]:
    """The jobs of a history file (or any file of job ads), restricted as asked."""
    # lazy: only -file reads ad files
    from roost.cli.file_queue import read_jobads

    jobs = read_jobads(path)
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


def _int(j: dict[str, Any], attr: str) -> int | None:
    v = j.get(attr)
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _date(epoch: int) -> str:
    """format_date of HTCondor's history_utils: `` ??? `` for no date."""
    return short_date(epoch) if epoch else " ??? "


def _runtime(seconds: float) -> str:
    """``%3d+%02d:%02d:%02d``; ``[?????]`` for a negative time."""
    s = int(seconds)
    if s < 0:
        return "[?????]"
    d, s = divmod(s, 86400)
    return f"{d:3d}+{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def short_row(j: dict[str, Any]) -> str:
    """One job as condor_history's default (80-column) listing prints it: displayJobShort
    of history_utils. A job lacking an attribute the line needs prints `` --- ???? --- ``."""
    cluster, proc, qdate = _int(j, "ClusterId"), _int(j, "ProcId"), _int(j, "QDate")
    done, status, prio = _int(j, "CompletionDate"), _int(j, "JobStatus"), _int(j, "JobPrio")
    owner, cmd = j.get("Owner"), j.get("Cmd")
    if None in (cluster, proc, qdate, done, status, prio, _int(j, "ImageSize")) or \
            not isinstance(owner, str) or not isinstance(cmd, str):
        return " --- ???? --- "
    wall = j.get("RemoteWallClockTime")
    if not isinstance(wall, (int, float)):
        wall = j.get("RemoteUserCpu") if isinstance(j.get("RemoteUserCpu"), (int, float)) else 0
    args = j.get("Args")  # the old-syntax arguments only, as condor_history reads them
    if isinstance(args, str) and len(cmd) < 14:
        cmd = cmd + " " + args[:14 - len(cmd)]
    letter = STATUS_LETTERS.get(status, " ") if 1 <= status <= 7 else " "  # type: ignore[arg-type]
    return (f"{cluster:4d}.{proc:<3d} {owner[:14]:<14} {_date(qdate):<11} {_runtime(wall):<12} {letter:<2} "
            f"{_date(done):<11} {cmd[:15]:<15}")


def wide_table(jobs: list[dict[str, Any]]) -> list[str]:
    """``-wide``: condor_history's default print format instead (the job id as wide as
    it needs, the whole command)."""
    ids = [f"{j.get('ClusterId')}.{j.get('ProcId', 0)}" for j in jobs]
    id_w = max([12] + [len(i) for i in ids])
    lines = [f"{' ID':<{id_w}} {'OWNER':<14} {'  SUBMITTED':<11} {'  RUN_TIME  ':<12} ST {'  COMPLETED':<11} CMD"]
    for jid, j in zip(ids, jobs, strict=True):
        wall = j.get("RemoteWallClockTime")
        if not isinstance(wall, (int, float)):
            wall = j.get("RemoteUserCpu") if isinstance(j.get("RemoteUserCpu"), (int, float)) else 0
        qdate, done = j.get("QDate"), j.get("CompletionDate")
        lines.append(f"{jid:<{id_w}} {str(j.get('Owner', '??'))[:14]:<14} "
                     f"{short_date(qdate) if qdate is not None else '??':>11} {duration(wall):>12} "
                     f"{STATUS_LETTERS.get(j.get('JobStatus'), ' '):<2} "  # type: ignore[arg-type]
                     f"{short_date(done) if done else '':>11} {command(j, True)}")
    return lines


def table(jobs: list[dict[str, Any]], wide: bool = False) -> str:
    if wide:
        return "\n".join(wide_table(jobs)) + "\n"
    head = f" {'ID':<7} {'OWNER':<14} {'SUBMITTED':>11} {'RUN_TIME':>12} {'ST':<2} {'COMPLETED':>11} {'CMD':<15}"
    return "\n".join([head] + [short_row(j) for j in jobs]) + "\n"
