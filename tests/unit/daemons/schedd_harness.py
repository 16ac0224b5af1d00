"""Helpers for the schedd tests: a real schedd process, real clients, and a small
startd-like peer (a real server on a real socket) that claims, runs and reports.

Security: the local tools speak over the schedd's Unix socket (FS: the kernel says
who they are); whatever stands in for another daemon on TCP (the negotiator's
GET_REQUESTS/MATCHES, the fake startd and its starter) presents the pool's daemon
token (``condor@UID_DOMAIN``, :func:`daemon_procs.pool_token`), as the real daemons
do, and the fake startd checks the schedd's token with the pool's own policy."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from typing import Any

from roost.classad.jsonform import ad_to_obj
from roost.config import Config
from roost.daemons.security import Security
from roost.net.client import AsyncClient
from roost.net.server import serve
from roost.net.syncclient import SyncClient
from roost.submit import parse_submit

from .daemon_procs import make_home, pool_token, start_daemon, stop_daemon

SCHEDD_CONFIG = "\nPERIODIC_EXPR_INTERVAL = 0.3\nSCHEDD_MIN_INTERVAL = 0\nSCHEDD_REQUEUE_BACKOFF = 0.05\nSCHEDD_REQUEUE_BACKOFF_MAX = 0.2\n"


class ScheddProc:
    """A schedd process in its own ROOST_HOME (restartable; stopped by pid)."""

    def __init__(self, tmp_path: Path, extra_config: str = "") -> None:
        self.home = make_home(tmp_path, SCHEDD_CONFIG + extra_config)
        self.proc: Any = None
        self.address = ""
        self._token: str | None = None

    def start(self) -> ScheddProc:
        self.proc, self.address = start_daemon("schedd", self.home)
        return self

    @property
    def sock(self) -> str:
        return "unix:" + str(self.home / "run" / "schedd.sock")

    def client(self) -> SyncClient:
        return SyncClient(self.sock, timeout=10)

    @property
    def token(self) -> str:
        """The pool's daemon token (``condor@UID_DOMAIN``): what a daemon presents."""
        if self._token is None:
            self._token = pool_token(self.home)
        return self._token

    def daemon_client(self, timeout: float = 5) -> SyncClient:
        """A TCP client that proves the daemon identity, as the negotiator does."""
        return SyncClient(self.address, timeout=timeout, token=self.token)

    def kill9(self) -> None:
        self.proc.kill()
        self.proc.wait()
        if self.proc.stderr:
            self.proc.stderr.close()

    def stop(self) -> None:
        if self.proc is not None:
            stop_daemon(self.proc)

    def log(self) -> str:
        return (self.home / "log" / "SchedLog").read_text()


def submit(client: SyncClient, text: str, cwd: str, owner: str = "root") -> tuple[int, int]:
    """Submit a description the way roost.api does: NEW_CLUSTER, expand, SUBMIT."""
    desc = parse_submit(text, cwd=cwd)
    cid = client.call("NEW_CLUSTER")["cluster"]
    [cs] = desc.expand(cid, int(time.time()), owner)
    cluster = ad_to_obj(cs.cluster_classad())
    from roost.submit.jobads import to_classad

    procs = [ad_to_obj(to_classad(d)) for d in cs.proc_diffs]
    r = client.call("SUBMIT", cluster=cid, cluster_ad=cluster, procs=procs)
    return r["cluster"], r["count"]


def query(client: SyncClient, **args: Any) -> dict[str, dict[str, Any]]:
    """QUERY_JOBS merged into full ads keyed by "C.P"."""
    r = client.call("QUERY_JOBS", **args)
    out = {}
    for c, p, diff in r["jobs"]:
        ad = dict(r["clusters"].get(str(c), {}))
        ad.update(diff)
        out[f"{c}.{p}"] = ad
    return out


