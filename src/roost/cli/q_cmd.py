"""``roost q``: the jobs in the queue, as condor_q shows them.

Default: one line per batch (a batch name, else a cluster) with counts of
done, running, idle and held jobs; ``-nobatch`` one line per job; ``-totals``
only the totals. Only the attributes a view shows are asked for, and nothing
heavy is imported for the table views: 100,000 jobs list in well under a second.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from typing import Any

from roost.api.errors import PoolError
from roost.api.home import read_address
from roost.api.jobids import job_selection
from roost.api.schedd import Schedd, current_user, merge_jobs
from roost.cli import q_layout
from roost.cli.jobview import (
    STATUS_KEYS,
    STATUS_LETTERS,
    command,
    duration,
    run_time,
    short_date,
    size_mb,
    totals_line,
)
from roost.cli.options import Parser, UsageError, pool_spec
from roost.cli.q_batch import batch_view as _batch_view
from roost.cli.restrict import Restriction, check_exprs, error_line, split_af, split_format
from roost.vocabulary import JobStatus

BATCH_ATTRS = ["ClusterId", "ProcId", "Owner", "JobBatchName", "QDate", "JobStatus", "TotalSubmitProcs",
               "DAG_NodesTotal", "DAG_NodesDone"]
DAG_ATTRS = ["DAGManJobId", "DAGNodeName"]
JOB_ATTRS = ["ClusterId", "ProcId", "Owner", "QDate", "JobStatus", "JobPrio", "ImageSize", "Cmd",
             "Arguments", "Args", "RemoteWallClockTime", "JobCurrentStartDate", "ShadowBday", "RemoteUserCpu"]
RUN_ATTRS = ["ClusterId", "ProcId", "Owner", "QDate", "JobStatus", "JobUniverse", "RemoteHost",
             "RemoteWallClockTime", "JobCurrentStartDate", "ShadowBday", "RemoteUserCpu", "RemotePool"]
GOODPUT_ATTRS = ["ClusterId", "ProcId", "Owner", "QDate", "JobStatus", "RemoteWallClockTime", "JobCurrentStartDate",
                 "ShadowBday", "LastCkptTime", "CommittedTime", "RemoteUserCpu", "BytesSent", "BytesRecvd"]
HOLD_ATTRS = ["ClusterId", "ProcId", "Owner", "EnteredCurrentStatus", "HoldReason", "HoldReasonCode",
              "HoldReasonSubCode", "JobStatus"]
IO_ATTRS = ["ClusterId", "ProcId", "Owner", "JobStatus", "BytesSent", "BytesRecvd", "TransferringInput",
            "TransferringOutput", "NumCkpts", "CheckpointSizeKB", "LastCheckpointTime",
            "StreamOut", "StreamErr"]


SPEC = {
    "constraint": ("value", "only jobs for which this ClassAd expression is true"),
    "nobatch": ("flag", "one line per job"),
    "dag": ("flag", "one line per job, each DAG's node jobs under it (|-NODE)"),
    "batch": ("flag", "one line per batch (the default)"),
    "totals": ("flag", "only the totals"),
    "hold": ("flag", "held jobs with their hold reason"),
    "io": ("flag", "file transfer and checkpoint state: bytes in and out, transferring now, checkpoints"),
    "run": ("flag", "running jobs and the host each runs on (HOST(S)); no totals"),
    "idle": ("flag", "idle jobs only"),
    "af": ("values", "print these attributes or expressions, one line per job (-af:jlht, flags)"),
    "long": ("flag", "every attribute of each job"),
    "json": ("flag", "the jobs as a JSON array of ads"),
    "xml": ("flag", "the jobs as HTCondor's XML ClassAd document"),
    "global": ("flag", "every schedd of the pool, one section each"),
    "submitter": ("value", "the jobs of this user, in every schedd of the pool"),
    "attributes": ("value", "comma-separated attributes for -long/-json"),
    "allusers": ("flag", "every user's jobs"),
    "wide": ("flag", "do not truncate the command"),
    "limit": ("value", "at most this many jobs"),
    "cputime": ("flag", "CPU_TIME (the job's user CPU, RemoteUserCpu) instead of RUN_TIME"),
    "currentrun": ("flag", "RUN_TIME of the current run only (not earlier runs)"),
    "cumulative-time": ("flag", "RUN_TIME of all runs (the default)"),
    "goodput": ("flag", "each job's goodput, CPU utilization and network rate; no totals"),
    "unmatchable": ("flag", "only jobs that match no slot of the pool"),
    "userlog": ("value", "the jobs of this job event log, not a schedd's"),
    "jobads": ("value", "the job ads in this file (condor_q -long, -json or a history file), not a schedd's"),
    "analyze": ("flag", "why are these jobs idle? (default: your first idle jobs)"),
    "better-analyze": ("flag", "-analyze with each Requirements clause, the pool's values and slot policies"),
    "print-format": ("value", "lay the jobs out as this custom print format file (.cpf) says"),
    **pool_spec("schedd"),
}
USAGE = "[options] [-format FMT ATTR ...] [ID|USER ...]   (IDs: CLUSTER or CLUSTER.PROC)"
# Other spellings. Any unambiguous prefix works too, as in condor_q: -ba is -batch,
# -be/-better is -better-analyze, -an is -analyze; -b alone is ambiguous.
ALIASES = {"autoformat": "af", "l": "long", "analyse": "analyze", "better-analyse": "better-analyze",
           "n": "name", "all-users": "allusers",  # condor_q: -n is -name (not -nobatch)
           "g": "global", "c": "constraint", "cp": "cputime", "p": "pool", "pr": "print-format"}  # condor_q's one- and two-letter forms


def main(argv: list[str]) -> int:
    argv, af_flags = split_af(argv)
    try:
        argv, formats = split_format(argv)
        ns = Parser("roost q", USAGE, SPEC, ALIASES).parse(argv)
        limit = int(ns.limit) if ns.limit is not None else None  # type: ignore[call-overload]
        check_exprs(list(ns.af or ()), "-af")
        check_exprs([e for _f, e in formats], "-format")
    except (UsageError, ValueError) as e:
        print(f"roost q: {e}", file=sys.stderr)
        return 2
    print_format = None
    if ns.values["print-format"]:
        try:
            print_format = _read_print_format(ns.values["print-format"])  # type: ignore[arg-type]
        except ValueError as e:
            print(f"roost q: {e}", file=sys.stderr)
            return 1
    r = Restriction.parse(ns.positional)
    constraint = r.constraint(ns.constraint)
    if print_format is not None and print_format.where:  # the file's WHERE adds to the constraint
        constraint = f"({constraint}) && ({print_format.where})" if constraint else print_format.where
    # -run: running, transferring output or suspended, as condor_q -run
    for flag, expr in ((ns.hold, "JobStatus == 5"), (ns.run, "(JobStatus == 2 || JobStatus == 6 || JobStatus == 7)"),
                       (ns.idle, "JobStatus == 1")):
        if flag:
            constraint = f"({constraint}) && {expr}" if constraint else expr
    me = current_user()
    owner = ns.submitter or r.owner()
    # condor_q's default (MyJobs): only my jobs, unless the schedd counts me a queue super
    # user; a file's jobs are listed whoever owns them, as condor_q does
    my_jobs = owner is None and not r.users and not r.ids and not ns.allusers and not (ns.userlog or ns.jobads)
    view = View(ns, af_flags, formats, constraint, owner, r.ids, limit, me, my_jobs)
    view.print_format = print_format
    if ns.userlog or ns.jobads:
        return _show_file(view, ns)
    try:
        if ns.values["global"] or ns.submitter:
            names = _schedd_names(ns.pool, ns.name)
            if not names:
                print("All queues are empty", file=sys.stderr)
                return 0
            rc = 0
            for name in names:
                try:
                    view.show(Schedd(name=name, pool=ns.pool))  # type: ignore[arg-type]
                except PoolError as e:  # one schedd down: say so, list the others
                    print(error_line("roost q", e), file=sys.stderr)
                    rc = 1
            return rc
        return view.show(Schedd(name=ns.name, pool=ns.pool))  # type: ignore[arg-type]
    except PoolError as e:
        print(error_line("roost q", e), file=sys.stderr)
        return 1


def _read_print_format(path: str) -> Any:
    # lazy: only -print-format parses print format files (and needs the ClassAd library)
    from roost.cli.print_format import load

    return load(path)


def _show_file(view: View, ns: Any) -> int:
    """``-userlog FILE`` / ``-jobads FILE``: the jobs of a file, in the view asked for."""
    # lazy: only file sources read event logs and ad files
    from roost.api.home import pool_home
    from roost.cli.file_queue import FileQueue, read_jobads

    try:
        if ns.userlog:
            # lazy: only -userlog rebuilds ads from an event log
            from roost.cli.userlog_ads import ads_from_userlog

            try:
                jobs = ads_from_userlog(ns.userlog)
            except OSError as e:
                raise ValueError(f"can't open user log {ns.userlog}: {e.strerror or e}") from None
            queue = FileQueue(f"Userlog: {ns.userlog}", jobs, pool_home(None))
        else:
            queue = FileQueue(f"Jobads: {ns.jobads}", read_jobads(ns.jobads), pool_home(None))
        return view.show(queue)
    except (ValueError, PoolError) as e:
        print(error_line("roost q", e), file=sys.stderr)
        return 1
    except Exception as e:  # an event log that does not read (EventLogError): one line
        print(f"roost q: {e}", file=sys.stderr)
        return 1


def _schedd_names(pool: str | None, name: str | None) -> list[str]:
    """Every schedd of the pool (-global, -submitter), by name; -name keeps one."""
    # lazy: only -global/-submitter ask the collector for the pool's schedds
    from roost.api.collector import Collector
    from roost.cli.options import collector_for

    try:
        address = collector_for(pool)
    except ValueError as e:
        raise PoolError(str(e)) from None
    collector = Collector(address=address)
    try:
        ads = collector.query_objs("Scheduler", projection=["Name", "MyAddress"])
    finally:
        collector.close()
    names = sorted({str(a["Name"]) for a in ads if isinstance(a.get("Name"), str)})
    return [n for n in names if name is None or n == name]


class View:
    """What one schedd's section prints, as the options chose (no dataclass: it imports too much)."""

    def __init__(self, ns: Any, af_flags: str, formats: list[tuple[str, str]], constraint: str | None,
                 owner: str | None, ids: list[str], limit: int | None, me: str, my_jobs: bool = False) -> None:
        self.ns, self.af_flags, self.formats = ns, af_flags, formats
        self.constraint, self.owner, self.ids, self.limit, self.me = constraint, owner, ids, limit, me
        #: whose jobs to ask for: a named owner, or the schedd's choice (MyJobs)
        self.who: dict[str, Any] = {"my_jobs": True} if my_jobs else {"owner": owner}
        #: a parsed ``-print-format`` file (roost.cli.print_format.PrintFormat), if one was given
        self.print_format: Any = None

    def show(self, schedd: Any) -> int:
        ns, constraint, owner, limit = self.ns, self.constraint, self.owner, self.limit
        if ns.analyze or ns.values["better-analyze"]:
            return _analyze(schedd, constraint, self.who, self.ids, bool(ns.values["better-analyze"]), limit)
        if ns.totals:
            filters = job_selection(self.ids, constraint, owner)
            got = schedd.call("QUERY_JOBS", totals=True, **filters, **({"my_jobs": True} if "my_jobs" in self.who else {}))
            _header(schedd)
            # Without filters the query's totals are everyone's: one request, not two.
            plain = not filters and not got.get("my_name")
            sys.stdout.write(_summary(schedd, got["totals"], got.get("my_name"), got["totals"] if plain else None)
                             + "\n")
            return 0
        if self.print_format is not None:
            return self._show_print_format(schedd)
        if self.formats:
            exprs = [e for _f, e in self.formats]
            projection = exprs if all(e.isidentifier() for e in exprs) else None
            jobs = schedd.query_objs(constraint, projection, ids=self.ids, limit=limit, **self.who)
            # lazy: only -format prints printf columns (the ClassAd helpers of adtext)
            from roost.cli import printf

            sys.stdout.write(printf.text(self.formats, jobs))
            return 0
        if ns.af or ns.long or ns.json or ns.xml or ns.attributes:
            projection = ns.af if ns.af and all(a.isidentifier() for a in ns.af) else None
            if ns.attributes:
                projection = [a.strip() for a in ns.attributes.split(",") if a.strip()]
            jobs = schedd.query_objs(constraint, projection, ids=self.ids, limit=limit, **self.who)
            return _print_ads(jobs, ns, self.af_flags)
        timer, time_head = _timer(ns)
        file_source = getattr(schedd, "label", None) is not None
        if ns.unmatchable:
            # only the jobs no slot matches (both ways), then the per-job view
            objs = schedd.query_objs(constraint, None, ids=self.ids, limit=limit, **self.who)
            raw = {"clusters": {}, "jobs": [[j["ClusterId"], j["ProcId"], j] for j in _unmatchable(schedd, objs)]}
        elif ns.run and not (ns.hold or ns.io or ns.dag):
            raw = schedd.query_raw(constraint, RUN_ATTRS, ids=self.ids, limit=limit, **self.who)
        elif ns.goodput:
            raw = schedd.query_raw(constraint, GOODPUT_ATTRS, ids=self.ids, limit=limit, **self.who)
        else:
            nobatch = ns.nobatch or ns.run or ns.dag
            view = HOLD_ATTRS if ns.hold else IO_ATTRS if ns.io else (JOB_ATTRS + DAG_ATTRS if nobatch else BATCH_ATTRS)
            # the batch view from a schedd: counts per cluster, not a row per job
            batch = view is BATCH_ATTRS and limit is None and not file_source
            raw = schedd.query_raw(constraint, view, ids=self.ids, limit=limit, **self.who,
                                   **({"batch": True} if batch else {}))
        if ns.dag:
            raw = _dag_order(raw)
        _header(schedd)
        out = sys.stdout
        display = None if ns.wide else q_layout.terminal_width()  # into a pipe: as -wide
        if ns.run and not (ns.hold or ns.io or ns.dag or ns.unmatchable):
            # condor_q -run: its own columns, and no totals (its print format's SUMMARY NONE)
            _run_view(list(merge_jobs(raw)), out, timer, time_head, display)
            return 0
        if ns.goodput and not ns.unmatchable:
            _goodput_view(list(merge_jobs(raw)), out, timer, time_head, display)  # SUMMARY NONE too
            return 0
        if ns.hold:
            _hold_view(list(merge_jobs(raw)), out, display)
        elif ns.io:
            _io_view(list(merge_jobs(raw)), out)
        elif ns.nobatch or ns.run or ns.dag or ns.unmatchable:
            _job_view(raw, out, display, timer, time_head, dag=bool(ns.dag))
        else:
            _batch_view(raw, out, display, bool(ns.values["global"]))
        self._footer(schedd, _raw_totals(raw), raw.get("my_name"), file_source)
        return 0

    def _footer(self, schedd: Any, counts: dict[str, int], my_name: str | None, file_source: bool) -> None:
        """condor_q's footer: a blank line, the totals, a blank line."""
        out = sys.stdout
        if file_source:
            out.write("\n" + totals_line("query", counts) + "\n\n")  # no schedd to ask for the rest
            return
        if self.constraint or self.owner or my_name or self.ids or self.limit is not None or self.ns.unmatchable:
            out.write("\n" + _summary(schedd, counts, my_name) + "\n")
        else:
            # Unfiltered, the query is everyone's jobs: the schedd's counters say it at once.
            everyone = schedd.call("QUERY_JOBS", totals=True)["totals"]
            out.write("\n" + _summary(schedd, everyone, None, everyone) + "\n")

    def _show_print_format(self, schedd: Any) -> int:
        """``-print-format FILE``: the file's columns over the jobs its projection asks for; the
        title unless NOTITLE, the totals only with SUMMARY STANDARD (condor_q's rules)."""
        pf = self.print_format
        raw = schedd.query_raw(self.constraint, pf.attributes(), ids=self.ids, limit=self.limit, **self.who)
        jobs = list(merge_jobs(raw))
        if not pf.notitle:
            _header(schedd)
        width = None if self.ns.wide else q_layout.terminal_width()
        sys.stdout.write(pf.render(jobs, time.time(), width - 1 if width else None))
        if not pf.nosummary:
            self._footer(schedd, _raw_totals(raw), raw.get("my_name"), getattr(schedd, "label", None) is not None)
        return 0


