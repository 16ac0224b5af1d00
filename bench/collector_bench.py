"""The central manager at size: one collector holding 10,000 and 100,000 slot ads.

Runnable on its own::

    .venv/bin/python bench/collector_bench.py [--sizes 10000,100000] [--runs N]

A real collector process (``python -m roost.daemons.collector`` in a temporary
ROOST_HOME) is fed slot ads by simulated startds over the real wire protocol: each
machine opens its own connection, authenticates with the pool's token as a startd
does, and sends its slots' ads as one batch (``UPDATE_ADS``; a collector without it
gets them one ``UPDATE_AD`` frame after another, pipelined). The ads are shaped like
a real startd's (~80 attributes: the template below was taken from one): four fifths
of the machines have 32 static slots, one fifth a partitionable slot with 31 dynamic
slots; two platforms; mostly claimed.

Then ``roost status -totals``, ``roost status`` (the default view) and ``roost
status -compact`` are timed as a user runs them (a new process each, output to
/dev/null), and the collector's resident memory is read. One line per figure,
``figure: value unit (reference: value, ratio: x.xx)``, the median of ``--runs``
runs; the reference is the figure measured before issue 27's work (10,000 ads:
-totals 1.06 s, -compact 1.48 s, 170 MB) or its goal (100,000 ads: -totals 0.5 s).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

_SCRIPT = Path(sys.executable).parent / "roost"
ROOST = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "roost.cli.main"]
SLOTS_PER_MACHINE = 32

#: (figure, ads) -> reference value: before issue 27 at 10,000 ads; the goal at 100,000
REFERENCE = {("status_totals", 10_000): 1.06, ("status_compact", 10_000): 1.48,
             ("collector_rss", 10_000): 170.0, ("status_totals", 100_000): 0.5}
UNITS = {"status_totals": "s", "status_default": "s", "status_compact": "s", "collector_rss": "MB",
         "feed": "s"}
VIEWS = {"status_totals": ["-totals"], "status_default": [], "status_compact": ["-compact"]}


def _template(machine: str, now: int) -> dict[str, Any]:
    """The attributes every slot of a machine shares, as a real roost startd sends them."""
    return {
        "MyType": "Machine", "TargetType": "Job", "Machine": machine, "Arch": "X86_64", "OpSys": "LINUX",
        "OpSysAndVer": "Debian12", "OpSysName": "Debian", "OpSysMajorVer": 12, "UidDomain": "example.org",
        "FileSystemDomain": "example.org", "HasFileTransfer": True, "HasSelfCheckpointTransfers": True,
        "CondorVersion": "$CondorVersion: 25.12.0 2026-01-01 BuildID: roost $",
        "CondorPlatform": "$CondorPlatform: X86_64-Debian12 $", "DaemonStartTime": now - 86400,
        "StartdPid": 4242, "MemoryEnforcement": "cgroup v2 memory.max (hard limit)",
        "DiskEnforcement": "sandbox measured every 300 s; a job over its slot's Disk is killed and held (34/104)",
        "CpuEnforcement": "cgroup v2 cpu.weight (100 per requested CPU)", "UpdateInterval": 300,
        "ContainerRuntime": "podman", "DockerVersion": "podman version 4.3.1", "HasContainer": True,
        "HasDocker": True, "HasDockerURL": True, "HasSandboxImage": True, "HasJava": True,
        "JavaSpecificationVersion": "17", "JavaVendor": "Debian", "JavaVersion": "17.0.15",
        "DetectedCpus": 64, "DetectedMemory": 257000, "TotalCpus": 64, "TotalMemory": 257000,
        "TotalDisk": 900000000, "TotalGPUs": 0, "TotalLoadAvg": 31.5, "TotalCondorLoadAvg": 30.9,
        "KeyboardIdle": 91234, "ConsoleIdle": 91234, "MyCurrentTime": now,
        "MyAddress": f"<10.{hash(machine) % 250}.0.1:9618>"[1:-1], "Start": True,
        "Requirements": "/Expr(START)/", "Rank": 0, "SlotWeight": "/Expr(Cpus)/", "IS_OWNER": False,
        "SUSPEND": False, "CONTINUE": True, "PREEMPT": False, "KILL": False, "WANT_SUSPEND": False,
        "WANT_VACATE": True,
    }


def machine_ads(i: int, now: int) -> list[dict[str, Any]]:
    """The slot ads of simulated machine ``i``: 32 static slots, or (every fifth machine)
    a partitionable slot and 31 dynamic ones; every seventh machine is aarch64."""
    machine = f"node{i:06d}.example.org"
    base = _template(machine, now)
    if i % 7 == 3:
        base.update(Arch="aarch64", CondorPlatform="$CondorPlatform: aarch64-Debian12 $")
    ads = []
    partitionable = i % 5 == 4
    for s in range(1, SLOTS_PER_MACHINE + 1):
        ad = dict(base)
        if partitionable:
            name = "slot1" if s == 1 else f"slot1_{s - 1}"
            kind = "Partitionable" if s == 1 else "Dynamic"
        else:
            name, kind = f"slot{s}", "Static"
        claimed = (kind == "Dynamic") or (kind == "Static" and (i + s) % 4 != 0)
        owner = kind == "Static" and (i + s) % 23 == 0
        state = "Owner" if owner else ("Claimed" if claimed else "Unclaimed")
        ad.update({
            "Name": f"{name}@{machine}", "SlotID": 1 if partitionable else s,
            "SlotTypeID": (-1 if kind == "Dynamic" else 1), "SlotType": kind,
            "PartitionableSlot": kind == "Partitionable", "DynamicSlot": kind == "Dynamic",
            "NumClaimRequests": s, "Cpus": 2 if kind != "Partitionable" else 2,
            "Memory": 8000, "Disk": 28000000, "GPUs": 0, "TotalSlotCpus": 2 if kind != "Partitionable" else 64,
            "TotalSlotMemory": 8000 if kind != "Partitionable" else 257000, "TotalSlotDisk": 28000000,
            "TotalSlotGPUs": 0, "State": state, "Activity": "Busy" if claimed else "Idle",
            "EnteredCurrentState": now - 3600 - s, "EnteredCurrentActivity": now - 600 - s,
            "LoadAvg": 0.98 if claimed else 0.0, "CondorLoadAvg": 0.97 if claimed else 0.0,
        })
        if kind == "Partitionable":
            ad["NumDynamicSlots"] = SLOTS_PER_MACHINE - 1
        if claimed:
            ad.update({"RemoteUser": f"user{(i + s) % 40}@example.org", "RemoteOwner": f"user{(i + s) % 40}",
                       "ClientMachine": "submit1.example.org", "JobId": f"{i}.{s}", "JobStart": now - 600,
                       "CurrentRank": 0})
        ads.append(ad)
    return ads


class CollectorProc:
    """A collector process in a temporary ROOST_HOME, stopped (and its home removed) on exit."""

    def __init__(self) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="roost-collbench-", dir="/tmp"))
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("_ROOST_")}
        self.env.pop("ROOST_CONFIG", None)
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.env["ROOST_HOME"] = str(self.home)
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> CollectorProc:
        from roost.config import write_personal_config
        from roost.net.addresses import wait_address

        cfg = write_personal_config(self.home)
        with open(cfg, "a") as f:
            f.write("\nDAEMON_LIST = MASTER COLLECTOR\n")
        self.proc = subprocess.Popen([sys.executable, "-m", "roost.daemons.collector"], env=self.env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.address = wait_address(self.home / "run" / "collector.address", timeout=30)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        subprocess.run(["rm", "-rf", str(self.home)], check=False)

    def client_args(self) -> dict[str, Any]:
        """A startd's credentials on this pool (its token, TLS settings)."""
        from roost.config import Config
        from roost.daemons.security import Security

        cfg = Config.load(str(self.home / "roost_config"), subsys="STARTD", env={"ROOST_HOME": str(self.home)})
        return Security(cfg, "STARTD", make_key=False).client_args()

    def rss_mb(self) -> float:
        assert self.proc is not None
        with open(f"/proc/{self.proc.pid}/status") as f:
            return next(int(ln.split()[1]) for ln in f if ln.startswith("VmRSS:")) / 1024.0


