"""What a running job asks of the submit side through Chirp: CHIRP_ATTR and CHIRP_IO.

The starter serves HTCondor's Chirp protocol to the job (startd/chirp.py) and forwards
what needs the submit side here, naming its claim and job as every starter call does
(served through the claim's shadow). HTCondor's shadow decides the same questions:

- ``CHIRP_ATTR``: ``get`` a job attribute (needs ``WantIOProxy`` or
  ``WantRemoteUpdates``), ``set`` one at once (the same, or for a delayed-update name:
  ``WantDelayedUpdates``, default true, and ``CHIRP_DELAYED_UPDATE_PREFIX``), never one
  the schedd keeps for itself (EDIT's list), ``delayed`` (the starter's batch of delayed
  updates: each applied as ``set`` would, the rest ignored), ``ulog`` (a generic event,
  008, in the job's event log).
- ``CHIRP_IO``: a file operation (needs ``WantIOProxy``), done by the job's helper
  process as the job's owner (chirpio.py: one per job, started on its first file
  operation, ended with the job or by ``op: end``). Owners without an account here, and
  root (whose jobs run as ``nobody`` on execute hosts), act as ``nobody``; a schedd that
  is not root acts as itself. The request's ``size`` bytes follow it (what a write
  carries); the answer ``{"rc", "errno", "text", "size"}`` is followed by its ``size``
  bytes (what a read got). A helper that does not answer within HELPER_TIMEOUT (a FIFO
  that never fills) is killed: the job's open files go with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import subprocess
import sys
import time
from typing import Any

from roost.core import chirp as rules
from roost.core.accounting_user import with_edits
from roost.daemons.schedd.access import QueueRights
from roost.daemons.schedd.chirpio import HEADER, IO_MAX
from roost.daemons.schedd.jobqueue import Job
from roost.daemons.schedd.localuniverse import run_as
from roost.daemons.schedd.queries import edit_value
from roost.daemons.schedd.shadow import Shadows
from roost.eventlog import GenericEvent
from roost.net import framing
from roost.net.errors import RequestError, bad_request
from roost.net.server import Peer

log = logging.getLogger("roost.schedd")

HELPER_TIMEOUT = 60.0  # seconds a helper may take over one operation
SWEEP_INTERVAL = 15.0  # seconds between looks for helpers whose job is gone
ULOG_MAX = 128  # characters of a ulog message kept (HTCondor's generic event holds as much)
CHUNK = 1 << 20
#: what decides a job's Chirp: never set through Chirp (a job would grant itself more)
_CHIRP_WANTS = frozenset(a.lower() for a in ("WantIOProxy", "WantRemoteUpdates", "WantDelayedUpdates",
                                              "WantRemoteIO"))


def _job_bool(job: Job, name: str, default: bool) -> bool:
    """A job attribute as HTCondor's EvaluateAttrBool reads it (numbers count)."""
    v = job.get(name)
    if v is None:
        return default
    if isinstance(v, str) and v.startswith("/Expr("):
        try:
            v = job.classad().eval(name)
        except Exception:
            return default
    if isinstance(v, bool):
        return v
    if type(v) in (int, float):
        return v != 0
    return default


def _io_identity(owner: str) -> tuple[int, int, list[int]]:
    """(uid, gid, groups) a job's file operations run as (whom its local-universe job
    would run as); uid -1: as the schedd itself."""
    ids = run_as(owner)
    if ids is None:
        return -1, -1, []
    try:
        return ids[0], ids[1], sorted(set(os.getgrouplist(ids[2], ids[1])))
    except OSError:
        return ids[0], ids[1], [ids[1]]