def _timer(ns: Any) -> tuple[Any, str]:
    """The RUN_TIME column's clock: all runs (default), -currentrun's, or -cputime's CPU_TIME."""
    if ns.cputime:
        def cpu(j: dict[str, Any], _now: float) -> float:
            v = j.get("RemoteUserCpu")
            return float(v) if isinstance(v, (int, float)) else 0.0
        return cpu, "CPU_TIME"
    if ns.currentrun:
        def current(j: dict[str, Any], now: float) -> float:
            start = j.get("JobCurrentStartDate") or j.get("ShadowBday")
            if j.get("JobStatus") == JobStatus.RUNNING and isinstance(start, (int, float)) and start > 0:
                return max(0.0, now - start)
            return 0.0
        return current, "RUN_TIME"
    return run_time, "RUN_TIME"


def _slot_ads(schedd: Any) -> list[Any]:
    """Every slot ad of the pool (all states), as ClassAds."""
    # lazy: only -analyze and -unmatchable ask the collector
    from roost.api.collector import Collector

    pool = schedd.pool
    if pool:
        # lazy: only -pool names another collector
        from roost.api.locate import pool_address

        pool = pool_address(pool)
    collector = Collector(schedd.home_dir, address=pool)
    try:
        return collector.query("Machine")
    finally:
        collector.close()


