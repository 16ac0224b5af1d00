"""The execute side with thousands of jobs running at once on one startd (issue 27).

Runnable on its own::

    .venv/bin/python bench/running_bench.py [--jobs 2000,4000] [--runs N] [--hosts K] [--profile FILE]

One personal pool per size N (a temporary ROOST_HOME, one startd of N static slots),
N ``sleep`` jobs submitted in one cluster. With ``--hosts K`` the pool is K+1 hosts in
network namespaces instead (tests/system/netns.py; needs root): a central manager that
is the submit host too, and K execute hosts of N/K static slots each. ``--profile
FILE`` runs the (first) startd under cProfile and writes its statistics to FILE
(``ROOST_STARTD_PROFILE``); its CPU figures then include the profiler's cost.
Figures, one line each, in the form ``figure: value unit (reference: value, ratio: x.xx)``:

- ``running_N``: submit start until the schedd counts all N jobs Running.
- ``processes_N``: submit start until N job processes really exist (counted in /proc
  by their command line, which is unique to this bench).
- ``lag_N``: the worst lag seen between the schedd's Running count and the processes
  that exist (jobs), sampled once a second.
- ``startd_fds_N``: the startd's peak open descriptors; ``fds_per_job_N`` the same,
  less the idle startd's, per running job; then one line per kind (pipe, socket,
  pidfd, memfd, exit file, cgroup file, other) per running job.
- ``held_N``: jobs held at the end (must be 0).
- ``startd_cpu_per_start_N`` and ``schedd_cpu_per_start_N``: the daemons' CPU time
  (user + system, all startds together) from the submit until all processes exist, per
  job started, in ms.

References: the figures an outside check measured before issue 27's work (3.5
descriptors per running job in the startd; processes ~30 s behind Running at 4,000
jobs); the held reference is 0. A ratio above 1 means better than the reference.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "src"))

from pool_bench import BenchPool  # noqa: E402  (the bench's own directory)

#: an argument no other process on the machine has: counts this bench's jobs only
SLEEP_ARG = "86399.25"
REF_FDS_PER_JOB = 3.5
REF_LAG_4000 = 30.0
EXTRA = ""  # more configuration for the pool (--max-starting)


def pool_config(n: int) -> str:
    # each slot gets MEMORY/N MiB: 64 MiB each, whatever the machine has
    # NEGOTIATOR_INTERVAL: a cycle that matched slots already claimed (the collector had
    # not heard yet) leaves jobs idle until the next periodic one
    return (f"\nNUM_CPUS = {n}\nMEMORY = {n * 64}\nSTARTD_DETECT_CONTAINERS = False\n"
            "STARTD_DETECT_JAVA = False\nNEGOTIATOR_INTERVAL = 10\n")


#: the netns hosts' test configuration (hostpool.FAST_CONFIG) made fit for thousands of
#: claims: keep-alives, usage reports and periodic expressions every second for 10,000
#: jobs would be the whole load (the defaults, as a real pool has them)
HOSTS_CONFIG = """
ALIVE_INTERVAL = 300
STARTER_UPDATE_INTERVAL = 300
PERIODIC_EXPR_INTERVAL = 60
JOB_LEASE_DURATION = 2400
UPDATE_INTERVAL = 60
NEGOTIATOR_INTERVAL = 10
STARTD_DETECT_CONTAINERS = False
STARTD_DETECT_JAVA = False
STARTD_DETECT_CRIU = False
STARTD_DETECT_GPUS = False
"""


def cpu_seconds(pid: int) -> float:
    """User + system CPU of ``pid`` so far (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def our_jobs() -> Iterator[int]:
    """Pids of processes running this bench's sleep (one /proc walk: ~0.1 s at 10,000)."""
    want = SLEEP_ARG.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if len(argv) >= 2 and argv[1] == want and argv[0].endswith(b"sleep"):
            yield int(name)


def count_jobs() -> int:
    """How many of this bench's sleep jobs run now."""
    return sum(1 for _ in our_jobs())


def fd_kinds(pid: int) -> Counter[str]:
    """The open descriptors of ``pid`` by kind."""
    kinds: Counter[str] = Counter()
    base = f"/proc/{pid}/fd"
    for fd in os.listdir(base):
        try:
            target = os.readlink(f"{base}/{fd}")
        except OSError:
            continue
        if target.startswith("pipe:"):
            kinds["pipe"] += 1
        elif target.startswith("socket:"):
            kinds["socket"] += 1
        elif "pidfd" in target:
            kinds["pidfd"] += 1
        elif target.startswith("/memfd:"):
            kinds["memfd"] += 1
        elif target.endswith(".exit") or "/.jobs/" in target:
            kinds["exit_file"] += 1
        elif target.startswith("/sys/fs/cgroup"):
            kinds["cgroup"] += 1
        else:
            kinds["other"] += 1
    return kinds


def kill_leftovers() -> int:
    """Kill this bench's sleep jobs still running (by their pids): a job outlives a
    startd that is stopped under it, and an interrupted run leaves them."""
    killed = 0
    for pid in our_jobs():
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except OSError:
            continue
    return killed


def run_once(n: int, timeout: float, hosts: int = 0, profile: str | None = None) -> dict[str, float]:
    try:
        return _run_hosts(n, timeout, hosts, profile) if hosts else _run_once(n, timeout, profile)
    finally:
        kill_leftovers()


def _run_once(n: int, timeout: float, profile: str | None) -> dict[str, float]:
    if profile:
        os.environ["ROOST_STARTD_PROFILE"] = profile  # the master's children inherit it
    try:
        with BenchPool(pool_config(n) + EXTRA) as bp:
            from roost.api.schedd import Schedd

            daemons = bp.pool.status()["daemons"]
            startd, schedd_pid = int(daemons["STARTD"]["pid"]), int(daemons["SCHEDD"]["pid"])
            d = bp.home / "jobs"
            d.mkdir()
            schedd = Schedd(bp.home)
            try:
                return measure(n, timeout, schedd, [startd], schedd_pid, lambda: bp.roost("submit", "job.sub", cwd=d),
                               d, lambda: bp.roost("rm", "-all"))
            finally:
                schedd.close()
    finally:
        os.environ.pop("ROOST_STARTD_PROFILE", None)


def _run_hosts(n: int, timeout: float, k: int, profile: str | None) -> dict[str, float]:
    """The same over K execute hosts in network namespaces (needs root)."""
    sys.path.insert(0, str(ROOT / "tests" / "system"))
    from hostpool import MultiHostPool  # the system tests' hosts  # noqa: E402
    from netns import Network, unavailable  # noqa: E402

    why = unavailable()
    if why is not None:
        raise RuntimeError(f"--hosts needs network namespaces: {why}")
    per = -(-n // k)
    with Network() as net:
        pool = MultiHostPool(net)
        try:
            cm = pool.add("cm", "CentralManager", "Submit")
            with open(cm.home / "roost_config", "a") as f:
                f.write(HOSTS_CONFIG + EXTRA)
            cm.roost("up", "-timeout", "60", timeout=90)
            for i in range(k):
                h = pool.add(f"exec{i + 1}", "Execute")
                h.take_pool_key(cm)
                with open(h.home / "roost_config", "a") as f:
                    f.write(f"{HOSTS_CONFIG}use FEATURE : StaticSlots\nNUM_CPUS = {per}\nMEMORY = {per * 64}\n")
                if profile and i == 0:
                    h.env["ROOST_STARTD_PROFILE"] = profile
                h.roost("up", "-timeout", "60", timeout=90)
            from roost.api.schedd import Schedd

            startds = [daemon_pid(pool[f"exec{i + 1}"].host.pids(), "startd") for i in range(k)]
            schedd_pid = daemon_pid(cm.host.pids(), "schedd")
            pool.wait_for_slots({f"exec{i + 1}" for i in range(k)}, timeout=120)
            home_ns = os.open("/proc/self/ns/net", os.O_RDONLY)
            enter_netns(f"/run/netns/{cm.host.netns}")  # this thread's sockets: the schedd's TCP address is there
            d = net.dir / "jobs"
            d.mkdir(mode=0o755)
            schedd = Schedd(cm.home)
            try:
                return measure(n, timeout, schedd, startds, schedd_pid,
                               lambda: cm.roost("submit", "job.sub", cwd=d, check=False), d,
                               lambda: cm.roost("rm", "-all", check=False, timeout=120))
            finally:
                schedd.close()
                # back home: Network.close kills every process in its hosts' namespaces
                enter_netns(f"/proc/self/fd/{home_ns}")
                os.close(home_ns)
        finally:
            pool.stop()


def daemon_pid(pids: list[int], daemon: str) -> int:
    """Which of ``pids`` runs ``python -m roost.daemons.<daemon>``."""
    want = f"roost.daemons.{daemon}".encode()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if want in f.read().split(b"\0"):
                    return pid
        except OSError:
            continue
    raise RuntimeError(f"no {daemon} among {pids}")


def enter_netns(path: str) -> None:
    """Move this thread into the network namespace at ``path`` (``/run/netns/NAME``):
    Python 3.11 has no os.setns."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            e = ctypes.get_errno()
            raise OSError(e, f"setns into {path}: {os.strerror(e)}")
    finally:
        os.close(fd)


CLONE_NEWNET = 0x40000000


def measure(n: int, timeout: float, schedd: Any, startds: list[int], schedd_pid: int,
            submit: Callable[[], Any], d: Path, remove: Callable[[], Any]) -> dict[str, float]:
    """Submit N sleep jobs and watch them start: the figures of one run."""
    out: dict[str, float] = {}
    startd = startds[0]
    idle_fds = sum(fd_kinds(startd).values())
    (d / "job.sub").write_text(f"executable = /bin/sleep\narguments = {SLEEP_ARG}\n"
                               f"request_memory = 16\nrequest_disk = 1024\nqueue {n}\n")
    cpu0 = sum(cpu_seconds(p) for p in startds), cpu_seconds(schedd_pid)
    t0 = time.perf_counter()
    done = submit()
    if done.returncode != 0:
        raise RuntimeError(f"roost submit failed: {done.stderr.strip()}")
    running_at = procs_at = None
    peak: Counter[str] = Counter()
    peak_total = 0
    cpu1 = cpu0
    samples: list[tuple[float, int, int]] = []  # (time, schedd's Running count, processes)
    deadline = t0 + timeout
    while (running_at is None or procs_at is None) and time.perf_counter() < deadline:
        time.sleep(1.0)
        now = time.perf_counter()
        totals = schedd.totals()
        running, procs = totals.get("Running", 0), count_jobs()
        kinds = fd_kinds(startd)
        if sum(kinds.values()) > peak_total:
            peak_total, peak = sum(kinds.values()), kinds
        samples.append((now, running, procs))
        if running_at is None and running >= n:
            running_at = now - t0
        if procs_at is None:
            cpu1 = sum(cpu_seconds(p) for p in startds), cpu_seconds(schedd_pid)
            if procs >= n:
                procs_at = now - t0
        held = totals.get("Held", 0)
        print(f"  t={now - t0:6.1f}s running={running} processes={procs} held={held} "
              f"startd_fds={sum(kinds.values())}", file=sys.stderr, flush=True)
    out["held"] = float(schedd.totals().get("Held", 0))
    out["running"] = running_at if running_at is not None else float("inf")
    out["processes"] = procs_at if procs_at is not None else float("inf")
    out["lag"] = worst_lag(samples, n)
    print(f"  all started; removing the jobs ({time.perf_counter() - t0:.1f}s)", file=sys.stderr, flush=True)
    per_startd = n / len(startds)  # the descriptors are the first startd's, its share of the jobs
    out["startd_fds"] = float(peak_total)
    out["fds_per_job"] = (peak_total - idle_fds) / per_startd
    for kind in ("pipe", "socket", "pidfd", "memfd", "exit_file", "cgroup", "other"):
        out[f"{kind}_per_job"] = peak[kind] / per_startd
    started = max(1, samples[-1][2] if samples else 1)
    out["startd_cpu"] = (cpu1[0] - cpu0[0]) * 1000.0 / started
    out["schedd_cpu"] = (cpu1[1] - cpu0[1]) * 1000.0 / started
    remove()
    print(f"  removed ({time.perf_counter() - t0:.1f}s)", file=sys.stderr, flush=True)
    return out


def worst_lag(samples: list[tuple[float, int, int]], n: int) -> float:
    """The longest time, over counts k in steps of n/20, between the schedd first
    counting k jobs Running and k job processes first existing."""
    worst = 0.0
    for k in range(max(1, n // 20), n + 1, max(1, n // 20)):
        ran = next((t for t, r, _ in samples if r >= k), None)
        began = next((t for t, _, p in samples if p >= k), None)
        if ran is not None and began is not None:
            worst = max(worst, began - ran)
    return worst


def line(name: str, value: float, unit: str, ref: float | None, lower_better: bool = True) -> str:
    if ref is None:
        return f"{name}: {value:.2f} {unit} (reference: none, ratio: n/a)"
    if lower_better:
        ratio = (ref / value) if value > 0 else float("inf")
    else:
        ratio = value / ref if ref else float("inf")
    return f"{name}: {value:.2f} {unit} (reference: {ref:g}, ratio: {ratio:.2f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", default="2000,4000", help="comma-separated sizes (default 2000,4000)")
    ap.add_argument("--runs", type=int, default=1, help="runs per size (median reported)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for all to run")
    ap.add_argument("--hosts", type=int, default=0,
                    help="K execute hosts in network namespaces (0, the default: one personal pool)")
    ap.add_argument("--max-starting", type=int, default=None,
                    help="SCHEDD_MAX_STARTING_PER_STARTD for the run (default: the schedd's, 256)")
    ap.add_argument("--profile", default=None, help="run the (first) startd under cProfile, statistics to this file")
    ns = ap.parse_args()
    if ns.hosts < 0:
        ap.error("--hosts must be 0 or more")
    global EXTRA
    if ns.max_starting is not None:
        EXTRA = f"SCHEDD_MAX_STARTING_PER_STARTD = {ns.max_starting}\n"
    ok = True
    for n in (int(x) for x in ns.jobs.split(",")):
        runs = [run_once(n, ns.timeout, ns.hosts, ns.profile) for _ in range(ns.runs)]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(line(f"running_{n}", med["running"], "s", None))
        print(line(f"processes_{n}", med["processes"], "s", None))
        print(line(f"lag_{n}", med["lag"], "s", REF_LAG_4000 * n / 4000))
        print(line(f"startd_fds_{n}", med["startd_fds"], "fds", REF_FDS_PER_JOB * n))
        print(line(f"fds_per_job_{n}", med["fds_per_job"], "fds", REF_FDS_PER_JOB))
        for kind in ("pipe", "socket", "pidfd", "memfd", "exit_file", "cgroup", "other"):
            print(line(f"{kind}_per_job_{n}", med[f"{kind}_per_job"], "fds", None))
        print(line(f"startd_cpu_per_start_{n}", med["startd_cpu"], "ms", None))
        print(line(f"schedd_cpu_per_start_{n}", med["schedd_cpu"], "ms", None))
        print(f"held_{n}: {med['held']:.0f} jobs (reference: 0, ratio: {'1.00' if med['held'] == 0 else '0.00'})")
        ok = ok and med["held"] == 0 and med["running"] != float("inf")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