class Helper:
    """One job's file helper process and the socket to it."""

    def __init__(self, claim_id: str, proc: asyncio.subprocess.Process,
                 reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.claim_id = claim_id
        self.proc = proc
        self.reader = reader
        self.writer = writer
        self.lock = asyncio.Lock()
        self.ended = False

    @classmethod
    async def start(cls, job: Job, claim_id: str) -> Helper:
        uid, gid, groups = _io_identity(job.owner)
        iwd = job.get("Iwd")
        ours, theirs = socket.socketpair()
        try:
            # our own interpreter in isolated mode, started as we are: it drops to the
            # owner itself once loaded (chirpio.become), before it reads a request
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-I", "-m", "roost.daemons.schedd.chirpio", str(theirs.fileno()), str(uid),
                str(gid), ",".join(map(str, groups)), iwd if isinstance(iwd, str) and iwd else "/",
                pass_fds=(theirs.fileno(),), cwd="/", env={"PATH": "/usr/bin:/bin"},
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        reader, writer = await asyncio.open_unix_connection(sock=ours, limit=IO_MAX + (1 << 16))
        log.info("job %s: chirp file helper %d started (uid %d)", job.id, proc.pid, uid)
        return cls(claim_id, proc, reader, writer)

    async def call(self, op: str, args: Any, payload: bytes) -> tuple[dict[str, Any], bytes]:
        """One operation; ConnectionError when the helper is gone (or had to be ended)."""
        async with self.lock:
            if self.ended:
                raise ConnectionError("the job's file helper has ended")
            body = json.dumps({"op": op, "args": args, "size": len(payload)}).encode()
            try:
                self.writer.write(HEADER.pack(len(body)) + body)
                if payload:
                    self.writer.write(payload)
                async with asyncio.timeout(HELPER_TIMEOUT):
                    await self.writer.drain()
                    (n,) = HEADER.unpack(await self.reader.readexactly(HEADER.size))
                    if n > 1 << 20:
                        raise ConnectionError("the file helper sent a bad answer")
                    head = json.loads(await self.reader.readexactly(n))
                    size = head.get("size", 0) if isinstance(head, dict) else -1
                    if type(size) is not int or not 0 <= size <= IO_MAX:
                        raise ConnectionError("the file helper sent a bad answer")
                    data = await self.reader.readexactly(size) if size else b""
            except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError) as e:
                self.end()
                raise ConnectionError(f"the job's file helper failed: {e or 'no answer in time'}") from None
            except BaseException:  # cancelled mid-exchange: its answer would be the next one's
                self.end()
                raise
            return head, data

    def end(self) -> None:
        """Close the socket (the helper exits on it, closing the job's files) and make
        sure it is gone."""
        if self.ended:
            return
        self.ended = True
        self.writer.close()
        with contextlib.suppress(ProcessLookupError):
            if self.proc.returncode is None:
                self.proc.kill()


