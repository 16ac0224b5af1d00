"""Speed of a pool of several hosts, security on against security off, in one run.

Runnable on its own (root, and ``ip``/``nsenter``: the hosts are network namespaces,
as in tests/system/)::

    .venv/bin/python bench/hosts_bench.py [--quick] [--jobs N] [--runs N]

Two pools, built alike and up at once (each figure's runs alternate between them):
a central manager, a submit host and three execute hosts of 4 static slots each,
each host its own namespace, address, ROOST_HOME and configuration.

- *on*: the defaults: every TCP connection between hosts runs TLS (self-signed host
  certificates, made at first start) and proves a pool token (IDTOKENS, its proofs
  bound to the certificate); every command is authorized.
- *off*: no TLS (``SEC_DEFAULT_ENCRYPTION``/``_INTEGRITY = NEVER``), no tokens
  (``SEC_DEFAULT_AUTHENTICATION_METHODS = FS``), every level open to everyone.

Figures, medians of several runs, ratios on / off from the same run:

- ``throughput``: ``roost submit`` of N ``/bin/true`` jobs with file transfer on the
  submit host, until the last terminated event in their log; jobs per second
  (target with security on: >= 200, and >= 80% of off).
- ``latency``: one job, ``roost submit`` started on the submit host until its
  terminated event, the CLI included, on an idle pool (target <= 0.1 s with security on).
- ``connect``: one new connection from the submit host to the central manager's
  collector, set up and one ``QUERY`` answered (on: TLS handshake + token proofs).
- ``reused``: one more ``QUERY`` on a connection already made (the session reused).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "system"))
sys.path.insert(0, str(ROOT / "bench"))

from hostpool import MultiHostPool  # noqa: E402
from netns import Network, unavailable  # noqa: E402

from pool_bench import wait_terminated  # noqa: E402

EXECUTE = "\nNUM_CPUS = 4\nuse FEATURE : StaticSlots\n"
OFF = """
SEC_DEFAULT_ENCRYPTION = NEVER
SEC_DEFAULT_INTEGRITY = NEVER
SEC_DEFAULT_AUTHENTICATION_METHODS = FS
SEC_DEFAULT_AUTHENTICATION = OPTIONAL
ALLOW_WRITE = *
ALLOW_ADMINISTRATOR = *
ALLOW_DAEMON = *
ALLOW_NEGOTIATOR = *
ALLOW_ADVERTISE_MASTER = *
ALLOW_ADVERTISE_STARTD = *
ALLOW_ADVERTISE_SCHEDD = *
"""
# bench pace: as a production pool would run (no test-speed intervals beyond the defaults)
PACE = "\nUPDATE_INTERVAL = 5\nNEGOTIATOR_INTERVAL = 5\nSCHEDD_INTERVAL = 5\n"
JOB = ("executable = /bin/true\ntransfer_executable = false\nshould_transfer_files = YES\n"
       "when_to_transfer_output = ON_EXIT\noutput = out/$(Process).out\nlog = job.log\nqueue {n}\n")

# Connection costs, measured inside the submit host: N new connections, then M calls on one.
_CONNECT = """
import json, sys, time
from roost.api.connection import client_credentials, pool_token
from roost.net.syncclient import SyncClient
home, address, n, m = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
creds = client_credentials(home, address)
if sys.argv[5] == "off":
    creds = {}
new = []
for _ in range(n):
    t0 = time.perf_counter()
    with SyncClient(address, **creds) as c:
        c.call("QUERY", type="Collector", projection=["Name"])
    new.append(time.perf_counter() - t0)
c = SyncClient(address, **creds)
c.call("QUERY", type="Collector", projection=["Name"])
reused = []
for _ in range(m):
    t0 = time.perf_counter()
    c.call("QUERY", type="Collector", projection=["Name"])
    reused.append(time.perf_counter() - t0)