def _unmatchable(schedd: Any, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The jobs no slot matches both ways (condor_q -unmatchable), judged as -analyze judges."""
    # lazy: only -unmatchable runs the analysis
    from roost.core.condor_analysis import count
    from roost.net.adwire import obj_to_ad

    slots = _slot_ads(schedd)
    return [j for j in jobs if not count(obj_to_ad(j), slots).both_match]


def _goodput_view(jobs: list[dict[str, Any]], out: Any, timer: Any, time_head: str,
                  display: int | None = None) -> None:
    """``-goodput``: checkpointed (committed) time over wall time, CPU over committed time,
    and the network rate, as condor_q -goodput shows them (``??`` where not known)."""
    now = time.time()
    widths, owner_w = _dict_widths(jobs, display)
    lines = [f"{q_layout.id_heading(widths)} {'OWNER':<{owner_w}}   SUBMITTED {time_head:>12}  GOODPUT  CPU_UTIL    Mb/s"]
    for j in jobs:
        jid = q_layout.id_cell(j["ClusterId"], j["ProcId"], widths)
        good, util, mbps = _goodput(j)
        lines.append(f"{jid} {q_layout.fit(str(j.get('Owner', '??')), owner_w)} {short_date(j.get('QDate')):>11} "
                     f"{duration(timer(j, now)):>12} {good:>8} {util:>9} {mbps:>7}")
    out.write("\n".join(q_layout.cut(lines, display)) + "\n")


def _goodput(j: dict[str, Any]) -> tuple[str, str, str]:
    def num(k: str) -> float:
        v = j.get(k)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0

    wall = num("RemoteWallClockTime")
    bday, last_ckpt = num("ShadowBday"), num("LastCkptTime")
    if j.get("JobStatus") in JobStatus.ON_A_SLOT and bday and last_ckpt > bday:
        wall += last_ckpt - bday
    committed = num("CommittedTime")
    good = f"{min(100.0, committed / wall * 100):.1f}" if wall > 0 and committed >= 0 else "??"
    cpu = j.get("RemoteUserCpu")
    util = f"{min(100.0, float(cpu) / committed * 100):.1f}" if isinstance(cpu, (int, float)) and committed else "??"
    sent = j.get("BytesSent")
    mbits = (num("BytesSent") + num("BytesRecvd")) * 8 / (1024 * 1024)
    mbps = f"{mbits / wall:.2f}" if isinstance(sent, (int, float)) and mbits > 0 and wall > 0 else "??"
    return good, util, mbps


ANALYZE_DEFAULT = 5  # jobs -analyze looks at when no ids are given


def _analyze(schedd: Any, constraint: str | None, who: dict[str, Any], ids: list[str], better: bool,
             limit: int | None) -> int:
    """``-analyze``/``-better-analyze``: each job against every slot ad and the priority table."""
    # lazy: only -analyze builds ClassAds and runs the matchmaker (~30 ms of `roost q`)
    from roost.core.analyze import analyze, render
    from roost.core.condor_analysis import condor_text
    from roost.net.adwire import obj_to_ad

    out = sys.stdout
    if not ids:
        constraint = f"({constraint}) && JobStatus == 1" if constraint else "JobStatus == 1"
    cap = limit if limit is not None else (None if ids else ANALYZE_DEFAULT + 1)
    jobs = schedd.query_objs(constraint, None, ids=ids, limit=cap, **who)
    if not jobs:
        out.write("No matching jobs to analyze.\n" if ids else "No idle jobs to analyze.\n")
        return 0
    if not ids and limit is None and len(jobs) > ANALYZE_DEFAULT:
        jobs = jobs[:ANALYZE_DEFAULT]
        out.write(f"Analyzing the first {ANALYZE_DEFAULT} idle jobs (name job ids, or -limit N, for others).\n")
    # lazy: only -analyze asks the negotiator (the api client and its protocol code)
    from roost.api.negotiator import negotiator_view, priority_name
    from roost.core.condor_analysis import grid_text

    matched = [obj for obj in jobs if not grid_text(obj)]  # a grid job is where its remote system says
    slots = _slot_ads(schedd) if matched else []
    users, limits, groups = negotiator_view(schedd.home_dir, schedd.pool) if matched else ({}, None, None)
    _header(schedd)
    if users is None:
        out.write("(the negotiator gave no priority table: analyzing without user priorities)\n")
    try:
        width = os.get_terminal_size(out.fileno()).columns
    except (OSError, ValueError, AttributeError):
        width = 80  # condor_q's width off a terminal
    flocking = _flock_why(schedd, jobs)
    for obj in jobs:
        where = grid_text(obj)
        if where:
            out.write(where)
            continue
        job = obj_to_ad(obj)
        # HTCondor's own lines first (what scripts grep), then roost's clause analysis
        out.write(condor_text(job, slots, better, width, time.time()))
        a = analyze(job, slots, users, priority_name(obj), limits=limits, groups=groups)
        out.write("\n" + render(a, job, better=better))
        why = flocking.get(f"{obj.get('ClusterId')}.{obj.get('ProcId')}")
        if isinstance(why, dict) and why.get("why"):
            out.write(f"Flocking: {why['why']}\n")
    return 0


def _flock_why(schedd: Any, jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """The schedd's word on each job's flocking (FLOCK_WHY); none from a schedd that does
    not flock, a job log, or an older schedd."""
    ids = [f"{j.get('ClusterId')}.{j.get('ProcId')}" for j in jobs]
    try:
        got = schedd.call("FLOCK_WHY", ids=ids)
    except Exception:  # noqa: BLE001  (a userlog's "schedd", an older schedd: no flocking line)
        return {}
    return got.get("jobs") if isinstance(got.get("jobs"), dict) else {}


def _header(schedd: Any) -> None:
    stamp = time.strftime("%m/%d/%y %H:%M:%S")
    label = getattr(schedd, "label", None)
    if label:  # a file's jobs: "-- Userlog: FILE @ time", as condor_q heads them
        sys.stdout.write(q_layout.title(label, stamp))
        return
    addr = schedd.address or read_address(os.path.join(schedd.home_dir, "run", "schedd.address"))
    host = socket.gethostname()
    where = q_layout.summarize_sinful(q_layout.sinful(addr, host)) if addr else "<local>"
    sys.stdout.write(q_layout.title(f"Schedd: {schedd.name or host} : {where}", stamp))


def _summary(schedd: Any, query_counts: dict[str, int], my_name: str | None,
             everyone: dict[str, int] | None = None) -> str:
    """condor_q's totals: the query's; the user's own when the schedd chose to list only
    them (MyJobs, for a user who is no queue super user); every user's."""
    lines = [totals_line("query", query_counts)]
    if my_name:
        lines.append(totals_line(my_name, schedd.call("QUERY_JOBS", totals=True, owner=my_name)["totals"]))
    if everyone is None:
        everyone = schedd.call("QUERY_JOBS", totals=True)["totals"]
    lines.append(totals_line("all users", everyone))
    return "\n".join(lines) + "\n"


def _print_ads(jobs: list[dict[str, Any]], ns: Any, af_flags: str) -> int:
    # lazy: only -af/-long/-json print ads; adtext compiles a regex on import (~1 ms)
    from roost.cli import adtext

    if ns.xml:
        sys.stdout.write(adtext.xml_text(jobs))
        return 0
    sys.stdout.write(adtext.ads_text(jobs, json=ns.json, long=ns.long, af=ns.af, af_flags=af_flags))
    return 0


def _raw_totals(raw: dict[str, Any]) -> dict[str, int]:
    clusters = raw.get("clusters") or {}
    counts: dict[str, int] = {}
    for c, _p, diff in raw.get("jobs") or ():
        st = diff.get("JobStatus") if "JobStatus" in diff else (clusters.get(str(c)) or {}).get("JobStatus")
        key = STATUS_KEYS.get(st, STATUS_KEYS[JobStatus.IDLE])  # type: ignore[arg-type]
        counts[key] = counts.get(key, 0) + 1
    for _c, by_status, _lo, _hi in raw.get("counts") or ():  # a batch answer's counted procs
        for st, n in by_status.items():
            key = STATUS_KEYS.get(int(st), STATUS_KEYS[JobStatus.IDLE])
            counts[key] = counts.get(key, 0) + n
    return counts


def _raw_widths(raw: dict[str, Any], dag: bool, display: int | None) -> tuple[tuple[int, int], int, int]:
    """The ID column's digits, OWNER's width and how much of a DAG node's name is kept,
    for the jobs of a QUERY_JOBS answer."""
    clusters = raw.get("clusters") or {}
    jobs = raw.get("jobs") or ()
    max_c = max((j[0] for j in jobs), default=0)
    max_p = max((j[1] for j in jobs), default=0)
    present = {str(j[0]) for j in jobs}
    names = [str(cad.get("Owner", "??")) for key, cad in clusters.items() if key in present]
    names += [str(d["Owner"]) for _c, _p, d in jobs if "Owner" in d]
    longest = q_layout.longest(names)
    owner_w = q_layout.owner_width(longest, dag, display)
    keep = q_layout.dag_name_width(q_layout.widths_fixed(max_c, max_p, longest), owner_w, display)
    return q_layout.id_widths(max_c, max_p), owner_w, keep


def _dict_widths(jobs: list[dict[str, Any]], display: int | None = None) -> tuple[tuple[int, int], int]:
    """The same for jobs as dicts."""
    max_c = max((int(j.get("ClusterId") or 0) for j in jobs), default=0)
    max_p = max((int(j.get("ProcId") or 0) for j in jobs), default=0)
    names = [str(j.get("Owner", "??")) for j in jobs]
    return q_layout.id_widths(max_c, max_p), q_layout.owner_width(q_layout.longest(names), display=display)


def _job_view(raw: dict[str, Any], out: Any, display: int | None, timer: Any = run_time,
              time_head: str = "RUN_TIME", dag: bool = False) -> None:
    """One line per job. The answer holds each cluster's ad once and per-proc differences,
    so each column is formatted once per cluster and again only for procs whose own
    attributes change it: 100,000 procs of one cluster cost a lookup and a join each."""
    now = time.time()
    widths, owner_w, keep = _raw_widths(raw, dag, display)

    def owner_cell(j: dict[str, Any]) -> str:
        name = str(j.get("Owner", "??"))
        if name.startswith(" "):  # a DAG node's " |-NODE" (_dag_order): cut as condor_q cuts it
            name = name[:keep]
        return q_layout.fit(name, owner_w)

    columns: list[tuple[frozenset[str], Any]] = [
        (frozenset({"Owner"}), owner_cell),
        (frozenset({"QDate"}), lambda j: f"{short_date(j.get('QDate')):>11}"),
        (frozenset({"RemoteWallClockTime", "JobCurrentStartDate", "ShadowBday", "JobStatus", "RemoteUserCpu"}),
         lambda j: f"{duration(timer(j, now)):>12}"),
        (frozenset({"JobStatus"}), lambda j: f"{STATUS_LETTERS.get(j.get('JobStatus'), '?'):<2}"),
        (frozenset({"JobPrio"}), lambda j: f"{j.get('JobPrio', 0)!s:<3}"),
        (frozenset({"ImageSize"}), lambda j: f"{size_mb(j):>4}"),
        (frozenset({"Cmd", "Arguments", "Args"}), lambda j: command(j, True)),
    ]
    # Per-proc arguments are the usual difference: keep the executable's name per cluster.
    cmd_names: dict[int, str] = {}

    def cmd_cell(c: int, cad: dict[str, Any], diff: dict[str, Any]) -> str | None:
        if "Cmd" in diff:
            return None
        name = cmd_names.get(c)
        if name is None:
            name = cmd_names[c] = command({"Cmd": cad.get("Cmd")}, True)
        args = diff.get("Arguments") if "Arguments" in diff else diff.get("Args")
        if not isinstance(args, str):
            return None
        return f"{name} {args}".rstrip()

    clusters = raw.get("clusters") or {}
    per_cluster: dict[int, list[str]] = {}
    owner_head = "OWNER/NODENAME" if dag else "OWNER"
    lines = [f"{q_layout.id_heading(widths)} {owner_head:<{owner_w}}   SUBMITTED {time_head:>12} ST PRI SIZE CMD"]
    for c, p, diff in raw.get("jobs") or ():
        base = per_cluster.get(c)
        cad = clusters.get(str(c)) or {}
        if base is None:
            base = per_cluster[c] = [fmt(cad) for _, fmt in columns]
        cells = base
        if len(diff) > 1 or (diff and "ProcId" not in diff):
            keys = diff.keys()
            merged = None
            for i, (attrs, fmt) in enumerate(columns):
                if not attrs.isdisjoint(keys):
                    if cells is base:
                        cells = list(base)
                    fast = cmd_cell(c, cad, diff) if i == len(columns) - 1 else None
                    if fast is not None:
                        cells[i] = fast
                        continue
                    if merged is None:
                        merged = dict(cad)
                        merged.update(diff)
                    cells[i] = fmt(merged)
        lines.append(q_layout.id_cell(c, p, widths) + " " + " ".join(cells))
    out.write("\n".join(q_layout.cut(lines, display)) + "\n")


def _dag_order(raw: dict[str, Any]) -> dict[str, Any]:
    """The jobs with each DAG's node jobs right after its DAGMan job, their OWNER
    column showing `` |-NODE`` (condor_q -dag: a space per level, then ``|-``)."""
    clusters = dict(raw.get("clusters") or {})
    jobs = list(raw.get("jobs") or ())
    parent: dict[int, int] = {}
    for c, _p, diff in jobs:
        cad = clusters.get(str(c)) or {}
        dag = diff.get("DAGManJobId", cad.get("DAGManJobId"))
        if isinstance(dag, int) and dag != c:
            parent[c] = dag
    present = {c for c, _p, _d in jobs}
    children: dict[int | None, list[tuple[int, int, dict[str, Any]]]] = {}
    for job in jobs:
        up = parent.get(job[0])
        children.setdefault(up if up in present else None, []).append(job)
    ordered: list[tuple[int, int, dict[str, Any]]] = []

    def walk(key: int | None, depth: int) -> None:
        for job in children.get(key, []):
            c = job[0]
            if depth:
                cad = dict(clusters.get(str(c)) or {})
                cad["Owner"] = " " * depth + "|-" + str(cad.get("DAGNodeName", "?"))
                clusters[str(c)] = cad
            ordered.append(job)
            if job[1] == 0 and c in children and depth < 16:
                walk(c, depth + 1)

    walk(None, 0)
    return {**raw, "clusters": clusters, "jobs": ordered}


def _run_view(jobs: list[dict[str, Any]], out: Any, timer: Any = run_time, time_head: str = "RUN_TIME",
              display: int | None = None) -> None:
    """``-run``: where each running job runs (HOST(S): its RemoteHost; a scheduler or
    local universe job runs on the schedd's host), as condor_q -run lays it out. When
    any of them runs in another pool of the flock (HTCondor's ``RemotePool``), a POOL
    column before HOST(S) names it, ``home`` for the others; without flocked jobs the
    layout is condor_q's own."""
    now = time.time()
    widths, owner_w = _dict_widths(jobs, display)
    pools = [j.get("RemotePool") if isinstance(j.get("RemotePool"), str) and j.get("RemotePool") else "home"
             for j in jobs]
    pool_w = max((len(p) for p in pools), default=0) if any(p != "home" for p in pools) else 0
    if pool_w:
        pool_w = max(pool_w, len("POOL"))
    pool_head = f"{'POOL':<{pool_w}} " if pool_w else ""
    lines = [f"{q_layout.id_heading(widths)} {'OWNER':<{owner_w}}   SUBMITTED {time_head:>12} {pool_head}HOST(S)"]
    for j, pool in zip(jobs, pools, strict=True):
        jid = q_layout.id_cell(j["ClusterId"], j["ProcId"], widths)
        if j.get("JobUniverse") in (7, 12):
            host = socket.gethostname()
        else:
            host = j.get("RemoteHost") if isinstance(j.get("RemoteHost"), str) else "??"
        submitted = short_date(j.get("QDate")) if j.get("QDate") is not None else "??"
        cell = f"{pool:<{pool_w}} " if pool_w else ""
        lines.append(f"{jid} {q_layout.fit(str(j.get('Owner', '??')), owner_w)} {submitted:>11} "
                     f"{duration(timer(j, now)):>12} {cell}{host}")
    out.write("\n".join(q_layout.cut(lines, display)) + "\n")


def _hold_view(jobs: list[dict[str, Any]], out: Any, display: int | None = None) -> None:
    """``-hold``: since when and why, with HoldReasonCode/HoldReasonSubCode (never cut:
    condor_q -hold is a wide view, though OWNER still follows the display)."""
    widths, owner_w = _dict_widths(jobs, display)
    lines = [f"{q_layout.id_heading(widths)} {'OWNER':<{owner_w}} HELD_SINCE  CODE/SUB HOLD_REASON"]
    for j in jobs:
        code, sub = j.get("HoldReasonCode"), j.get("HoldReasonSubCode")
        code_text = f"{code:4d}" if isinstance(code, int) and not isinstance(code, bool) else "?"
        sub_text = f"/{sub:<3d}" if isinstance(sub, int) and not isinstance(sub, bool) else " "
        since = short_date(j.get("EnteredCurrentStatus")) if j.get("EnteredCurrentStatus") is not None else "??"
        lines.append(f"{q_layout.id_cell(j['ClusterId'], j['ProcId'], widths)} "
                     f"{q_layout.fit(str(j.get('Owner', '??')), owner_w)} {since:>11} "
                     f"{code_text}{sub_text} {j.get('HoldReason') or ''}")
    out.write("\n".join(lines) + "\n")


def _io_view(jobs: list[dict[str, Any]], out: Any) -> None:
    """``-io``: what each job's files did: bytes sent to it and received from it (its
    last run's, as the schedd counts them), what moves now, its checkpoints."""
    lines = [" ID      OWNER          ST    SENT_MB  RECVD_MB  XFER     CKPTS  CKPT_MB  LAST_CKPT    STREAM"]
    for j in jobs:
        jid = f"{j['ClusterId']}.{j['ProcId']}"
        status = STATUS_LETTERS.get(j.get("JobStatus"), "?")  # type: ignore[call-overload]
        xfer = "in" if j.get("TransferringInput") is True else "out" if j.get("TransferringOutput") is True else "-"
        ckpt_kb = j.get("CheckpointSizeKB")
        ckpt = _mb(ckpt_kb * 1024) if isinstance(ckpt_kb, int | float) and j.get("NumCkpts") else "-"
        last = short_date(j.get("LastCheckpointTime")) if j.get("LastCheckpointTime") else "-"
        stream = ",".join(n for n, a in (("out", "StreamOut"), ("err", "StreamErr")) if j.get(a) is True) or "-"
        lines.append(f"{jid:>7}   {str(j.get('Owner', '?')):<14} {status:<2} {_mb(j.get('BytesSent')):>9} "
                     f"{_mb(j.get('BytesRecvd')):>9}  {xfer:<7} {j.get('NumCkpts') or 0:>6} {ckpt:>8}  "
                     f"{last:<12} {stream}")
    out.write("\n".join(lines) + "\n")


def _mb(v: Any) -> str:
    return f"{v / 1e6:.1f}" if isinstance(v, int | float) and not isinstance(v, bool) else "0.0"
