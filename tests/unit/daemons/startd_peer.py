"""A real startd process and a test-side peer playing collector, negotiator and schedd.

The peer is a real server (roost.net) in the test's event loop: it records
slot ads and RESCHEDULE pokes, serves input files for GET_FILES, stores
PUT_FILES outputs and queues JOB_UPDATEs, so a test drives the startd's
claim protocol and sees exactly what a schedd would.

Security as in a real pool: the startd and the peer share the pool's key (made in
the startd's ROOST_HOME before it starts); the peer authenticates and authorizes the
startd's connections with the pool's policy, and the client to the startd presents
the daemon token (``condor@UID_DOMAIN``), as a schedd does.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roost.classad import ClassAd, ExprTree
from roost.classad.jsonform import ad_to_obj
from roost.config import Config
from roost.daemons.security import Security
from roost.net.client import AsyncClient
from roost.net.errors import RequestError
from roost.net.server import Peer, serve
from roost.submit import Expr, parse_submit

from .daemon_procs import pool_token


@dataclass
class Job:
    inputs: list[tuple[str, bytes, int]] = field(default_factory=list)
    outputs: dict[str, bytes] = field(default_factory=dict)
    output_modes: dict[str, int] = field(default_factory=dict)


class PoolPeer:
    """Collector + negotiator + schedd stand-in."""

    def __init__(self, batch: bool = True) -> None:
        self.batch = batch  # take UPDATE_ADS as the collector does (False: an older collector)
        self.refreshed = 0
        self.ads: dict[str, dict[str, Any]] = {}
        self.private: dict[str, dict[str, Any]] = {}
        self.invalidated: list[str] = []
        self.reschedules = 0
        self.ad_updates = 0
        self.jobs: dict[str, Job] = {}
        self.updates: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.refuse_updates = False
        self.refuse_inputs: set[str] = set()
        self.changed = asyncio.Event()
        self.server = None
        self.address = ""

    async def start(self) -> None:
        self.server = await serve(
            {
                "UPDATE_AD": self.update_ad,
                **({"UPDATE_ADS": self.update_ads} if self.batch else {}),
                "INVALIDATE_AD": self.invalidate_ad,
                "QUERY": self.query,
                "RESCHEDULE": self.reschedule,
                "GET_FILES": self.get_files,
                "PUT_FILES": self.put_files,
                "JOB_UPDATE": self.job_update,
            },
            host="127.0.0.1",
        )
        self.address = self.server.address

    def join_pool(self, home: Path) -> None:
        """Authenticate and authorize peers as a daemon of the pool at ``home`` would
        (its key, trust domain and ALLOW_* policy): from here on the startd must prove
        it is a daemon of that pool. Call once that pool's key exists."""
        cfg = Config.load(str(home / "roost_config"), env={"ROOST_HOME": str(home)})
        args = Security(cfg, "SCHEDD", make_key=False).serve_args("127.0.0.1")
        assert self.server is not None and args["authority"] is not None
        self.server.authority = args["authority"]
        self.server.authorize = args["authorize"]
        self.server.uid_domain = args["uid_domain"]

    async def close(self) -> None:
        if self.server is not None:
            await self.server.close()

    async def update_ad(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        self.ad_updates += 1
        self.ads[req["ad"]["Name"]] = req["ad"]
        self.private[req["ad"]["Name"]] = req.get("private") or {}
        self.changed.set()
        return {}

    async def update_ads(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        for item in req.get("ads") or []:
            await self.update_ad({"ad": item["ad"], "private": item.get("private")}, peer)
        missing = []
        for note in req.get("refresh") or []:
            name = note["Name"]
            if name not in self.ads:
                missing.append(name)
                continue
            self.refreshed += 1
            self.ads[name].update(note)
        self.changed.set()
        return {"updated": len(req.get("ads") or []), "missing": missing}

    async def invalidate_ad(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        self.invalidated.append(req["name"])
        removed = 1 if self.ads.pop(req["name"], None) is not None else 0
        self.changed.set()
        return {"removed": removed}

    async def query(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        return {"ads": []}

    async def reschedule(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        self.reschedules += 1
        self.changed.set()
        return {}

    async def get_files(self, req: dict[str, Any], peer: Peer) -> None:
        if req["job"] in self.refuse_inputs:
            raise RequestError("NOT_FOUND", f"input file of job {req['job']} is missing")
        job = self.jobs.setdefault(req["job"], Job())
        await peer.respond({"files": [{"name": n, "size": len(b), "mode": m} for n, b, m in job.inputs]})
        for _, data, _ in job.inputs:
            await peer.send_bytes(data)
        return None

    async def put_files(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        job = self.jobs.setdefault(req["job"], Job())
        for entry in req["files"]:
            data = await peer.read_exactly(entry["size"]) if entry["size"] else b""
            job.outputs[entry["name"]] = data
            job.output_modes[entry["name"]] = entry.get("mode", 0)
        return {}

    async def job_update(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        if self.refuse_updates:
            raise RequestError("NOT_FOUND", "not reconnected yet")
        await self.updates.put(req)
        return {}

    async def wait_for(self, pred, timeout: float = 10.0) -> Any:
        """Wait until ``pred()`` is truthy (re-checked at every ad change)."""
        async with asyncio.timeout(timeout):
            while True:
                got = pred()
                if got:
                    return got
                self.changed.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.2):
                        await self.changed.wait()

    async def next_update(self, timeout: float = 10.0) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            return await self.updates.get()


def make_home(config: str) -> Path:
    """A ROOST_HOME every user can traverse (jobs may run as nobody)."""
    home = Path(tempfile.mkdtemp(prefix="roost-startd-"))
    os.chmod(home, 0o755)
    (home / "roost_config").write_text(config)
    return home


class StartdProc:
    """``python -m roost.daemons.startd`` in its own ROOST_HOME."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.proc: subprocess.Popen[bytes] | None = None
        self.address = ""
        #: the pool's daemon token (``condor@UID_DOMAIN``); makes the pool key the
        #: startd reads at start (a startd alone never makes it)
        self.token = pool_token(home)

    def client(self, timeout: float = 20.0, token: str | None = None) -> AsyncClient:
        """A TCP client to the startd presenting ``token`` (default: the daemon token)."""
        return AsyncClient(self.address, timeout=timeout, token=token or self.token)

    async def start(self, timeout: float = 15.0) -> str:
        env = {k: v for k, v in os.environ.items() if not k.startswith("_ROOST_")}
        env.pop("ROOST_CONFIG", None)
        env["ROOST_HOME"] = str(self.home)
        addr = self.home / "run" / "startd.address"
        with contextlib.suppress(FileNotFoundError):
            addr.unlink()
        (self.home / "log").mkdir(exist_ok=True)
        err = open(self.home / "log" / "startd.stderr", "ab")
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "roost.daemons.startd"], env=env,
                stdout=subprocess.DEVNULL, stderr=err,
            )
        finally:
            err.close()
        async with asyncio.timeout(timeout):
            while not addr.exists():
                if self.proc.poll() is not None:
                    raise RuntimeError(f"startd died: {self.stderr()}")
                await asyncio.sleep(0.02)
        self.address = addr.read_text().strip()
        return self.address

    def stderr(self) -> str:
        with contextlib.suppress(OSError):
            return (self.home / "log" / "startd.stderr").read_text()
        return ""

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    async def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM, then SIGKILL if it will not go; waits without blocking the peer."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                async with asyncio.timeout(timeout):
                    while self.proc.poll() is None:
                        await asyncio.sleep(0.01)
            except TimeoutError:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


BASE_CONFIG = """\
BIND_ADDRESS = 127.0.0.1
COLLECTOR_HOST = {collector}
NUM_CPUS = 4
MEMORY = 4096
STARTD_DETECT_GPUS = False
STARTD_DETECT_CONTAINERS = False
STARTD_DETECT_JAVA = False
"""


@contextlib.asynccontextmanager
async def pool(extra_config: str = "", batch: bool = True) -> AsyncIterator[tuple[PoolPeer, StartdProc, AsyncClient]]:
    """A peer, a startd reporting to it, and a client to the startd; all cleaned up."""
    peer = PoolPeer(batch)
    await peer.start()
    home = make_home(BASE_CONFIG.format(collector=peer.address) + extra_config)
    (home / "run").mkdir()
    (home / "run" / "negotiator.address").write_text(peer.address + "\n")
    startd = StartdProc(home)
    peer.join_pool(home)
    client = None
    try:
        await startd.start()
        client = startd.client()
        yield peer, startd, client
    finally:
        if client is not None:
            await client.close()
        await startd.stop()
        await peer.close()
        if not os.environ.get("K3_KEEP_HOMES"):
            shutil.rmtree(home, ignore_errors=True)


def job_ad(submit: str, cluster: int = 1, owner: str = "nobody", iwd: str = "/tmp") -> dict[str, Any]:
    """A job ad as condor_submit would make it (roost.submit), in wire form."""
    sub = parse_submit(submit, cwd=iwd).expand(cluster, 1_700_000_000, owner)[0]
    ad = ClassAd()
    for k, v in [*sub.cluster_ad.items(), *sub.proc_diffs[0].items()]:
        ad[k] = ExprTree(str(v)) if isinstance(v, Expr) else v
    ad["User"] = f"{owner}@example.org"
    return ad_to_obj(ad)


def slot_ads(peer: PoolPeer) -> dict[str, dict[str, Any]]:
    return {n.split("@")[0]: ad for n, ad in peer.ads.items()}
