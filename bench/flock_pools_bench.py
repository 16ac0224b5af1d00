"""Flocking between real pools in network namespaces (issue 29), the figures the issue asks:

1. burst: the time from a burst of N jobs (default 1,000) at pool A, whose one execute
   host is far too small, to the first of them starting in pool B (A flocks to B), and
   in the same burst to the first start at home (the reference);
2. throughput: M short jobs (default 96, 2 s each) through A flocking to B (one 4-core
   execute host each) against the same jobs through one pool of the same total size
   (two 4-core execute hosts), jobs per second from submit to the last exit, medians
   of R runs of each (goal: two pools >= 90% of one);
3. with ``--wan``: the two pools' link delayed 50 ms and limited to 20 Mbit/s each way
   (tests/system/wanlink.py: this kernel has no ``sch_netem``, so a wire in the switch
   namespace does what netem's delay and rate would), the round trip measured across
   it, and the flocked jobs' throughput again (they must still run and report home).

Pools are built as the system tests build them (tests/system/flockpools.py): each its
own central manager, UID_DOMAIN, key and exchanged tokens. Needs root (namespaces).

    python bench/flock_pools_bench.py [--burst 1000] [--jobs 96] [--secs 2] [--runs 3] [--wan]
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "system"))

from flockpools import Pools, PoolSpec, ads, flock, ran_on, submit, work  # noqa: E402
from netns import Network, unavailable  # noqa: E402
from wanlink import WanLink  # noqa: E402

FAST = "NUM_CPUS = 4\nMEMORY = 2048\n"
A_CONF = FAST + "FLOCK_AGREEMENTS = b\nFLOCK_AGREEMENT_b = collector = {b}; direction = send; domain = b.test\n"
B_CONF = FAST + "FLOCK_AGREEMENTS = a\nFLOCK_AGREEMENT_a = direction = take; domain = a.test\n"
_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) .*: job \S+: started", re.M)


def two_pools(net: Network):  # noqa: ANN201
    return flock(net, [
        PoolSpec("a", "cma", ["CentralManager", "Submit"], {"exa": ["Execute"]}, keyed=("exa",),
                 conf=lambda cms: A_CONF.format(**cms), sends_to=("b",)),
        PoolSpec("b", "cmb", ["CentralManager"], {"exb": ["Execute"]}, keyed=("exb",), conf=lambda cms: B_CONF),
    ])


def one_pool(net: Network):  # noqa: ANN201
    return flock(net, [PoolSpec("one", "cm1", ["CentralManager", "Submit"],
                                {"ex1": ["Execute"], "ex2": ["Execute"]}, keyed=("ex2",), conf=lambda cms: FAST)])


def first_start(pools: Pools, host: str, after: float, timeout: float = 300) -> float:
    """When the first job started on ``host`` after ``after`` (its StartLog stamp)."""
    log = pools[host].home / "log" / "StartLog"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for m in _STAMP.finditer(log.read_text(errors="replace") if log.exists() else ""):
            t = dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").timestamp()
            if t >= after:
                return t
        time.sleep(0.2)
    raise AssertionError(f"no job started on {host}\n{pools.log_tails()}")


def burst(pools: Pools, n: int) -> tuple[float, float, float]:
    """(submit seconds, burst -> first start in B, burst -> first start at home)."""
    cma = pools["cma"]
    w = work(cma, f"burst{time.time_ns()}")
    t0 = time.time()
    cluster = submit(cma, w, 30, n=n, extra="request_cpus = 1\n", name="burst")
    t1 = time.time()
    there, home = first_start(pools, "exb", t0), first_start(pools, "exa", t0)
    cma.roost("rm", cluster, timeout=120)
    _drained(pools, "cma")
    return t1 - t0, there - t1, home - t1


def _drained(pools: Pools, submit_host: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while pools[submit_host].roost("q", "-af", "ClusterId", check=False).stdout.strip():
        if time.monotonic() > deadline:
            raise AssertionError("the queue never drained\n" + pools.log_tails())
        time.sleep(0.5)


def throughput(pools: Pools, submit_host: str, jobs: int, secs: float) -> tuple[float, dict[str, int]]:
    """Jobs per second from submit to the last exit, and where they ran."""
    h = pools[submit_host]
    w = work(h, f"tp{time.time_ns()}")
    t0 = time.time()
    cluster = submit(h, w, secs, n=jobs, extra="request_cpus = 1\n", name="tp")
    h.roost("wait", "-quiet", "-wait", "600", cluster, timeout=620)
    rate = jobs / (time.time() - t0)
    codes = [r[0] for r in ads(h, cluster, "ExitCode")]
    assert codes == ["0"] * jobs, codes
    hosts = ran_on(w, "tp", cluster, jobs)
    return rate, {x: hosts.count(x) for x in sorted(set(hosts))}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--burst", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=96)
    ap.add_argument("--secs", type=float, default=2.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--wan", action="store_true")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # each figure as it comes
    reason = unavailable()
    if reason is not None:
        sys.exit(f"flock_pools_bench: {reason}")
    with Network() as net, two_pools(net) as pools:
        if args.burst:
            took, there, home = burst(pools, args.burst)
            print(f"burst of {args.burst} jobs to the first flocked start: {there:.2f} s "
                  f"(reference: to the first start at home {home:.2f} s, ratio: {there / max(home, 1e-3):.2f}; "
                  f"submit took {took:.2f} s; FLOCK_AFTER 1 s, FLOCK_INTERVAL 1 s, NEGOTIATOR_INTERVAL 2 s)")
        flocked = [throughput(pools, "cma", args.jobs, args.secs) for _ in range(args.runs)]
        slow = None
        if args.wan:
            with WanLink(net, ["cmb", "exb"], delay_ms=50, mbit=20) as link:
                rtt = link.rtt_ms(pools["cma"].host, pools["exb"].address)
                slow = [throughput(pools, "cma", args.jobs, args.secs) for _ in range(args.runs)]
    with Network() as net, one_pool(net) as pools:
        single = [throughput(pools, "cm1", args.jobs, args.secs) for _ in range(args.runs)]
    f, s = statistics.median(r for r, _ in flocked), statistics.median(r for r, _ in single)
    print(f"throughput, two pools of one 4-core host each ({args.jobs} jobs of {args.secs:g} s): {f:.3f} jobs/s "
          f"(reference: one pool of two such hosts {s:.3f} jobs/s, ratio: {f / s:.2f}); "
          f"ran where: {[w for _, w in flocked]}")
    if slow is not None:
        d = statistics.median(r for r, _ in slow)
        print(f"throughput, the pools' link 50 ms each way and 20 Mbit/s (round trip {rtt:.0f} ms): {d:.3f} jobs/s "
              f"(reference: the plain link {f:.3f} jobs/s, ratio: {d / f:.2f}); ran where: {[w for _, w in slow]}")


if __name__ == "__main__":
    main()
