"""The grid manager's Condor-C backend (``grid_resource = condor <schedd> <pool>``,
issue 30): the job handed to a schedd of another roost pool, which runs it under its
own policy, while the user's queue mirrors it. Decisions in ``core/condorc.py``.

**Who it speaks as.** The remote schedd is found through the other pool's collector
(``<pool>``, ``host[:port]``) and reached over TCP (TLS to another host) presenting a
token *that pool issued to the job's owner*: each file of
``$(GRIDMANAGER_TOKEN_DIRECTORY)/<owner>/`` (default the owner's
``~/.condor/tokens.d``), read with the owner's rights, tried in turn. The remote
schedd makes the job's Owner the user it maps that token to, so the job runs as that
pool says; a pool that did not issue the token refuses it, and the job is held with
the remote schedd's words.

**The remote job's life.** A tag (``GridJobSubmitName``, the remote job's
``RoostSubmitTag``) is committed here first; the job is then looked up by that tag at
the remote schedd and submitted only if it is not there (held, HoldReasonCode 16), its
executable, stdin and input files sent with SPOOL_FILES (read with the owner's
rights), and its id recorded (``GridJobId = "condor <schedd> <pool> <c.p>"``, event
027). A schedd killed anywhere in between finds the remote job by its tag: never two,
never none. One QUERY_JOBS per remote schedd (and job owner) per
``GRIDMANAGER_JOB_PROBE_INTERVAL`` mirrors every job there (``GridJobStatus``,
Running with event 001). A completed remote job's output comes back with TRANSFER_DATA into the local sandbox, is marked
fetched, then acknowledged (the remote job leaves its queue) and copied to the job's
``output``/``error``/``initialdir`` as its owner before the job completes here (005).
``roost rm`` and ``hold`` remove the remote job (also of a job Idle here, which rm
moves straight to history); ``release`` submits it anew. A remote schedd that stops
answering writes 026 (and 025 when it is back); the jobs wait. Each remote schedd is
polled, and each fetch runs, as a task of its own; every read and write of a transfer
must progress within ``GRIDMANAGER_TRANSFER_IDLE_TIMEOUT``; only the output the job
names comes back, at most ``GRIDMANAGER_MAX_OUTPUT_BYTES``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import pwd
import shutil
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from roost.classad.jsonform import ad_to_obj
from roost.core import jobpolicy as jp
from roost.core.condorc import (
    STDERR,
    STDOUT,
    TAG_ATTR,
    CondorCError,
    grid_job_id,
    input_names,
    keep_output,
    mirror,
    output_destination,
    poll_constraint,
    remote_ad,
    remote_id,
    submit_tag,
    wanted_outputs,
)
from roost.core.gridbatch import HOLD_GRID_SUBMIT_FAILED
from roost.core.spooling import SpoolError, spool_name
from roost.daemons.schedd.access import owner_user
from roost.daemons.schedd.gridjob import MISSING_POLLS, GridJob, text_attr
from roost.daemons.schedd.jobqueue import Job
from roost.daemons.userfiles import open_as
from roost.eventlog import GridResourceDownEvent, GridResourceUpEvent, GridSubmitEvent
from roost.net.addresses import collector_address
from roost.net.client import AsyncClient, Connection
from roost.net.errors import CallTimeout, RemoteError
from roost.net.tls import ClientTLS
from roost.net.tls_settings import client_tls
from roost.universes.grid import parse_grid_resource
from roost.vocabulary import JobStatus

if TYPE_CHECKING:
    from roost.daemons.schedd.gridmanager import GridManager

log = logging.getLogger("roost.daemons.schedd.gridmanager")

CHUNK = 1 << 20
COLLECTOR_PORT = 9618
#: a transfer with no progress (no frame, no chunk read or written) for this long fails
IDLE_TIMEOUT = 300.0
#: the most bytes a remote job may send back (all its output files together)
MAX_OUTPUT = 10 << 30
#: written into the sandbox once the output is in, before the remote schedd is told:
#: a schedd killed after that finds the output here, not at the remote schedd
_FETCHED = ".condorc-fetched.json"
_POLL_ATTRS = ["ClusterId", "ProcId", "JobStatus", "HoldReason", "HoldReasonCode", "ExitCode", "ExitBySignal",
               "ExitSignal", "RemoteHost", TAG_ATTR]


class Unreachable(Exception):
    """The remote schedd (or its pool's collector) does not answer: wait, do not hold."""


class Refused(Exception):
    """The remote side refused us (a token it did not issue, a job it will not take)."""


def _said(e: RemoteError) -> str:
    return str(getattr(e, "message", None) or e)


def _check(resp: dict[str, Any]) -> dict[str, Any]:
    """A raw frame's answer; RemoteError for a refusal."""
    if resp.get("ok") is not True:
        raise RemoteError(str(resp.get("code") or "ERROR"), str(resp.get("error") or "refused"))
    return resp


def _jobs(resp: dict[str, Any]) -> list[dict[str, Any]]:
    """QUERY_JOBS' answer (cluster ads, per-proc differences) as one dict per job."""
    clusters = resp.get("clusters") or {}
    out = []
    for c, p, diff in resp.get("jobs") or ():
        ad = dict(clusters.get(str(c)) or ())
        ad.update(diff or {})
        ad["ClusterId"], ad["ProcId"] = c, p
        out.append(ad)
    return out


class _Idle:
    """A stream's connection whose every read and write must make progress within
    ``idle`` seconds: a remote schedd that stalls mid-transfer fails the transfer
    (retried, as a lost connection is) instead of holding its Remote for ever."""

    def __init__(self, conn: Connection, idle: float) -> None:
        self.conn, self.idle = conn, idle

    async def _within(self, aw: Awaitable[Any]) -> Any:
        try:
            async with asyncio.timeout(self.idle):
                return await aw
        except TimeoutError:
            raise CallTimeout(f"{self.conn.address}: no progress in {self.idle:g} s mid-transfer") from None

    async def request(self, cmd: str, **args: Any) -> dict[str, Any]:
        return await self._within(self.conn.request(cmd, **args))

    async def send(self, obj: dict[str, Any]) -> None:
        await self._within(self.conn.send(obj))

    async def recv(self) -> dict[str, Any]:
        return await self._within(self.conn.recv())

    async def send_bytes(self, data: bytes) -> None:
        await self._within(self.conn.send_bytes(data))

    async def read_exactly(self, n: int) -> bytes:
        return await self._within(self.conn.read_exactly(n))


class Remote:
    """One remote schedd as one local owner speaks to it: found through its pool's
    collector, both asked with the first of the owner's tokens that pool honours,
    IDTOKENS only (never this schedd's own certificate); calls one at a time."""

    def __init__(self, schedd: str, pool: str, tokens: Callable[[], list[str]], tls: ClientTLS) -> None:
        self.schedd, self.pool = schedd, pool
        self.tokens = tokens
        self.tls = tls
        self.client: AsyncClient | None = None
        self.token_used = ""
        self.lock = asyncio.Lock()
        self.polling = False  # a poll of this schedd under way: the next round skips it

    async def _connect(self) -> AsyncClient:
        tokens = await asyncio.to_thread(self.tokens)  # again each time: a token withdrawn ends its connection
        if self.client is not None:
            if self.token_used in tokens:
                return self.client
            await self.close()
        if not tokens:
            raise Refused("no token to present (the owner has none for that pool)")
        reasons = []
        for token in tokens:
            try:
                address = await self._locate(token)
            except RemoteError as e:
                reasons.append(_said(e))
                continue
            self.client, self.token_used = AsyncClient(address, timeout=60, token=token, tls=self.tls), token
            return self.client
        raise Refused("; ".join(dict.fromkeys(reasons)))

    async def _locate(self, token: str) -> str:
        """The schedd's address from its pool's collector, asked with ``token`` (the
        other pool's collector refuses this pool's own)."""
        address = collector_address(self.pool, COLLECTOR_PORT)
        if address is None:
            raise Refused(f"{self.pool!r} names no collector")
        collector = AsyncClient(address, timeout=30, token=token, tls=self.tls)
        try:
            got = await collector.call("QUERY", type="Scheduler", projection=["Name", "Machine", "MyAddress"])
        except (ConnectionError, OSError) as e:
            raise Unreachable(f"the collector at {address}: {e}") from None
        finally:
            await collector.close()
        for a in got.get("ads") or []:
            if self.schedd in (a.get("Name"), a.get("Machine")) and isinstance(a.get("MyAddress"), str):
                return str(a["MyAddress"])
        raise Unreachable(f"no schedd named {self.schedd} in the pool at {address}")

    async def close(self) -> None:
        if self.client is not None:
            client, self.client = self.client, None
            await client.close()

    async def call(self, fn: Callable[[AsyncClient], Awaitable[Any]]) -> Any:
        """``await fn(client)``; Refused for a refusal, Unreachable for a lost or absent
        schedd (the connection is dropped: the next call opens a new one)."""
        async with self.lock:
            try:
                return await fn(await self._connect())
            except RemoteError as e:
                raise Refused(_said(e)) from None
            except (ConnectionError, OSError) as e:
                await self.close()
                raise Unreachable(str(e)) from None


class CondorCBackend:
    """Every Condor-C job of this schedd, grouped by remote schedd for the poll."""

    def __init__(self, manager: GridManager, config: Any) -> None:
        self.m = manager
        self.tls = client_tls(config).token_only()
        self.token_dir = (config.get("GRIDMANAGER_TOKEN_DIRECTORY") or "").strip()
        self.remotes: dict[tuple[str, str, str], Remote] = {}
        self.down: set[tuple[str, str]] = set()
        self.idle = float(config.get_float("GRIDMANAGER_TRANSFER_IDLE_TIMEOUT", IDLE_TIMEOUT) or IDLE_TIMEOUT)
        self.max_output = int(config.get_int("GRIDMANAGER_MAX_OUTPUT_BYTES", MAX_OUTPUT) or MAX_OUTPUT)

    def runner(self, job: Job) -> GridJob:
        return CondorCJob(self.m, self, job)

    def remote(self, owner: str, schedd: str, pool: str) -> Remote:
        key = (owner, schedd, pool)
        if key not in self.remotes:
            self.remotes[key] = Remote(schedd, pool, lambda: self.tokens(owner), self.tls)
        return self.remotes[key]

    def tokens(self, owner: str) -> list[str]:
        """The owner's tokens, read with the owner's rights (a user cannot point the
        schedd at a file they could not read themselves)."""
        if self.token_dir:
            directory = os.path.join(self.token_dir, owner)
        else:
            try:
                directory = os.path.join(pwd.getpwnam(owner).pw_dir, ".condor", "tokens.d")
            except KeyError:
                return []
        try:
            names = sorted(n for n in os.listdir(directory) if not n.startswith("."))
        except OSError:
            return []
        user = owner_user(owner)
        found: list[str] = []
        for name in names:
            try:
                fd = open_as(os.path.join(directory, name), user)
            except OSError:
                continue
            with os.fdopen(fd, encoding="utf-8", errors="replace") as f:
                found += [ln for ln in (raw.strip() for raw in f) if ln and not ln.startswith("#")
                          and ln.count(".") == 2]
        return found

    async def poll(self, runners: list[GridJob]) -> None:
        groups: dict[Remote, list[CondorCJob]] = {}
        for g in runners:
            if isinstance(g, CondorCJob):
                if g.rid is None:
                    if g.stopping() and not g.busy:
                        await g.let_go()
                    elif not g.busy:  # waiting for an unreachable schedd: try the submit again
                        g.busy = True
                        self.m.jobs.host.spawn(g.submit_step(), f"grid-{g.job.id}")
                    continue
                groups.setdefault(g.remote, []).append(g)
        for remote, jobs in groups.items():
            # each schedd polled on its own: one that stalls (or is busy spooling or
            # fetching for a job) delays no other, and is skipped this round
            if remote.polling or remote.lock.locked():
                continue
            remote.polling = True
            self.m.jobs.host.spawn(self._poll_one(remote, jobs), f"grid-poll-{remote.schedd}")

    async def _poll_one(self, remote: Remote, jobs: list[CondorCJob]) -> None:
        """One query for every job one owner has at one remote schedd (with that
        owner's token: the answer is what the other pool shows that user)."""
        try:
            await self._poll_remote(remote, jobs)
        finally:
            remote.polling = False

    async def _poll_remote(self, remote: Remote, jobs: list[CondorCJob]) -> None:
        constraint = poll_constraint([g.rid for g in jobs if g.rid])
        where = (remote.schedd, remote.pool)
        try:
            ads = await remote.call(lambda c: _query(c, constraint, _POLL_ATTRS, mine=True))
        except (Unreachable, Refused) as e:
            if where not in self.down:
                self.down.add(where)
                log.warning("grid manager: the schedd %s of pool %s does not answer: %s", *where, e)
            for g in jobs:
                if not g.said_down:
                    g.said_down = True
                    g.event(GridResourceDownEvent)
            return
        self.down.discard(where)
        by_id = {f"{a.get('ClusterId')}.{a.get('ProcId')}": a for a in ads}
        for g in jobs:
            if g.said_down:
                g.said_down = False
                g.event(GridResourceUpEvent)
            if not g.busy:
                await g.observe(g.ours(by_id.get(g.rid or "")))


class CondorCJob(GridJob):
    """One grid job's life at another pool's schedd."""

    def __init__(self, manager: GridManager, backend: CondorCBackend, job: Job) -> None:
        super().__init__(manager, job)
        self.b = backend
        res = parse_grid_resource(job.get("GridResource"))
        self.schedd, self.pool = res.schedd, res.pool
        self.resource = str(res)
        self.rid = remote_id(text_attr(job, "GridJobId"))
        self.remote = backend.remote(job.owner, self.schedd, self.pool)
        self.busy = True  # a submit or fetch under way: the poll leaves the job be
        self.said_down = False  # 026 written, 025 owed

    def event(self, cls: Any) -> None:
        job = self.job
        self.jobs.write_events(job, [cls(job.cluster.id, job.proc, time.time(), grid_resource=self.resource)])

    def owes_remote(self) -> bool:
        return self.rid is not None or self.busy  # known, or a submit in flight

    def ours(self, ad: dict[str, Any] | None) -> dict[str, Any] | None:
        """The polled ad, if it is the job we submitted (carries our tag): a job id
        alone could be another's after the remote schedd lost ours."""
        tag = text_attr(self.job, "GridJobSubmitName")
        return ad if ad is not None and (tag is None or ad.get(TAG_ATTR) == tag) else None

    def _mark(self) -> dict[str, Any] | None:
        return read_mark(self.sandbox)

    async def begin(self) -> None:
        if await asyncio.to_thread(self._mark) is not None:
            try:
                await self._finish_fetched()  # a predecessor fetched the output, then died
            finally:
                self.busy = False
            return
        if self.rid is None:
            await self.submit_step()
            return
        self.busy = False
        self.m.wake()

    # -- submit ----------------------------------------------------------------------------

    async def submit_step(self) -> None:
        """Find the job's remote twin by its tag, or submit it; spool its input; record
        its id. An unreachable schedd leaves the job idle for the next poll to retry."""
        job = self.job
        try:
            tag = text_attr(job, "GridJobSubmitName")
            if tag is None:
                starts = job.get("NumGridSubmits")
                attempt = (starts if isinstance(starts, int) else 0) + 1
                tag = submit_tag(self.m.schedd_name, job.cluster.id, job.proc, attempt)
                if not self.in_queue():
                    return
                await self.jobs.commit(self.jobs.set_ops(job, {"GridJobSubmitName": tag, "NumGridSubmits": attempt}))
            try:
                files = input_names(job.get)
                ad = remote_ad(ad_to_obj(job.classad()), tag)
            except CondorCError as e:
                await self.hold(f"Cannot hand the job to {self.resource}: {e}", HOLD_GRID_SUBMIT_FAILED)
                return
            try:
                rid = await self.remote.call(lambda c: self._submit(c, tag, ad, files))
            except Refused as e:
                await self.hold(f"The remote schedd {self.schedd} (pool {self.pool}) refused the job: {e}",
                                HOLD_GRID_SUBMIT_FAILED)
                return
            except Unreachable as e:
                if not self.said_down:
                    self.said_down = True
                    log.warning("job %s: %s does not answer: %s", job.id, self.resource, e)
                    self.event(GridResourceDownEvent)
                return
            except SpoolError as e:
                await self.hold(f"Cannot send the job's input to {self.resource}: {e}", jp.HOLD_TRANSFER_INPUT_ERROR)
                return
            self.rid = rid
            if not job.cluster.holds(job):  # removed meanwhile: the next poll removes the remote job
                self.m.wake()
                return
            if self.said_down:
                self.said_down = False
                self.event(GridResourceUpEvent)
            gid = grid_job_id(self.schedd, self.pool, rid)
            await self.jobs.report(job, self.jobs.set_ops(job, {"GridJobId": gid, "GridJobStatus": "IDLE"}),
                                   [GridSubmitEvent(job.cluster.id, job.proc, time.time(),
                                                    grid_resource=self.resource, grid_job_id=gid)])
            log.info("job %s: remote job %s at %s (%s)", job.id, rid, self.resource, tag)
            self.m.wake()
        finally:
            self.busy = False

    async def _submit(self, c: AsyncClient, tag: str, ad: dict[str, Any], files: list[tuple[str, str]]) -> str:
        """The remote id of the job tagged ``tag``, submitted now if the remote schedd
        has none; its input spooled if it still waits for it."""
        found = await _query(c, f"{TAG_ATTR} == {json.dumps(tag)}",
                             ["ClusterId", "ProcId", "JobStatus", "HoldReasonCode", "StageInFinish"], mine=True)
        if found:
            a = found[0]
            rid = f"{a['ClusterId']}.{a['ProcId']}"
        else:
            cid = int((await c.call("NEW_CLUSTER"))["cluster"])
            await c.call("SUBMIT", cluster=cid, cluster_ad=ad, procs=[{}])
            rid, a = f"{cid}.0", {"JobStatus": JobStatus.HELD, "HoldReasonCode": 16}
        if a.get("JobStatus") == JobStatus.HELD and a.get("HoldReasonCode") == 16 and a.get("StageInFinish") is None:
            try:
                await self._spool(c, rid, files)
            except (RemoteError, SpoolError):
                # the job will be held here: leave no remote job waiting for input for ever
                await c.call("ACT", action="remove", ids=[rid], reason="its input could not be sent")
                raise
        return rid

    async def _spool(self, c: AsyncClient, rid: str, files: list[tuple[str, str]]) -> None:
        """SPOOL_FILES: each input file read with the owner's rights."""
        user = owner_user(self.job.owner)
        fds: list[tuple[int, int, int]] = []
        try:
            for path, _name in files:
                try:
                    fd = await asyncio.to_thread(open_as, path, user)
                except OSError as e:
                    raise SpoolError(f"{path}: {e.strerror or e}") from None
                st = os.fstat(fd)
                fds.append((fd, st.st_size, st.st_mode & 0o777))
            entries = [{"name": spool_name(name), "size": size, "mode": mode}
                       for (_p, name), (_fd, size, mode) in zip(files, fds, strict=True)]
            async with c.stream() as raw:
                conn = _Idle(raw, self.b.idle)
                await conn.request("SPOOL_FILES", job=rid, files=entries)
                for fd, size, _mode in fds:
                    remaining = size
                    while remaining > 0:
                        n = min(CHUNK, remaining)
                        data = await asyncio.to_thread(os.read, fd, n) or bytes(n)  # shrunk: zeros, as promised
                        await conn.send_bytes(data)
                        remaining -= len(data)
                _check(await conn.recv())
        finally:
            for fd, _s, _m in fds:
                os.close(fd)

    # -- remote state ------------------------------------------------------------------------

    async def observe(self, ad: dict[str, Any] | None) -> None:
        job = self.job
        if self.gone():
            return
        if self.stopping():
            await self._stop(ad)
            return
        if ad is None:
            if await asyncio.to_thread(self._mark) is not None:
                # fetched, then the acknowledgement's answer was lost: the output is here
                self._spawn(self._finish_fetched())
                return
            self.missing += 1
            if self.missing >= MISSING_POLLS:
                await self.hold(f"The remote schedd {self.schedd} no longer has job {self.rid}",
                                HOLD_GRID_SUBMIT_FAILED)
            return
        self.missing = 0
        m = mirror(ad)
        if m.grid_status != job.get("GridJobStatus") and not m.done:
            await self.jobs.commit(self.jobs.set_ops(job, {"GridJobStatus": m.grid_status}))
        if m.status in (JobStatus.RUNNING, JobStatus.SUSPENDED) and job.status == JobStatus.IDLE:
            await self.running(self._host(ad), f"<condor:{self.schedd}>", m.grid_status)
        if not m.done:
            return
        if m.status == JobStatus.COMPLETED:
            self._spawn(self._fetch(m.exit_code, m.exit_signal))  # a task of its own: the poll goes on
            return
        # held or removed over there: take it out of the remote queue, hold it here
        rid = self.rid
        try:
            await self.remote.call(lambda c: c.call("ACT", action="remove", ids=[rid],
                                                    reason="held or removed at the other pool"))
        except (Refused, Unreachable) as e:
            log.warning("job %s: could not remove remote job %s: %s", job.id, rid, e)
        await self.hold(m.hold_reason or "the remote schedd ended the job", m.hold_code, grid_status=m.grid_status)

    def _spawn(self, coro: Awaitable[None]) -> None:
        """Run a fetch as its own task, the job busy (left alone by the polls) meanwhile."""
        self.busy = True

        async def run() -> None:
            try:
                await coro
            finally:
                self.busy = False

        self.m.jobs.host.spawn(run(), f"grid-fetch-{self.job.id}")

    def _host(self, ad: dict[str, Any]) -> str:
        host = ad.get("RemoteHost")
        return f"condor/{self.schedd}/{host}" if isinstance(host, str) and host else f"condor/{self.schedd}"

    async def _stop(self, ad: dict[str, Any] | None) -> None:
        """Removed or held by the user: remove the remote job, then let it go."""
        rid = self.rid
        if rid and ad is not None and not self.cancelled:
            try:
                await self.remote.call(lambda c: c.call("ACT", action="remove", ids=[rid],
                                                        reason="removed or held at its submitter"))
                self.cancelled = True
            except Refused as e:
                log.warning("job %s: the remote schedd would not remove %s: %s", self.job.id, rid, e)
                self.cancelled = True
            except Unreachable:
                return  # try again at the next poll
        if ad is None or ad.get("JobStatus") in (JobStatus.REMOVED, JobStatus.COMPLETED) or self.cancelled:
            await self.let_go()

    async def _fetch(self, code: int | None, sig: int | None) -> None:
        """TRANSFER_DATA into the sandbox, the fetched mark, the acknowledgement (the
        remote job leaves its queue), then the files to their places and the exit."""
        rid = self.rid
        try:
            await asyncio.to_thread(self._make_sandbox)
            if not self.in_queue():
                return  # removed or held meanwhile: the next poll removes the remote job
            await self.remote.call(lambda c: self._transfer(c, rid or "", {"code": code, "signal": sig}))
        except Unreachable as e:
            log.warning("job %s: fetching the output of %s: %s; again at the next poll", self.job.id, rid, e)
            return
        except (Refused, OSError, SpoolError) as e:
            await self.hold(f"Failed to fetch the output from {self.resource}: {e}", jp.HOLD_TRANSFER_OUTPUT_ERROR)
            return
        await self._finish_fetched()

    def _make_sandbox(self) -> None:
        shutil.rmtree(self.sandbox, ignore_errors=True)
        os.makedirs(self.m.root, mode=0o755, exist_ok=True)
        os.mkdir(self.sandbox, 0o700)

    async def _transfer(self, c: AsyncClient, rid: str, exit_info: dict[str, Any]) -> None:
        """The output files the job asked for into the sandbox (top-level names of
        transfer_output_files, or every one when it names none, and stdout/stderr;
        others are read and dropped; more than GRIDMANAGER_MAX_OUTPUT_BYTES in all is
        refused), the mark, then the acknowledgement."""
        wanted = wanted_outputs(self.job.get)
        async with c.stream() as raw:
            conn = _Idle(raw, self.b.idle)
            resp = await conn.request("TRANSFER_DATA", job=rid)
            names: list[str] = []
            total = 0
            for entry in resp.get("files") or []:
                size = entry.get("size")
                if type(size) is not int or size < 0:
                    raise Refused(f"the remote schedd announced a bad file: {entry!r}")
                name = spool_name(entry.get("name"))
                keep = keep_output(name, wanted) and name not in names
                if keep:
                    total += size
                    if total > self.b.max_output:
                        raise Refused(f"the output is more than GRIDMANAGER_MAX_OUTPUT_BYTES "
                                      f"({self.b.max_output} bytes)")
                await self._receive(conn, os.path.join(self.sandbox, name) if keep else None, size)
                if keep:
                    names.append(name)
            mark = {**exit_info, "files": names, "host": self.job.get("RemoteHost")}
            await asyncio.to_thread(_write_mark, os.path.join(self.sandbox, _FETCHED), json.dumps(mark).encode())
            await conn.send({"received": True})
            _check(await conn.recv())

    @staticmethod
    async def _receive(conn: _Idle, path: str | None, size: int) -> None:
        fd = await asyncio.to_thread(os.open, path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                                     0o600) if path else None
        try:
            remaining = size
            while remaining > 0:
                data = await conn.read_exactly(min(CHUNK, remaining))
                remaining -= len(data)
                if fd is not None:
                    await asyncio.to_thread(_write_all, fd, data)
        finally:
            if fd is not None:
                os.close(fd)

    async def _finish_fetched(self) -> None:
        """The fetched output copied to where the job wants it, as its owner; the exit."""
        info = await asyncio.to_thread(self._mark)
        if info is None or not self.in_queue():
            self.m.wake()  # the mark gone, or the job removed or held meanwhile: the poll decides
            return
        get = self.job.get
        pairs = []
        for name in info.get("files") or []:
            dst = output_destination(get, name)
            if dst is not None:
                pairs.append((name, dst))
        problem = await asyncio.to_thread(self.copy_out, pairs, {STDOUT, STDERR})
        if problem:
            await self.hold(f"Failed to transfer output files from {self.resource}: {problem}",
                            jp.HOLD_TRANSFER_OUTPUT_ERROR)
            return
        await asyncio.to_thread(shutil.rmtree, self.sandbox, True)
        host = info.get("host") if isinstance(info.get("host"), str) else f"condor/{self.schedd}"
        await self.exited(info.get("code"), info.get("signal"), "COMPLETED", host, f"<condor:{self.schedd}>")


async def _query(c: AsyncClient, constraint: str, projection: list[str], *, mine: bool = False) -> list[dict[str, Any]]:
    """QUERY_JOBS; ``mine``: only the jobs of the user the remote pool maps our token to
    (another user's job can carry any tag)."""
    extra = {"my_jobs": True} if mine else {}
    return _jobs(await c.call("QUERY_JOBS", constraint=constraint, projection=projection, **extra))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_mark(sandbox: str) -> dict[str, Any] | None:
    """The fetched mark in ``sandbox``, or None: none, or one a kill cut short (read as
    "not fetched": the output is fetched again while the remote schedd still has it)."""
    try:
        with open(os.path.join(sandbox, _FETCHED), "rb") as f:
            info = json.loads(f.read())
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def write_mark(sandbox: str, data: bytes) -> None:
    """The fetched mark into ``sandbox``."""
    _write_mark(os.path.join(sandbox, _FETCHED), data)


def _write_mark(path: str, data: bytes) -> None:
    """Written whole or not at all (a temporary file, then renamed): a kill mid-write
    leaves no half mark."""
    tmp = f"{path}.tmp"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, path)


__all__ = ["CondorCBackend", "CondorCJob", "read_mark", "write_mark"]