def feed(cp: CollectorProc, n_ads: int) -> float:
    """Send ``n_ads`` slot ads, one connection per simulated machine; seconds it took."""
    from roost.net import framing
    from roost.net.errors import RemoteError
    from roost.net.syncclient import SyncClient

    args = cp.client_args()
    now = int(time.time())
    machines = (n_ads + SLOTS_PER_MACHINE - 1) // SLOTS_PER_MACHINE
    batch: bool | None = None
    t0 = time.perf_counter()
    sent = 0
    for i in range(machines):
        ads = machine_ads(i, now)[: n_ads - sent]
        with SyncClient(cp.address, timeout=60, **args) as c:
            if batch is not False:
                try:
                    c.call("UPDATE_ADS", type="Machine", ads=[{"ad": a, "private": {"ClaimId": f"c{i}#{a['Name']}"}}
                                                               for a in ads])
                    batch = True
                except RemoteError as e:
                    if batch or e.code != "BAD_REQUEST":
                        raise
                    batch = False
            if batch is False:
                c.connect()
                for a in ads:  # pipelined: every frame, then every answer (send() would see a stale socket)
                    c.send_bytes(framing.encode({"cmd": "UPDATE_AD", "type": "Machine", "ad": a,
                                                 "private": {"ClaimId": f"c{i}#{a['Name']}"}}))
                for _ in ads:
                    r = c.recv()
                    if r.get("ok") is not True:
                        raise RuntimeError(f"UPDATE_AD refused: {r}")
        sent += len(ads)
    print(f"# fed {sent} ads from {machines} machines ({'UPDATE_ADS' if batch else 'UPDATE_AD'} frames)", flush=True)
    return time.perf_counter() - t0