def wait_for(pred: Any, timeout: float = 10.0, interval: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(interval)


def pool_security(home: Path, daemon: str) -> Security:
    """The security of a daemon of the pool at ``home`` (its keys, policy and token),
    for a test-side peer that stands in for ``daemon``. Makes the pool key if no
    daemon has yet."""
    pool_token(home)  # the pool key exists from here on
    cfg = Config.load(str(home / "roost_config"), env={"ROOST_HOME": str(home)})
    return Security(cfg, daemon, make_key=False)


class FakeStartd:
    """A startd-like peer: answers REQUEST_CLAIM/ACTIVATE_CLAIM/KEEPALIVE/..., and for
    each activation pulls input (GET_FILES), "runs" the job by calling ``behaviour``,
    pushes output (PUT_FILES) and reports the exit (JOB_UPDATE), as a starter does.

    It belongs to the pool at ``home`` (the schedd's): its server authenticates and
    authorizes the schedd as a real startd would, and it presents the pool's daemon
    token to the schedd."""

    def __init__(self, home: Path, behaviour: Any = None, slot: dict[str, Any] | None = None) -> None:
        self.security = pool_security(home, "STARTD")
        self.token = self.security.token
        self.behaviour = behaviour or (lambda job_ad, inputs: ({}, {"exit_code": 0}))
        self.slot = slot or {
            "MyType": "Machine", "Name": "slot1_1@fake", "Cpus": 1, "Memory": 4096, "Disk": 10**7,
            "Arch": "X86_64", "OpSys": "LINUX", "HasFileTransfer": True, "CondorVersion": "$CondorVersion: 25.12.0 2025-11-01 $",
            "Requirements": "/Expr(TARGET.RequestCpus <= MY.Cpus)/",
        }
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.inputs: dict[str, dict[str, bytes]] = {}
        self.claims: dict[str, str] = {}  # claim id -> schedd address
        self.forget_claims = False
        self.deny_claims = False
        self.cut_claims = False  # grant the claim, then cut the connection before answering
        #: while set, starters wait before they report "running" (a startd slow to start jobs)
        self.hold_running = False
        self.deny_activations = False  # START false at activation (claims are granted)
        self.hang = False  # don't report exits (for vacate/lease tests)
        #: job id -> RECONNECT's answer for its claim: it ended while the schedd was away
        #: (the others answer "running")
        self.ended_away: dict[str, dict[str, Any]] = {}
        self.job_of: dict[str, str] = {}  # claim id -> the job last activated on it
        #: the next activation's input transfer is cut (as a starter reports it): "failed" + retry
        self.cut_transfer_once: str | None = None
        self.cut_transfer_always = False  # every activation's transfer is cut
        #: after "running": report suspended, then (after this many seconds) resumed
        self.suspend_for: float | None = None
        self.running: dict[str, asyncio.Task[Any]] = {}
        self.loop = asyncio.new_event_loop()
        self.address = ""
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self.thread.start()
        ready.wait(5)

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)

        async def main() -> None:
            self.server = await serve(self._handlers(), host="127.0.0.1", **self.security.serve_args("127.0.0.1"))
            self.address = self.server.address
            ready.set()
            self._stop = asyncio.Event()
            await self._stop.wait()
            for t in self.running.values():
                t.cancel()
            await asyncio.gather(*self.running.values(), return_exceptions=True)
            await self.server.close()

        self.loop.run_until_complete(main())

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self._stop.set)
        self.thread.join(5)

    def names(self) -> list[str]:
        return [c for c, _ in self.calls]

    def _handlers(self) -> dict[str, Any]:
        async def request_claim(req: dict[str, Any], peer: Any) -> dict[str, Any]:
            self.calls.append(("REQUEST_CLAIM", req))
            if self.deny_claims:
                from roost.net.errors import RequestError

                raise RequestError("DENIED", "START is false")
            cid = req["claim_id"] + "#d"
            self.claims[cid] = req.get("schedd_address", "")
            if self.cut_claims:  # granted, but the schedd never hears so
                self.claims[req["claim_id"]] = req.get("schedd_address", "")
                peer.writer.transport.abort()
                await asyncio.sleep(1.0)  # time is the point: the answer comes after the cut, to nobody
            return {"claim_id": cid, "slot_ad": self.slot}

        async def activate(req: dict[str, Any], peer: Any) -> dict[str, Any]:
            self.calls.append(("ACTIVATE_CLAIM", req))
            if req["claim_id"] not in self.claims:
                from roost.net.errors import RequestError

                raise RequestError("NOT_FOUND", "no such claim")
            if self.deny_activations:
                from roost.net.errors import RequestError

                raise RequestError("DENIED", "START is false at activation")
            job = req["job_ad"]
            jid = f"{job['ClusterId']}.{job['ProcId']}"
            self.job_of[req["claim_id"]] = jid
            self.running[jid] = asyncio.ensure_future(self._starter(req["claim_id"], jid, job))
            return {}

        async def keepalive(req: dict[str, Any], peer: Any) -> dict[str, Any]:
            self.calls.append(("KEEPALIVE", req))
            if self.forget_claims or req["claim_id"] not in self.claims:
                from roost.net.errors import RequestError

                raise RequestError("NOT_FOUND", "no such claim")
            return {}

        async def deactivate(req: dict[str, Any], peer: Any) -> dict[str, Any]:
            self.calls.append(("DEACTIVATE_CLAIM", req))
            return {}

        async def release(req: dict[str, Any], peer: Any) -> dict[str, Any]:
            self.calls.append(("RELEASE_CLAIM", req))
            self.claims.pop(req["claim_id"], None)
            return {}

        async def reconnect(req: dict[str, Any], peer: Any) -> dict[str, Any]:
            self.calls.append(("RECONNECT", req))
            if req["claim_id"] not in self.claims:
                from roost.net.errors import RequestError

                raise RequestError("NOT_FOUND", "no such claim")
            self.claims[req["claim_id"]] = req["schedd_address"]
            jid = self.job_of.get(req["claim_id"], "?")
            if jid in self.ended_away:
                return {"job": jid, **self.ended_away[jid]}
            return {"job": "?", "state": "running"}

        return {
            "REQUEST_CLAIM": request_claim, "ACTIVATE_CLAIM": activate, "KEEPALIVE": keepalive,
            "DEACTIVATE_CLAIM": deactivate, "RELEASE_CLAIM": release, "RECONNECT": reconnect,
        }

    async def _starter(self, claim_id: str, jid: str, job: dict[str, Any]) -> None:
        schedd = AsyncClient(self.claims[claim_id], timeout=10, token=self.token)
        try:
            inputs: dict[str, bytes] = {}
            async with schedd.stream() as conn:
                await conn.send({"cmd": "GET_FILES", "job": jid, "claim_id": claim_id})
                resp = await conn.recv()
                if resp.get("ok"):
                    for f in resp["files"]:
                        inputs[f["name"]] = await conn.read_exactly(f["size"]) if f["size"] else b""
            self.inputs[jid] = inputs
            if self.cut_transfer_once is not None:
                error = self.cut_transfer_once
                if not self.cut_transfer_always:
                    self.cut_transfer_once = None
                await schedd.call("JOB_UPDATE", claim_id=claim_id, job=jid, state="failed", error=error, retry=True)
                return
            if not resp.get("ok"):
                await schedd.call("JOB_UPDATE", claim_id=claim_id, job=jid, state="failed", error=resp.get("error"))
                return
            while self.hold_running:
                await asyncio.sleep(0.02)  # time is the point: the test holds the start as long as it likes
            await schedd.call("JOB_UPDATE", claim_id=claim_id, job=jid, state="running", pid=4242)
            if self.suspend_for is not None:
                await schedd.call("JOB_UPDATE", claim_id=claim_id, job=jid, state="suspended", num_pids=3)
                await asyncio.sleep(self.suspend_for)  # time is the point: suspended this long
                await schedd.call("JOB_UPDATE", claim_id=claim_id, job=jid, state="resumed")
            outputs, result = self.behaviour(job, inputs)
            while self.hang:
                await asyncio.sleep(0.05)  # time is the point: a hung starter, for as long as the test says
            if outputs:
                entries = [{"name": n, "size": len(b), "mode": 0o644, **({"role": n} if n in ("stdout", "stderr") else {})}
                           for n, b in outputs.items()]
                async with schedd.stream() as conn:
                    await conn.send({"cmd": "PUT_FILES", "job": jid, "claim_id": claim_id, "files": entries})
                    for b in outputs.values():
                        await conn.send_bytes(b)
                    await conn.recv()
            claim_now = claim_id
            await AsyncClient(self.claims.get(claim_now, ""), timeout=10, token=self.token).call(
                "JOB_UPDATE", claim_id=claim_id, job=jid, state="exited",
                usage={"user": 1.0, "system": 0.0}, **result)
        except Exception as e:  # a test failure shows up as a job that never finishes
            print("fake starter failed:", repr(e))
        finally:
            await schedd.close()

    def send_match(self, schedd_tcp: str, autocluster: int, claim_id: str = "claim-1") -> dict[str, Any]:
        with SyncClient(schedd_tcp, timeout=10, token=self.token) as c:
            return c.call("MATCHES", matches=[{
                "autocluster": autocluster, "slot_name": self.slot["Name"], "claim_id": claim_id,
                "startd_address": self.address, "slot_ad": self.slot}])


def chdir_tmp(tmp: Path) -> str:
    os.makedirs(tmp, exist_ok=True)
    return str(tmp)
