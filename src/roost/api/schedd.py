"""``Schedd``: submit, query, act on, follow and wait for jobs of one schedd.

Shaped after ``htcondor2.Schedd``. Local tools reach the schedd over
``run/schedd.sock`` (the kernel vouches for the user's uid), falling back to
its TCP address.
"""

from __future__ import annotations

import binascii
import os
import pwd
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from roost.api.connection import DaemonConnection
from roost.api.errors import NoPoolError
from roost.api.home import pool_home, read_address, run_path
from roost.api.jobids import job_selection, normalize_ids
from roost.net.addresses import INHERITED_FD_ENV

ACTIONS = ("remove", "hold", "release", "suspend", "continue", "vacate", "vacate_fast")


def current_user() -> str:
    """The submitting user's name as condor_submit finds it (my_username): the account of
    the effective uid, so that nice_user's and accounting_group's ``<group>.<user>`` and
    the schedd's Owner agree; the environment only for a uid with no account."""
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        for var in ("LOGNAME", "USER", "LNAME", "USERNAME"):
            name = os.environ.get(var)
            if name:
                return name
        return str(os.geteuid())


def merge_jobs(result: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Full job objects (cluster ad + proc differences) from a QUERY_JOBS answer."""
    clusters = result.get("clusters") or {}
    for c, p, diff in result.get("jobs") or ():
        ad = dict(clusters.get(str(c)) or ())
        if diff:
            ad.update(diff)
        ad["ClusterId"] = c
        ad["ProcId"] = p
        yield ad


class Schedd:
    """A client of the schedd of the pool at ``home`` ($ROOST_HOME by default).

    ``name`` and/or ``pool`` (``HOST[:PORT]`` of a collector) find another schedd, as
    ``condor_q -name NAME -pool HOST`` does: its Scheduler ad in that pool's collector
    (this home's without ``pool``) gives its address; TCP, with this home's pool token.
    ``token``: present this token instead, over TCP only (never the Unix socket, which
    would vouch for this process's user): acting for someone else, as the web dashboard does.
    That token alone (IDTOKENS, no certificate or Kerberos ticket of this process to fall
    back on), and the schedd must report the token's subject as who we are.
    """

    def __init__(self, home: str | os.PathLike[str] | None = None, *, name: str | None = None,
                 pool: str | None = None, timeout: float | None = 300.0, address: str | None = None,
                 token: str | None = None) -> None:
        self.home_dir = pool_home(home)
        self.name = name
        self.pool = pool
        #: the address found through the collector (with ``name``/``pool``), once connected;
        #: given, the schedd is reached there (a location ad's ``MyAddress``)
        self.address: str | None = address
        self._conn = DaemonConnection(self.home_dir, "schedd", self._addresses, timeout)
        self._conn.remote = name is not None or pool is not None or address is not None
        self._conn.token = token

    @classmethod
    def locate(cls, name: str | None = None, pool: str | None = None,
               home: str | os.PathLike[str] | None = None, *, timeout: float | None = 300.0) -> Schedd:
        """The schedd called ``name`` in the pool whose collector is at ``pool``,
        connected now: NoPoolError ("no schedd named X in the pool at H:P") if none."""
        schedd = cls(home, name=name, pool=pool, timeout=timeout)
        schedd.connect()
        return schedd

    @classmethod
    def inherited(cls, timeout: float | None = 300.0) -> Schedd:
        """The schedd that started this process (a scheduler-universe job, as DAGMan
        is), through the connection it handed down ($ROOST_SCHEDD_FD): it speaks for
        the job's owner and needs no access to the pool's home."""
        fd = os.environ.get(INHERITED_FD_ENV)
        if not fd:
            raise NoPoolError(f"${INHERITED_FD_ENV} is not set: this process was not started by a schedd")
        schedd = cls(os.environ.get("ROOST_HOME") or "/", timeout=timeout)
        schedd._conn.addresses = lambda: [f"fd:{fd}"]
        return schedd

    def _addresses(self) -> list[str]:
        """The schedd's Unix socket, then its TCP address, as run/ says now; with
        ``name``/``pool``, the address its collector ad gives."""
        if self._conn.remote and self.address and self.name is None and self.pool is None:
            return [self.address]
        if self._conn.remote:
            # lazy: only -name/-pool ask a collector where the schedd is
            from roost.api.locate import locate

            self.address = locate(self.home_dir, "Scheduler", self.name, self.pool)
            return [self.address]
        addresses = []
        sock = run_path(self.home_dir, "schedd.sock")
        if os.path.exists(sock) and self._conn.token is None:
            addresses.append("unix:" + sock)
        tcp = read_address(run_path(self.home_dir, "schedd.address"))
        if tcp:
            addresses.append(tcp)
        return addresses

    @property
    def home(self) -> Any:
        """The pool's ROOST_HOME as a ``pathlib.Path``."""
        # lazy: pathlib would cost every `roost q` ~2 ms (see roost.api.home)
        from pathlib import Path

        return Path(self.home_dir)

    def connect(self) -> None:
        """Open the connection now (NoPoolError if there is no schedd to reach)."""
        self._conn._open()

    def call(self, cmd: str, **args: Any) -> dict[str, Any]:
        """One raw protocol request (see docs/protocol.md)."""
        return self._conn.call(cmd, **args)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Schedd:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- submitting -----------------------------------------------------------------

    def submit_file(
        self,
        path: str,
        *,
        overrides: dict[str, str] | None = None,
        append: list[str] | None = None,
    ) -> Any:
        """Submit the jobs a submit file describes; returns a ``SubmitResult``.

        Relative paths in the file are taken from the current directory, as
        condor_submit takes them. SubmitError on a bad description.
        """
        # lazy: the submit language (~30 ms) only for submitting, never for `roost q`
        from roost.submit.reading import parse_file

        desc = parse_file(path, overrides=overrides, append=append)
        return self.submit(desc)

    def submit(self, description: Any, count: int | None = None, *, cwd: str | None = None) -> Any:
        """Submit a description: a ``SubmitDescription``, submit-file text, or a dict of
        submit commands (``count`` procs, default 1, when it has no queue statement)."""
        # lazy: the submit language (~30 ms) only for submitting, never for `roost q`
        from roost.api.submitting import submit_description
        from roost.submit import SubmitDescription
        from roost.submit.lexer import is_queue_statement
        from roost.submit.reading import parse_text

        if isinstance(description, SubmitDescription):
            desc = description
        else:
            if isinstance(description, dict):
                text = "\n".join(f"{k} = {v}" for k, v in description.items()) + "\n"
            else:
                text = str(description)
            has_queue = any(is_queue_statement(ln) for ln in text.splitlines())
            if count is not None or not has_queue:
                text = "\n".join(ln for ln in text.splitlines() if not is_queue_statement(ln))
                text += f"\nqueue {1 if count is None else int(count)}\n"
            desc = parse_text(text, cwd=cwd)
        return submit_description(self.call, desc, owner=current_user(), qdate=int(time.time()))

    # -- querying -------------------------------------------------------------------

    def query_raw(
        self,
        constraint: str | None = None,
        projection: list[str] | None = None,
        *,
        owner: str | None = None,
        ids: Iterable[str] | str | None = None,
        history: bool = False,
        limit: int | None = None,
        my_jobs: bool = False,
        batch: bool = False,
    ) -> dict[str, Any]:
        """The QUERY_JOBS answer as sent: ``clusters`` and per-proc ``jobs`` (see merge_jobs).
        ``my_jobs``: only the caller's jobs, unless the schedd counts the caller a queue
        super user (condor_q's default); the answer's ``my_name`` says whose it chose.
        ``batch``: counts per cluster and status in ``counts`` instead of a row per job
        (docs/protocol.md; a schedd that predates it answers with every job)."""
        args: dict[str, Any] = {}
        if my_jobs:
            args["my_jobs"] = True
        if batch:
            args["batch"] = True
        if constraint:
            args["constraint"] = constraint
        if projection:
            args["projection"] = list(dict.fromkeys(["ClusterId", "ProcId", *projection]))
        if owner:
            args["owner"] = owner
        id_list = normalize_ids(ids)
        if id_list:
            args["ids"] = id_list
        if history:
            args["history"] = True
        if limit is not None:
            args["limit"] = int(limit)
        return self.call("QUERY_JOBS", **args)

    def query_objs(self, constraint: str | None = None, projection: list[str] | None = None,
                   **kw: Any) -> list[dict[str, Any]]:
        """Jobs as JSON-form dicts (cheap: no ClassAds are built)."""
        return list(merge_jobs(self.query_raw(constraint, projection, **kw)))

    def query(self, constraint: str | None = None, projection: list[str] | None = None,
              **kw: Any) -> list[Any]:
        """Jobs as ClassAds, as ``htcondor2.Schedd.query`` returns them."""
        # lazy: only query() builds ClassAds; `roost q` (query_raw) never loads the library (~25 ms)
        from roost.net.adwire import obj_to_ad

        return [obj_to_ad(o) for o in self.query_objs(constraint, projection, **kw)]

    def totals(self, constraint: str | None = None, *, owner: str | None = None) -> dict[str, int]:
        """Counts of jobs by state name (``Idle``, ``Running``, ``Held`` ...)."""
        args: dict[str, Any] = {"totals": True}
        if constraint:
            args["constraint"] = constraint
        if owner:
            args["owner"] = owner
        return {k: int(v) for k, v in (self.call("QUERY_JOBS", **args).get("totals") or {}).items()}

    def history(
        self,
        constraint: str | None = None,
        projection: list[str] | None = None,
        *,
        match: int | None = None,
        owner: str | None = None,
        ids: Iterable[str] | str | None = None,
    ) -> list[dict[str, Any]]:
        """Finished jobs, most recently finished first (``condor_history``).

        QUERY_JOBS with ``history`` answers queued jobs too; only completed and removed
        ones are asked for (a finished job that stays in the queue, leave_in_queue,
        is listed as condor_history would list it once it leaves).
        """
        finished = "(JobStatus == 3 || JobStatus == 4)"
        constraint = f"{finished} && ({constraint})" if constraint else finished
        result = self.query_raw(constraint, projection, owner=owner, ids=ids, history=True, limit=match)
        return list(merge_jobs(result))

    # -- acting ---------------------------------------------------------------------

    def act(
        self,
        action: str,
        ids: Iterable[str] | str | None = None,
        *,
        constraint: str | None = None,
        owner: str | None = None,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """``remove``, ``hold``, ``release``, ``suspend``, ``continue``, ``vacate`` or
        ``vacate_fast`` jobs by id, constraint or owner (``reason`` for the first three).

        Returns ``{"count": n, "ids": [...]}``: the jobs the action applied to.
        """
        action = action.lower()
        if action not in ACTIONS:
            raise ValueError(f"action must be one of {', '.join(ACTIONS)}, not {action!r}")
        args: dict[str, Any] = {"action": action, **_selection("act", ids, constraint, owner)}
        if reason:
            args["reason"] = reason
        return self.call("ACT", **args)

    def edit(self, ids: Iterable[str] | str | None = None, attrs: dict[str, Any] | None = None, *,
             constraint: str | None = None, owner: str | None = None) -> dict[str, Any]:
        """Set job attributes (condor_qedit): ``attrs`` maps names to values (ints,
        floats, bools, strings) or to expressions (:class:`Expr`, ClassAd text).
        Returns ``{"count": n, "ids": [...]}``."""
        if not attrs:
            raise ValueError("edit needs attributes to set")
        attr_texts = {k: _expr_text(v) for k, v in attrs.items()}
        return self.call("EDIT", attrs=attr_texts, **_selection("edit", ids, constraint, owner))

    # -- reservations of dedicated resources (roost reserve) --------------------------------

    def reserve(self, nodes: int, duration: float, start: float | None = None) -> dict[str, Any]:
        """Hold ``nodes`` dedicated resources of this schedd's dedicated scheduler for
        ``duration`` seconds from ``start`` (Unix time; default now): nothing runs on them
        then. Returns ``{"id", "start", "end"}``. Needs ADMINISTRATOR."""
        args: dict[str, Any] = {"op": "add", "nodes": int(nodes), "duration": float(duration)}
        if start is not None:
            args["start"] = float(start)
        return self.call("RESERVE", **args)

    def reservations(self) -> list[dict[str, Any]]:
        """The reservations not over yet: ``id``, ``nodes``, ``start``, ``end``, ``by`` and
        ``nodes_held`` (the slots the dedicated scheduler set aside for it)."""
        return list(self.call("RESERVE", op="list").get("reservations") or [])

    def unreserve(self, reservation_id: str) -> None:
        """Drop a reservation. Needs ADMINISTRATOR."""
        self.call("RESERVE", op="remove", id=reservation_id)

    # -- watching a running job (roost tail, roost ssh_to_job) ---------------------------

    def tail(self, job_id: str, name: str | None = None, *, stderr: bool = False, offset: int | None = None,
             maxbytes: int = 1024) -> dict[str, Any]:
        """The tail of a running job's stdout (``stderr``: its stderr; ``name``: another
        file of its sandbox) as it is on the execute machine now (condor_tail).

        Returns ``{"data": bytes, "offset": where they start, "end": where they end,
        "size": the file's size, "running": bool}``: the last ``maxbytes`` bytes, or
        with ``offset`` (a previous answer's ``end``) what came since, at most
        ``maxbytes``. RefusedError ``NOT_RUNNING`` ("job 3.0 is not running (Idle)"),
        ``DENIED`` (not your job; a link or a file the job's user may not read)."""
        args: dict[str, Any] = {"job": job_id, "maxbytes": int(maxbytes)}
        if name:
            args["name"] = name
        else:
            args["stream"] = "stderr" if stderr else "stdout"
        if offset is not None:
            args["offset"] = int(offset)
        got = self.call("TAIL_JOB", **args)
        got["data"] = binascii.a2b_base64(got.get("data") or "")
        return got

    def ssh_to_job(self, job_id: str, command: str | None = None, *, pty: bool = False, term: str | None = None,
                   rows: int = 0, cols: int = 0) -> Any:
        """A session beside a running job, as the job's user, in its sandbox, with its
        environment (condor_ssh_to_job): ``command`` run by ``/bin/sh -c``, else an
        interactive shell; ``pty`` gives it a terminal. Returns a
        :class:`roost.api.jobshell.JobShell` on a connection of its own."""
        # lazy: the relay's packets only for a session, never for `roost q`
        from roost.api.jobshell import JobShell

        conn = DaemonConnection(self.home_dir, "schedd", self._addresses, None)  # a session has no deadline
        conn.remote = self._conn.remote
        args: dict[str, Any] = {"job": job_id, "pty": bool(pty)}
        if command:
            args["command"] = command
        if term:
            args["term"] = term
        if rows > 0 and cols > 0:
            args["rows"], args["cols"] = int(rows), int(cols)
        try:
            info = conn.call("SSH_TO_JOB", **args)
            return JobShell(conn._open(), info)
        except BaseException:
            conn.close()
            raise

    def run_in_job(self, job_id: str, command: str | list[str], stdin: bytes = b"", *,
                   timeout: float | None = None) -> Any:
        """Run ``command`` (a shell command line, or an argv list, quoted for the shell)
        in a running job's sandbox as the job's user; a ``CommandResult`` (returncode,
        stdout, stderr) once it has ended."""
        # lazy: shlex (and re) only to quote an argv, never for `roost q`
        import shlex

        # lazy: the relay's packets only for a session, never for `roost q`
        from roost.api.jobshell import run_to_end

        text = command if isinstance(command, str) else shlex.join(command)
        return run_to_end(self.ssh_to_job(job_id, text), stdin, timeout)

    # -- waiting --------------------------------------------------------------------

    def wait(
        self,
        ids: Iterable[str] | str,
        timeout: float | None = None,
        progress: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        """Block until every job in ``ids`` has left the queue (completed or removed).

        Returns the last ``{"done", "total", "counts"}``; ``progress`` is called with
        each change. Raises TimeoutError when ``timeout`` seconds pass first.
        """
        id_list = normalize_ids(ids)
        deadline = None if timeout is None else time.monotonic() + timeout
        last: dict[str, Any] | None = None
        while True:
            step = 30.0
            if self._conn.timeout is not None:
                # the schedd answers when the hold ends: ask for less than the client waits
                step = min(step, self._conn.timeout * 0.8)
            if deadline is not None:
                step = min(step, max(0.0, deadline - time.monotonic()))
            got = self.call("WAIT_JOBS", ids=id_list, timeout=step)
            if progress is not None and got != last:
                progress(got)
            last = got
            if int(got.get("done", 0)) >= int(got.get("total", 0)):
                return got
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"{got.get('done')} of {got.get('total')} jobs done after {timeout:g} s")


def _selection(what: str, ids: Iterable[str] | str | None, constraint: str | None,
               owner: str | None) -> dict[str, Any]:
    """The jobs an ACT or EDIT names: ids, a constraint, an owner (at least one)."""
    args = job_selection(normalize_ids(ids), constraint, owner)
    if not args:
        raise ValueError(f"{what} needs ids, a constraint or an owner")
    return args


class Expr(str):
    """ClassAd expression text for :meth:`Schedd.edit` (a plain ``str`` is a string value)."""


def _expr_text(v: Any) -> str:
    """A value as ClassAd expression text."""
    if isinstance(v, Expr):
        return str(v)
    if v is True or v is False:
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    raise TypeError(f"cannot set an attribute to {type(v).__name__}")
