"""Speed of a whole personal pool, against HTCondor 25 measured on this machine kind.

Runnable on its own::

    .venv/bin/python bench/pool_bench.py [--quick] [--runs N] [--only NAME,...]

Prints one line per figure, ``figure: value unit (reference: value, ratio: x.xx)``:
the median of several runs; the reference is HTCondor 25's figure from
/work/shared/anchors/README.md (HTCondor's daemons cannot run here, so they
were measured once on this machine kind); a ratio above 1 means roost is
better. Then the target and whether it is met.

Figures (each in a fresh pool under a temporary ROOST_HOME, 8 slots):
- ``latency_cli``: start of ``roost submit job.sub`` (a new process) until the
  job's terminated event is in its user log; ``/bin/true``; idle pool.
- ``latency_api``: the same from ``Schedd().submit_file()`` in this process.
- ``throughput``: 1,000 x ``/bin/true``: from the start of the submit until
  the last terminated event, jobs per second.
- ``submit_100k``: ``roost submit`` of a ``queue 100000`` file, start to exit.
- ``q_100k``: ``roost q`` (the default batch view) with 100,000 jobs queued;
  ``q_nobatch_100k`` one line per job (informational).
- ``q_totals_100k``: ``roost q -totals`` with 100,000 jobs queued.
- ``schedd_rss_100k``: the schedd's resident memory with 100,000 idle jobs.
The 100,000-job figures use a pool without a startd, so the jobs stay idle.

Commands run with Python's bytecode cache on (``PYTHONDONTWRITEBYTECODE`` is
dropped from their environment and ``src/roost`` is compiled first), as in any
normal install; without it every command recompiles its modules, ~0.1 s more.
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
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

# The console script users run (``roost``), else the module.
_SCRIPT = Path(sys.executable).parent / "roost"
ROOST = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "roost.cli.main"]
POOL_CONFIG = """
# pool_bench: 8 static slots, as HTCondor's figures were taken
NUM_CPUS = 8
use FEATURE : StaticSlots
"""
NO_STARTD = "\nDAEMON_LIST = MASTER COLLECTOR NEGOTIATOR SCHEDD\n"

# figure -> (unit, HTCondor reference, "lower"/"higher" is better, target)
FIGURES: dict[str, tuple[str, float, str, float | None]] = {
    "latency_cli": ("s", 0.096, "lower", 0.05),
    "latency_api": ("s", 0.096, "lower", 0.05),
    "throughput": ("jobs/s", 40.0, "higher", 200.0),
    "submit_100k": ("s", 21.0, "lower", 5.0),
    "q_100k": ("s", 2.45, "lower", 1.0),
    "q_nobatch_100k": ("s", 2.45, "lower", None),
    "q_totals_100k": ("s", 0.04, "lower", 0.05),
    "schedd_rss_100k": ("MB", 185.0, "lower", 185.0),
}


class BenchPool:
    """A personal pool in a temporary ROOST_HOME, always stopped (and its group killed)."""

    def __init__(self, extra: str = "") -> None:
        self.home = Path(tempfile.mkdtemp(prefix="roost-bench-", dir="/tmp"))
        self.env = dict(os.environ, ROOST_HOME=str(self.home))
        self.env.pop("ROOST_CONFIG", None)
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.extra = extra
        self.master_pid: int | None = None

    def __enter__(self) -> BenchPool:
        from roost.api.pool import Pool
        from roost.config import write_personal_config

        cfg = write_personal_config(self.home)
        with open(cfg, "a") as f:
            f.write(POOL_CONFIG + self.extra)
        self.pool = Pool(self.home)
        try:
            self.pool.start(timeout=60)
        finally:
            self.master_pid = self.pool.master_pid()
        os.environ["ROOST_HOME"] = str(self.home)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.pool.stop(timeout=60)
        finally:
            if self.master_pid:
                try:
                    os.killpg(self.master_pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            subprocess.run(["rm", "-rf", str(self.home)], check=False)

    def roost(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*ROOST, *args], env=self.env, cwd=cwd, capture_output=True, text=True)

    def schedd_pid(self) -> int:
        return int(self.pool.status()["daemons"]["SCHEDD"]["pid"])


class DirWatch:
    """Wakes when a file in a directory is created or written (Linux inotify through
    libc), so waiting for the user log takes no CPU from the pool being measured and
    sees the terminated event within microseconds; polling where inotify is missing."""

    _IN_MODIFY, _IN_CREATE, _IN_NONBLOCK, _IN_CLOEXEC = 0x2, 0x100, 0o4000, 0o2000000

    def __init__(self, directory: Path) -> None:
        self.fd = -1
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(self._IN_NONBLOCK | self._IN_CLOEXEC)
            if fd >= 0 and libc.inotify_add_watch(fd, os.fsencode(directory), self._IN_MODIFY | self._IN_CREATE) >= 0:
                self.fd = fd
            elif fd >= 0:
                os.close(fd)
        except (OSError, AttributeError):
            pass

    def wait(self, seconds: float) -> None:
        if self.fd < 0:
            time.sleep(min(seconds, 0.0005))
            return
        import select

        if select.select([self.fd], [], [], seconds)[0]:
            try:
                while os.read(self.fd, 65536):
                    pass
            except BlockingIOError:
                pass

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def wait_terminated(log: Path, count: int, timeout: float = 300.0,
                    proc: subprocess.Popen[bytes] | None = None, interval: float | None = None) -> float:
    """Wait until ``count`` terminated events are in the user log; return that moment.
    Without ``interval`` it wakes at each write to the log (inotify); a long run
    passes one and polls that often instead, so rereading the log after each of
    thousands of events takes no CPU from the pool. With ``proc`` (the submitting
    command), fail at once if it failed."""
    watch = DirWatch(log.parent)
    try:
        return _wait_terminated(log, count, timeout, proc, interval, watch)
    finally:
        watch.close()


def _wait_terminated(log: Path, count: int, timeout: float, proc: subprocess.Popen[bytes] | None,
                     interval: float | None, watch: DirWatch) -> float:
    deadline = time.perf_counter() + timeout
    needle = b"\n005 ("
    seen = 0
    offset = 0
    while True:
        try:
            with open(log, "rb") as f:
                f.seek(offset)
                data = f.read()
        except FileNotFoundError:
            data = b""
        if data:
            # count whole events only: up to the last "..." line
            end = data.rfind(b"\n...\n")
            if end >= 0:
                chunk = data[: end + 5]
                seen += chunk.count(needle) + (1 if chunk.startswith(b"005 (") else 0)
                offset += end + 5 - 1  # keep the newline before the next event
        if seen >= count:
            return time.perf_counter()
        if proc is not None and proc.poll() not in (None, 0):
            err = proc.stderr.read().decode(errors="replace").strip() if proc.stderr else ""
            raise RuntimeError(f"roost submit failed: {err}")
        if time.perf_counter() > deadline:
            raise TimeoutError(f"{seen}/{count} jobs terminated after {timeout:g} s (log {log})")
        if interval is None:
            watch.wait(0.05)  # wakes at the next write, or looks at proc again
        else:
            time.sleep(interval)


def _job_dir(home: Path, name: str, text: str) -> Path:
    d = home / name
    d.mkdir(exist_ok=True)
    (d / "job.sub").write_text(text)
    return d


def bench_latency(runs: int, cli: bool) -> list[float]:
    out: list[float] = []
    with BenchPool() as bp:
        from roost.api.schedd import Schedd

        for i in range(runs + 1):  # the first run warms the claim path; not counted
            d = _job_dir(bp.home, f"lat{'c' if cli else 'a'}{i}",
                         "executable = /bin/true\nlog = job.log\nqueue\n")
            t0 = time.perf_counter()
            if cli:
                proc = subprocess.Popen([*ROOST, "submit", "job.sub"], env=bp.env, cwd=d,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                t1 = wait_terminated(d / "job.log", 1, timeout=30, proc=proc)
                _, err = proc.communicate(timeout=30)
                if proc.returncode != 0:
                    raise RuntimeError(f"roost submit failed: {err.decode().strip()}")
            else:
                cwd = os.getcwd()
                os.chdir(d)
                try:
                    s = Schedd(bp.home)
                    s.submit_file("job.sub")
                    s.close()
                finally:
                    os.chdir(cwd)
                t1 = wait_terminated(d / "job.log", 1, timeout=30)
            if i:
                out.append(t1 - t0)
            time.sleep(0.2)  # idle pool between jobs
    return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and its reaped children (jobs, for the startd)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return sum(int(x) for x in fields[11:15]) / tick


def bench_throughput(runs: int, n: int = 1000) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"throughput": []}
    with BenchPool() as bp:
        for i in range(runs):
            d = _job_dir(bp.home, f"tp{i}", f"executable = /bin/true\nlog = job.log\nqueue {n}\n")
            pids = {name: int(v["pid"]) for name, v in bp.pool.status()["daemons"].items() if v["pid"]}
            before = {name: cpu_seconds(pid) for name, pid in pids.items()}
            t0 = time.perf_counter()
            done = bp.roost("submit", "job.sub", cwd=d)
            if done.returncode != 0:
                raise RuntimeError(f"roost submit failed: {done.stderr.strip()}")
            t1 = wait_terminated(d / "job.log", n, timeout=600, interval=0.01)
            out["throughput"].append(n / (t1 - t0))
            for name, pid in pids.items():
                key = f"cpu_per_job_{name.lower()}"
                out.setdefault(key, []).append(1000.0 * (cpu_seconds(pid) - before[name]) / n)
    return out


def bench_100k(runs: int, n: int = 100_000) -> dict[str, list[float]]:
    res: dict[str, list[float]] = {"submit_100k": [], "q_100k": [], "q_nobatch_100k": [],
                                   "q_totals_100k": [], "schedd_rss_100k": []}
    for i in range(runs):
        with BenchPool(NO_STARTD) as bp:
            d = _job_dir(bp.home, f"big{i}", f"executable = /bin/true\narguments = $(Process)\nqueue {n}\n")
            t0 = time.perf_counter()
            done = bp.roost("submit", "job.sub", cwd=d)
            res["submit_100k"].append(time.perf_counter() - t0)
            if done.returncode != 0:
                raise RuntimeError(f"roost submit failed: {done.stderr.strip()}")
            for args, key in ((("q",), "q_100k"), (("q", "-nobatch"), "q_nobatch_100k"),
                              (("q", "-totals"), "q_totals_100k")):
                for _ in range(3):
                    t0 = time.perf_counter()
                    q = subprocess.run([*ROOST, *args], env=bp.env, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE)
                    res[key].append(time.perf_counter() - t0)
                    if q.returncode != 0:
                        raise RuntimeError(f"roost {' '.join(args)} failed: {q.stderr.decode().strip()}")
            with open(f"/proc/{bp.schedd_pid()}/status") as f:
                rss_kb = next(int(ln.split()[1]) for ln in f if ln.startswith("VmRSS:"))
            res["schedd_rss_100k"].append(rss_kb / 1024.0)
    return res


def run_steps(steps: list[tuple[str, Callable[[], dict[str, list[float]]]]],
              report: Callable[..., bool]) -> bool:
    """Run each figure's step and report what it measured; a step that fails is reported
    as not measured (under its first figure's name) and the rest go on. All targets met?"""
    all_ok = True
    for first, step in steps:
        try:
            got = step()
        except Exception as e:
            all_ok &= report(first, None, f"{type(e).__name__}: {e}")
            continue
        for name, values in got.items():
            all_ok &= report(name, values)
    return all_ok


def report(name: str, values: list[float] | None, error: str | None = None) -> bool:
    if name.startswith("cpu_per_job_"):
        # informational: HTCondor's per-job CPU is known only for startd/schedd (anchors)
        ref = {"cpu_per_job_startd": 20.0, "cpu_per_job_schedd": 7.0}.get(name)
        if values:
            v = statistics.median(values)
            ref_s = f"reference: {ref:g}, ratio: {ref / v:.2f}" if ref and v > 0 else "reference: n/a, ratio: n/a"
            print(f"{name}: {v:.2f} ms ({ref_s}) [CPU of that daemon per job, jobs' own CPU included "
                  "for the startd]", flush=True)
        return True
    unit, ref, better, target = FIGURES[name]
    if not values:
        print(f"{name}: n/a {unit} (reference: {ref:g}, ratio: n/a) -- {error or 'not measured'}")
        return False
    v = statistics.median(values)
    ratio = ref / v if better == "lower" else v / ref
    verdict = ""
    ok = True
    if target is not None:
        ok = v <= target if better == "lower" else v >= target
        verdict = f" target {'<=' if better == 'lower' else '>='} {target:g}: {'met' if ok else 'NOT met'}"
    shown = f"{v:.3f}" if v < 10 else f"{v:.1f}"
    print(f"{name}: {shown} {unit} (reference: {ref:g}, ratio: {ratio:.2f}){verdict} "
          f"[{len(values)} runs, min {min(values):.3g}, max {max(values):.3g}]", flush=True)
    return ok


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=None, help="runs per figure")
    p.add_argument("--quick", action="store_true", help="fewer runs")
    p.add_argument("--only", default=None, help="comma-separated: latency,throughput,100k")
    ns = p.parse_args()
    only = set((ns.only or "latency,throughput,100k").split(","))
    runs = ns.runs or (3 if ns.quick else 9)
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "src" / "roost")], env=env, check=False,
                   stdout=subprocess.DEVNULL)
    steps: list[tuple[str, Callable[[], dict[str, list[float]]]]] = []
    if "latency" in only:
        steps.append(("latency_api", lambda: {"latency_api": bench_latency(runs, cli=False)}))
        steps.append(("latency_cli", lambda: {"latency_cli": bench_latency(runs, cli=True)}))
    if "throughput" in only:
        steps.append(("throughput", lambda: bench_throughput(max(1, min(runs, 3)))))
    if "100k" in only:
        steps.append(("submit_100k", lambda: bench_100k(1 if ns.quick else 3)))
    return 0 if run_steps(steps, report) else 1


if __name__ == "__main__":
    sys.exit(main())