print(json.dumps({"connect": new, "reused": reused, "tls": type(c._sock).__name__}))
"""


def build(net: Network, mode: str) -> MultiHostPool:
    pool = MultiHostPool(net)
    extra = (OFF if mode == "off" else "") + PACE
    cm = pool.add("cm", "CentralManager")
    with (cm.home / "roost_config").open("a") as f:
        f.write(extra)
    cm.roost("up", "-timeout", "30", timeout=45)
    for name, role in (("submit", "Submit"), ("exec1", "Execute"), ("exec2", "Execute"), ("exec3", "Execute")):
        h = pool.add(name, role)
        text = (h.home / "roost_config").read_text()
        if role == "Execute":  # 4 static slots instead of the tests' 2-CPU partitionable slot
            text = text.replace("use FEATURE : PartitionableSlot\nNUM_CPUS = 2\n", "") + EXECUTE
        (h.home / "roost_config").write_text(text + extra)
        h.take_pool_key(cm)
        h.roost("up", "-timeout", "30", timeout=45)
    pool.wait_for_slots({"exec1", "exec2", "exec3"}, timeout=60)
    deadline = time.monotonic() + 30
    while True:  # every slot of every host advertised
        n = len(cm.roost("status", "-af", "Name").stdout.split())
        if n >= 12 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    return pool


def run_jobs(pool: MultiHostPool, name: str, n: int, cli_latency: bool = False) -> float:
    submit = pool["submit"]
    d = submit.host.dir / name
    (d / "out").mkdir(parents=True)
    d.chmod(0o755)
    (d / "out").chmod(0o777)
    (d / "job.sub").write_text(JOB.format(n=n))
    t0 = time.perf_counter()
    proc = subprocess.Popen(submit.host.argv([*_roost(), "submit", "job.sub"]), env=submit.env, cwd=d,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    t1 = wait_terminated(d / "job.log", n, timeout=300, proc=proc, interval=None if cli_latency else 0.01)
    proc.communicate(timeout=30)
    return t1 - t0


def _roost() -> list[str]:
    script = Path(sys.executable).parent / "roost"
    return [str(script)] if script.exists() else [sys.executable, "-m", "roost.cli.main"]


def measure(jobs: int, runs: int) -> dict[str, dict[str, list[float]]]:
    """Both pools up at once; each figure's runs alternate between them (off, on, off,
    on ...), so a slow moment of this machine falls on both alike."""
    res: dict[str, dict[str, list[float]]] = {
        m: {"throughput": [], "latency": [], "connect": [], "reused": []} for m in ("off", "on")}
    with contextlib.ExitStack() as stack:
        pools: dict[str, MultiHostPool] = {}
        for mode in ("off", "on"):
            net = stack.enter_context(Network())
            pools[mode] = build(net, mode)
            stack.callback(pools[mode].stop)
            run_jobs(pools[mode], "warm", 12)  # claims made, connections open
        for i in range(runs):
            for mode, pool in pools.items():
                res[mode]["throughput"].append(jobs / run_jobs(pool, f"tp{i}", jobs))
        for i in range(runs + 2):
            for mode, pool in pools.items():
                time.sleep(0.3)  # idle between jobs
                res[mode]["latency"].append(run_jobs(pool, f"lat{i}", 1, cli_latency=True))
        for mode, pool in pools.items():
            submit = pool["submit"]
            coll = (pool["cm"].home / "run" / "collector.address").read_text().strip()
            got = json.loads(submit.python(_CONNECT, str(submit.home), coll, "100", "1000", mode,
                                           timeout=120).stdout)
            res[mode]["connect"], res[mode]["reused"] = got["connect"], got["reused"]
            print(f"  [{mode}] the tool's connection: {got['tls']}", flush=True)
    return res


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer jobs and runs")
    p.add_argument("--jobs", type=int, default=None)
    p.add_argument("--runs", type=int, default=None)
    ns = p.parse_args()
    reason = unavailable()
    if reason is not None:
        print(f"hosts_bench: skipped: {reason}")
        return 0
    jobs = ns.jobs or (300 if ns.quick else 1000)
    runs = ns.runs or (2 if ns.quick else 3)
    print(f"two pools, security off and on: {jobs} jobs x {runs} runs each, alternating ...", flush=True)
    res = measure(jobs, runs)
    ok = True
    for name, unit, scale in (("throughput", "jobs/s", 1.0), ("latency", "s", 1.0),
                              ("connect", "ms", 1000.0), ("reused", "ms", 1000.0)):
        on, off = (statistics.median(res[m][name]) * scale for m in ("on", "off"))
        ratio = on / off if off else float("nan")
        line = f"{name}: on {on:.3f} {unit}, off {off:.3f} {unit}, on/off {ratio:.2f}"
        if name == "throughput":
            met = on >= 200 and ratio >= 0.8
            line += f" (target on >= 200 and >= 0.80 of off: {'met' if met else 'NOT met'})"
            ok &= met
        elif name == "latency":
            met = on <= 0.1
            line += f" (target on <= 0.1 s: {'met' if met else 'NOT met'})"
            ok &= met
        print(line, f"[on: {len(res['on'][name])} samples, min {min(res['on'][name]) * scale:.3g}, "
                    f"max {max(res['on'][name]) * scale:.3g}]", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