def time_view(cp: CollectorProc, args: list[str]) -> tuple[float, bytes]:
    t0 = time.perf_counter()
    r = subprocess.run([*ROOST, "status", *args], env=cp.env, capture_output=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"roost status {' '.join(args)} failed: {r.stderr.decode().strip()}")
    return dt, r.stdout


def bench(n_ads: int, runs: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {k: [] for k in ("feed", *VIEWS, "collector_rss")}
    with CollectorProc() as cp:
        out["feed"].append(feed(cp, n_ads))
        for _ in range(runs):
            for key, args in VIEWS.items():
                dt, text = time_view(cp, args)
                out[key].append(dt)
                if key == "status_totals" and b"Total" not in text:
                    raise RuntimeError(f"roost status -totals printed no totals: {text[:200]!r}")
        out["collector_rss"].append(cp.rss_mb())
    return out


def report(name: str, n_ads: int, values: list[float]) -> None:
    v = statistics.median(values)
    ref = REFERENCE.get((name, n_ads))
    ref_s = f"reference: {ref:g}, ratio: {ref / v:.2f}" if ref else "reference: n/a, ratio: n/a"
    verdict = ""
    if (name, n_ads) == ("status_totals", 100_000):
        verdict = f" target <= 0.5: {'met' if v <= 0.5 else 'NOT met'}"
    print(f"{name}_{n_ads}: {v:.3f} {UNITS[name]} ({ref_s}){verdict} [{len(values)} runs, "
          f"min {min(values):.3g}, max {max(values):.3g}]", flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="10000,100000", help="comma-separated numbers of slot ads")
    p.add_argument("--runs", type=int, default=3)
    ns = p.parse_args()
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "src" / "roost")], env=env, check=False,
                   stdout=subprocess.DEVNULL)
    for n in (int(s) for s in ns.sizes.split(",") if s.strip()):
        got = bench(n, ns.runs)
        for name, values in got.items():
            report(name, n, values)
    return 0


if __name__ == "__main__":
    sys.exit(main())