class ChirpCalls:
    """Handlers of CHIRP_ATTR and CHIRP_IO, and the jobs' file helpers."""

    def __init__(self, shadows: Shadows, config: Any = None) -> None:
        self.shadows = shadows
        #: who may charge whom (the daemon's QueueRights); None: not checked (unit tests)
        self.rights: QueueRights | None = None
        self.config = config
        self.helpers: dict[tuple[int, int, int], Helper] = {}  # (cluster, proc, parallel node)
        self._starting: dict[tuple[int, int, int], asyncio.Future[Helper]] = {}
        self._sweeper: asyncio.Task[None] | None = None
        self._reaping: set[asyncio.Task[Any]] = set()
        shadows.on_run_end = self.run_ended

    def _prefix(self) -> list[str]:
        return rules.prefix_words(self.config.get("CHIRP_DELAYED_UPDATE_PREFIX") if self.config is not None else None)

    # -- attributes -----------------------------------------------------------------------

    def may_read(self, job: Job) -> bool:
        return rules.may_read_attrs(_job_bool(job, "WantIOProxy", False), _job_bool(job, "WantRemoteUpdates", False))

    def _check_accounting(self, job: Job, values: dict[str, Any]) -> None:
        """A job speaks for its owner: it may name no other accounting user than its
        owner may (core.accounting_user)."""
        if self.rights is not None:
            self.rights.check_accounting_user(job.owner, job.owner, with_edits(values, job.get), "CHIRP_ATTR")

    def may_write(self, job: Job, name: str) -> bool:
        if name.lower() in _CHIRP_WANTS:
            return False
        return rules.may_write_attr(_job_bool(job, "WantIOProxy", False), _job_bool(job, "WantRemoteUpdates", False),
                                    _job_bool(job, "WantDelayedUpdates", True), self._prefix(), name)

    async def h_chirp_attr(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        _sh, job = self.shadows.serving(req["claim_id"], req["job"])
        op = req["op"]
        jobs = self.shadows.jobs
        node_view, job = job, getattr(job, "of", job)  # a parallel job's node changes its proc
        if op == "get":
            name = req.get("name")
            if not isinstance(name, str):
                raise bad_request("CHIRP_ATTR get: name the attribute")
            if not self.may_read(job):
                raise RequestError("DENIED", f"job {job.id} may not read its attributes (WantRemoteUpdates)")
            ad = node_view.classad()
            return {"expr": str(ad.lookup(name)) if name in ad else "UNDEFINED"}
        if op == "set":
            name, text = req.get("name"), req.get("expr")
            value = edit_value("CHIRP_ATTR", name, text)
            if not self.may_write(job, name):
                raise RequestError("DENIED", f"job {job.id} may not set {name} (WantRemoteUpdates)")
            self._check_accounting(job, {name: value})
            await jobs.report(job, jobs.set_ops(job, job.spelled({name: value})), [])
            log.debug("job %s: chirp set %s = %s", job.id, name, text)
            return {}
        if op == "delayed":
            attrs = req.get("attrs")
            if not isinstance(attrs, dict):
                raise bad_request("CHIRP_ATTR delayed: attrs must map names to expressions")
            values: dict[str, Any] = {}
            for name, text in attrs.items():
                try:
                    value = edit_value("CHIRP_ATTR", name, text)
                except RequestError as e:
                    log.info("job %s: delayed update ignored: %s", job.id, e.message)
                    continue
                try:
                    self._check_accounting(job, {name: value})
                except RequestError as e:
                    log.info("job %s: delayed update ignored: %s", job.id, e.message)
                    continue
                if self.may_write(job, name):
                    values[name] = value
                else:
                    log.info("job %s: delayed update of %s ignored: not a delayed-update name", job.id, name)
            if values:
                await jobs.report(job, jobs.set_ops(job, job.spelled(values)), [])
            return {"applied": len(values)}
        if op == "ulog":
            text = req.get("text")
            if not isinstance(text, str):
                raise bad_request("CHIRP_ATTR ulog: text must be a string")
            if not self.may_read(job):
                raise RequestError("DENIED", f"job {job.id} may not write its log (WantRemoteUpdates)")
            event = GenericEvent(job.cluster.id, job.proc, time.time(), info=text[:ULOG_MAX])
            await jobs.report(job, [], [event])
            return {}
        raise bad_request(f"CHIRP_ATTR: unknown op {op!r}")

    # -- files ----------------------------------------------------------------------------

    async def h_chirp_io(self, req: dict[str, Any], peer: Peer) -> dict[str, Any] | None:
        size = req.get("size", 0)
        if type(size) is not int or size < 0:
            raise bad_request("CHIRP_IO: size must be a byte count")
        payload = await _read_payload(peer, size)  # first: the stream stays in step whatever follows
        if len(payload) != size:
            raise RequestError("TOO_BIG", f"CHIRP_IO: at most {IO_MAX} bytes per request")
        op = req["op"]
        if op == "end":  # the job is over (its final report may be in already): its claim id says it is its
            for key, helper in list(self.helpers.items()):
                if helper.claim_id == req["claim_id"] and f"{key[0]}.{key[1]}" == req["job"]:
                    self.end(key)
            return {}
        _sh, job = self.shadows.serving(req["claim_id"], req["job"])
        if not _job_bool(job, "WantIOProxy", False):
            raise RequestError("DENIED", f"job {job.id} has no remote file access (WantIOProxy)")
        helper = await self._helper(job, req["claim_id"])
        head, data = await helper.call(op, req.get("args"), payload)
        out = {"ok": True, "rc": head.get("rc", -1), "size": len(data)}
        for key in ("errno", "text"):
            if isinstance(head.get(key), str):
                out[key] = head[key]
        peer.responded = True
        peer.writer.write(framing.encode(out) + data)
        await peer.writer.drain()
        return None

    async def _helper(self, job: Job, claim_id: str) -> Helper:
        key = (*job.key, getattr(job, "node", 0))
        helper = self.helpers.get(key)
        if helper is not None and (helper.ended or helper.claim_id != claim_id):
            self.end(key)  # ended, or a helper of the job's previous run
            helper = None
        if helper is not None:
            return helper
        starting = self._starting.get(key)
        if starting is None:
            starting = self._starting[key] = asyncio.ensure_future(Helper.start(job, claim_id))
            try:
                helper = await asyncio.shield(starting)
            finally:
                self._starting.pop(key, None)
            self.helpers[key] = helper
            self._reap(helper)
            if self._sweeper is None or self._sweeper.done():
                self._sweeper = asyncio.ensure_future(self._sweep())
            return helper
        return await asyncio.shield(starting)

    def _reap(self, helper: Helper) -> None:
        task = asyncio.ensure_future(helper.proc.wait())
        self._reaping.add(task)
        task.add_done_callback(self._reaping.discard)

    def end(self, key: tuple[int, int, int]) -> None:
        """End a job's helper (its open files close with it)."""
        helper = self.helpers.pop(key, None)
        if helper is not None:
            helper.end()
            log.info("job %d.%d: chirp file helper ended", *key[:2])

    def run_ended(self, job: Job, claim_id: str) -> None:
        """A run of ``job`` on ``claim_id`` is over (its final report is in): its helper ends."""
        for key, helper in list(self.helpers.items()):
            if helper.claim_id == claim_id and key[:2] == tuple(job.key):
                self.end(key)

    async def _sweep(self) -> None:
        """End the helpers of jobs that no longer run on their claim (the starter's
        ``end`` did not come: its startd died, say)."""
        while self.helpers:
            await asyncio.sleep(SWEEP_INTERVAL)
            for key, helper in list(self.helpers.items()):
                try:
                    self.shadows.serving(helper.claim_id, f"{key[0]}.{key[1]}")
                except RequestError:
                    self.end(key)

    def close(self) -> None:
        """The schedd stops: every helper ends."""
        for key in list(self.helpers):
            self.end(key)
        if self._sweeper is not None:
            self._sweeper.cancel()


async def _read_payload(peer: Peer, size: int) -> bytes:
    """The request's bytes; more than IO_MAX are read and dropped (short result)."""
    if size <= IO_MAX:
        return await peer.read_exactly(size) if size else b""
    left = size
    while left:
        left -= len(await peer.read_exactly(min(CHUNK, left)))
    return b""


__all__ = ["ChirpCalls"]
