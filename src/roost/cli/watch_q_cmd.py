"""``roost watch_q`` (``condor_watch_q``): follow the event logs of a user's jobs and draw
condor_watch_q's table and bars, without asking the schedd again.

The schedd is asked once, at the start, which logs the jobs write (their ``UserLog``, a
DAG's ``DAGManNodesLog``), how many procs each cluster has and its batch name; from then
on only the logs are read, every ``-interval`` seconds. ``-exit GROUPER,STATUS[,CODE]``
ends it when all / any / none of the jobs are done, idle, held or active. On a terminal
the picture is redrawn in place (the alternate screen, as less uses); into a pipe each
picture is appended, followed by ``...``, as condor_watch_q does.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import select
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from typing import Any

from roost.api.errors import PoolError
from roost.api.schedd import Schedd, current_user
from roost.cli.restrict import error_line
from roost.cli.watchq_table import GROUP_HEADERS, Tracker, exit_met, screen
from roost.eventlog.reader import EventLogFollower

PROG = "roost watch_q"
GROUPERS = ("all", "any", "none")
STATUSES = ("active", "done", "idle", "held")
PROJECTION = ["ClusterId", "Owner", "UserLog", "DAGManNodesLog", "JobBatchName", "Iwd", "TotalSubmitProcs",
              "DAG_NodesTotal", "OtherJobRemoveRequirements"]
ALT_SCREEN_ENTER, ALT_SCREEN_EXIT, HOME_CLEAR = "\033[?1049h\033[H", "\033[?1049l", "\033[H\033[J"


def exit_condition(text: str) -> tuple[str, str, int]:
    """``GROUPER,STATUS[,EXIT_STATUS]`` as -exit takes it."""
    parts = text.split(",")
    if len(parts) not in (2, 3):
        raise argparse.ArgumentTypeError("invalid -exit specification")
    grouper, status = parts[0].lower(), parts[1].lower()
    if grouper not in GROUPERS:
        raise argparse.ArgumentTypeError(f'invalid GROUPER "{parts[0]}", must be one of {{{", ".join(GROUPERS)}}}')
    if status not in STATUSES:
        raise argparse.ArgumentTypeError(f'invalid JOB_STATUS "{parts[1]}", must be one of {{{", ".join(STATUSES)}}}')
    try:
        code = int(parts[2]) if len(parts) == 3 else 0
    except ValueError:
        raise argparse.ArgumentTypeError(f'exit_status must be an integer, but was "{parts[2]}"') from None
    return grouper, status, code


def parser() -> argparse.ArgumentParser:
    tty = sys.stdout.isatty()
    p = argparse.ArgumentParser(prog=PROG, add_help=False,
                                description="Track the status of jobs over time without repeatedly querying the schedd.")
    p.add_argument("-help", "-h", "--help", action="help", help="show this help and exit")
    p.add_argument("-debug", action="store_true", help="accepted for HTCondor's sake")
    p.add_argument("-users", nargs="+", metavar="USER", help="which users to track")
    p.add_argument("-clusters", nargs="+", type=int, metavar="CLUSTER_ID", help="which cluster ids to track")
    p.add_argument("-larger-than", type=int, dest="since", metavar="CLUSTER_ID",
                   help="track the clusters with ids at least CLUSTER_ID")
    p.add_argument("-files", nargs="+", metavar="FILE", help="which event logs to track")
    p.add_argument("-batches", nargs="+", metavar="BATCH_NAME", help="which batch names to track")
    p.add_argument("-collector", "-pool", dest="pool", metavar="HOST[:PORT]", help="the collector that finds -schedd")
    p.add_argument("-schedd", "-name", dest="name", metavar="NAME", help="the schedd to ask (default: the local one)")
    p.add_argument("-interval", type=float, default=0.5, help="seconds between refreshes (default 0.5)")
    p.add_argument("-exit", action="append", type=exit_condition, default=[], metavar="GROUPER,JOB_STATUS[,EXIT_STATUS]",
                   help=f"exit when GROUPER ({', '.join(GROUPERS)}) of the jobs are JOB_STATUS ({', '.join(STATUSES)})")
    p.add_argument("-groupby", choices=tuple(GROUP_HEADERS), default="batch", help="group jobs by batch name, log or cluster")
    p.add_argument("-summary-type", choices=("totals", "percentages"), default="totals",
                   help="what the summary line shows (default: totals)")
    for name, default, what in (("exit-on-key-press", tty, "exit on any key press (default on a terminal)"),
                                ("table", True, "the table"), ("progress", True, "the total progress bar"),
                                ("row-progress", True, "a progress bar on each row"), ("summary", True, "the summary line"),
                                ("updated-at", True, 'the "Updated at" line'), ("color", tty, "colours (default on a terminal)"),
                                ("refresh", tty, "redraw in place instead of appending (default on a terminal)"),
                                ("abbreviate", True, "shorten the LOG column's directories to somewhat-unique prefixes")):
        dest = name.replace("-", "_")
        p.add_argument(f"-{name}", dest=dest, action="store_true", default=default, help=what)
        p.add_argument(f"-no-{name}", dest=dest, action="store_false", help=argparse.SUPPRESS)
    return p


class Found:
    """What the schedd said about the tracked jobs: the logs to follow (absolute paths, in
    order), each cluster's batch name and proc count, and each DAG's nodes log and size."""

    def __init__(self) -> None:
        self.logs: dict[str, None] = {}
        self.batch_names: dict[int, str | None] = {}
        self.procs: dict[int, int] = {}
        self.dag_logs: dict[str, str] = {}
        self.dag_totals: dict[str, int] = {}
        self.dagman_clusters: set[int] = set()


def find_logs(ns: argparse.Namespace) -> Found:
    """Ask the schedd once (PoolError when it cannot be asked)."""
    users = ns.users or []
    if not (ns.users or ns.clusters or ns.files or ns.batches):
        users = [current_user()]
    found = Found()
    found.logs.update({os.path.abspath(f): None for f in ns.files or []})
    terms = [f"Owner == {_quote(u)}" for u in users]
    terms += [f"ClusterId == {c}" for c in ns.clusters or []]
    terms += [f"JobBatchName == {_quote(b)}" for b in ns.batches or []]
    if not terms:
        return found
    schedd = Schedd(name=ns.name, pool=ns.pool)
    try:
        ads = schedd.query_objs(" || ".join(terms), PROJECTION)
    finally:
        schedd.close()
    warned: set[int] = set()
    for ad in ads:
        cid = int(ad["ClusterId"])
        if isinstance(ad.get("TotalSubmitProcs"), int):
            found.procs[cid] = ad["TotalSubmitProcs"]
        batch = found.batch_names[cid] = str(ad["JobBatchName"]) if ad.get("JobBatchName") is not None else None
        path = ad.get("DAGManNodesLog") or ad.get("UserLog")
        if not isinstance(path, str) or not path:
            if cid not in warned:
                warned.add(cid)
                warn(f"Cluster {cid} does not have a job event log file (set log=<path> in the submit description)")
            continue
        if not os.path.isabs(path):
            path = os.path.abspath(os.path.join(str(ad.get("Iwd") or "."), path))
        found.logs[path] = None
        if ad.get("DAGManNodesLog") and batch:  # a DAG's node: the DAG's jobs are one row, its batch
            found.dag_logs[path] = batch
        if ad.get("OtherJobRemoveRequirements") is not None:
            # the DAGMan job itself: not a row of its own; its nodes log (found beside its
            # own .dagman.log) is followed even before any node is queued
            found.dagman_clusters.add(cid)
            if path.endswith(".dagman.log"):
                nodes = path[: -len(".dagman.log")] + ".nodes.log"
                found.logs.setdefault(nodes, None)
                if batch:
                    found.dag_logs.setdefault(nodes, batch)
        if isinstance(ad.get("DAG_NodesTotal"), int) and ad["DAG_NodesTotal"] and batch:
            found.dag_totals[batch] = ad["DAG_NodesTotal"]
    return found


def abbreviate_path(path: str) -> str:
    """Each directory of ``path`` cut to one character past what its siblings share
    (``/home/foobar/run/a.log`` -> ``/h/f/r/a.log`` when each is alone), as
    condor_watch_q's -abbreviate; ``~`` and ``.`` stay. A directory that cannot be
    listed is left whole."""
    parts: list[str] = []
    head = path
    while True:
        head, tail = os.path.split(head)
        if not tail:
            if head:
                parts.insert(0, head)
            break
        parts.insert(0, tail)
        if not head:
            break
    out: list[str] = []
    so_far = ""
    for part in parts[:-1]:
        so_far = os.path.expanduser(os.path.join(so_far, part))
        if part in ("~", "."):
            out.append(part)
            continue
        try:
            siblings = os.listdir(os.path.dirname(so_far) or ".")
        except OSError:
            out.append(part)
            continue
        common = os.path.commonprefix(siblings) if len(siblings) > 1 else ""
        out.append(part[: len(common) + 1])
    out.append(parts[-1])
    return os.path.join(*out)


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def warn(msg: str) -> None:
    print(f"WARNING: {msg}", file=sys.stderr)


@contextlib.contextmanager
def _keys(enabled: bool) -> Iterator[Any]:
    """Stdin in cbreak mode (a key press reads at once) while watching on a terminal;
    yields a function telling whether a key was pressed."""
    if not (enabled and sys.stdin.isatty()):
        yield lambda: False
        return
    # lazy: only a watch on a terminal needs them
    import termios
    import tty

    fd = sys.stdin.fileno()
    old = termios.tcgetattr(fd)
    tty.setcbreak(fd)
    try:
        yield lambda: bool(select.select([fd], [], [], 0)[0]) and bool(os.read(fd, 64))
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, old)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    ns = parser().parse_args(argv)
    if ns.clusters is not None and ns.since is not None:
        print("ERROR: Use of both -clusters and -larger-than flag is prohibited.", file=sys.stderr)
        return 1
    try:
        found = find_logs(ns)
    except PoolError as e:
        print(error_line(PROG, e), file=sys.stderr)
        return 1
    logs = found.logs
    if not logs:
        warn("No jobs found, exiting...")
        return 0
    for path in logs:
        if not os.path.exists(path) and not path.endswith(".nodes.log"):  # a DAG's comes once a node is queued
            warn(f"Could not open event log at {path} for reading, so it will be ignored. "
                 "Reason: File path does not exist")
    followers = {path: EventLogFollower(path) for path in logs if os.path.exists(path) or path.endswith(".nodes.log")}
    tracker = Tracker(found.batch_names, found.procs, set(ns.clusters) if ns.clusters else None, ns.since,
                      found.dag_logs, found.dag_totals)
    if not ns.clusters:  # a DAGMan job is shown through its nodes, unless named with -clusters
        tracker.hidden = found.dagman_clusters
    refresh = ns.refresh and sys.stdout.isatty()
    out = sys.stdout
    if refresh:
        out.write(ALT_SCREEN_ENTER)
        # a terminal closed or a kill leaves the screen as it was found, as ^C does
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(sig, _interrupt)
    try:
        with _keys(ns.exit_on_key_press) as pressed:
            while True:
                for path, follower in followers.items():
                    tracker.feed(path, follower.poll())
                now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
                columns, _ = shutil.get_terminal_size()
                lines = screen(tracker, ns.groupby, columns, now, show_table=ns.table, show_progress=ns.progress,
                               row_bars=ns.row_progress, show_summary=ns.summary, updated_at=ns.updated_at,
                               color=ns.color, home=os.path.expanduser("~"), cwd=os.getcwd(),
                               percentages=ns.summary_type == "percentages",
                               shorten=abbreviate_path if ns.abbreviate else None)
                if not refresh:
                    lines.append("...")
                if not ns.exit:
                    lines.append("Press any key to exit" if ns.exit_on_key_press else "Press ^C to exit")
                out.write((HOME_CLEAR if refresh else "") + "\n".join(lines) + "\n")
                out.flush()
                states = tracker.job_states()
                for grouper, status, code in ns.exit:
                    if exit_met(grouper, status, states):
                        if refresh:
                            out.write(ALT_SCREEN_EXIT)
                            refresh = False
                        out.write(f'Exiting with code {code} because of condition "{grouper} {status}" at {now}\n')
                        out.flush()
                        return code
                if pressed():
                    return 0
                time.sleep(max(ns.interval, 0.05))
    except KeyboardInterrupt:
        return 0
    finally:
        if refresh:
            out.write(ALT_SCREEN_EXIT)
            out.flush()
