"""A flood of idle unauthenticated connections against the collector (issue 25).

Runnable on its own::

    .venv/bin/python bench/conn_flood_bench.py [--connections 20000] [--queries 20]

One personal pool. An attacker process (its RLIMIT_NOFILE raised to its hard limit)
opens ``--connections`` idle TCP connections to the collector as fast as it can and
holds them; meanwhile this process asks the collector what ``roost status`` asks (a
fresh connection, the owner's token, ``QUERY Machine``), again and again. Figures
(medians), the reference being the same query on the idle collector in the same run:

- ``status query during flood``: seconds per query while the attacker connects;
- ``collector fds during flood`` / ``collector RSS during flood``: at the flood's peak;
- ``collector RSS after flood``: 3 s after the attacker closed everything.
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from pool_bench import BenchPool  # noqa: E402
from roost.api.connection import pool_token  # noqa: E402
from roost.api.home import read_address  # noqa: E402
from roost.net.syncclient import SyncClient  # noqa: E402

FLOOD_SECONDS = 60.0  # the attacker gives up after this long, whatever happens


def attack(address: str, n: int, hold: float) -> None:
    """The attacker: ``n`` idle connections, held ``hold`` seconds (or until stdin closes)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    n = min(n, hard - 64)
    host, port = address.rsplit(":", 1)
    socks = []
    deadline = time.monotonic() + FLOOD_SECONDS
    sources = [f"127.0.0.{i}" for i in range(2, 10)]  # more local ports than one address has
    for i in range(n):
        if time.monotonic() > deadline:
            break
        s = socket.socket()
        try:
            s.bind((sources[i % len(sources)], 0))
            s.settimeout(5)
            s.connect((host, int(port)))
        except OSError:
            s.close()
            continue
        socks.append(s)
    print(len(socks), flush=True)
    sys.stdin.read()  # until the bench closes our stdin
    for s in socks:
        s.close()


def query_time(address: str, token: str) -> float:
    t0 = time.perf_counter()
    with SyncClient(address, token=token, timeout=60) as c:
        c.call("QUERY", type="Machine", projection=["Name", "State"])
    return time.perf_counter() - t0


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def line(figure: str, value: float, unit: str, ref: float) -> None:
    ratio = value / ref if ref else float("nan")
    print(f"{figure}: {value:.3f} {unit} (reference: {ref:.3f}, ratio: {ratio:.2f})")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--connections", type=int, default=20000)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--attack", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.attack:
        attack(args.attack[0], int(args.attack[1]), FLOOD_SECONDS)
        return 0
    with BenchPool() as bp:
        address = read_address(bp.home / "run" / "collector.address")
        token = pool_token(str(bp.home))
        assert address and token
        pid = int(bp.pool.status()["daemons"]["COLLECTOR"]["pid"])
        query_time(address, token)
        idle = statistics.median(query_time(address, token) for _ in range(args.queries))
        rss0, fds0 = rss_mb(pid), fds(pid)
        attacker = subprocess.Popen([sys.executable, __file__, "--attack", address, str(args.connections)],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            during = []
            peak_rss, peak_fds = rss0, fds0
            while attacker.poll() is None and len(during) < 10 * args.queries:
                during.append(query_time(address, token))
                peak_rss, peak_fds = max(peak_rss, rss_mb(pid)), max(peak_fds, fds(pid))
                if len(during) >= args.queries and _ready(attacker):
                    break
            opened = int(attacker.stdout.readline() or 0) if attacker.stdout else 0
            peak_rss, peak_fds = max(peak_rss, rss_mb(pid)), max(peak_fds, fds(pid))
            held = statistics.median(query_time(address, token) for _ in range(args.queries))
        finally:
            if attacker.stdin:
                attacker.stdin.close()
            attacker.wait(timeout=60)
        time.sleep(3)
        rss1, fds1 = rss_mb(pid), fds(pid)
        print(f"# attacker opened {opened} connections; collector fds {fds0} idle, {peak_fds} peak, {fds1} after")
        line("status query during flood", statistics.median(during), "s", idle)
        line("status query with flood held", held, "s", idle)
        line("collector fds during flood", peak_fds, "fds", fds0)
        line("collector RSS during flood", peak_rss, "MB", rss0)
        line("collector RSS after flood", rss1, "MB", rss0)
    return 0


def _ready(proc: subprocess.Popen[str]) -> bool:
    """Whether the attacker has finished connecting (it prints its count then)."""
    import select

    return bool(proc.stdout and select.select([proc.stdout], [], [], 0)[0])


if __name__ == "__main__":
    sys.exit(main())
