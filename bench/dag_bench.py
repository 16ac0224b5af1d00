"""Speed of roost's DAGMan (``roost submit_dag``) in a whole personal pool.

Runnable on its own::

    .venv/bin/python bench/dag_bench.py [--quick] [--runs N] [--only fanout,chain,parse]

Prints one line per figure, ``figure: value unit (reference: value, ratio: x.xx)``:
the median of ``--runs`` runs (3 unless told); a ratio above 1 means roost is better.
Then the target and whether it is met.

HTCondor's own figures for these are not measured here (its daemons cannot run on
this machine), so the references are ``none``, except for ``fanout``: HTCondor's
DAGMan submits at most ``DAGMAN_MAX_SUBMITS_PER_INTERVAL`` = 100 nodes every
``DAGMAN_USER_LOG_SCAN_INTERVAL`` = 5 s by default, a ceiling of 20 nodes/s for a
fan-out, which is printed as its (derived) reference.

Figures (``fanout`` and ``chain`` each in a fresh pool under a temporary ROOST_HOME,
8 static slots, as ``pool_bench``):
- ``fanout``: a DAG of 10,000 independent ``/bin/true`` nodes (1,000 with
  ``--quick``), from the start of ``roost submit_dag`` until the ``EXITING WITH
  STATUS 0`` line of ``FILE.dag.dagman.out``: nodes per second; target >= 150.
  ``fanout_manager`` (informational): the same from the manager's own metrics
  (``FILE.dag.metrics`` duration: its start to its exit).
- ``chain``: a chain of 1,000 ``/bin/true`` nodes (100 with ``--quick``), each the
  parent of the next, ``roost submit_dag`` to the EXITING line, seconds; target
  <= 30 s (30 ms a node, scaled with ``--quick``).
- ``chain_step``: what each dependency step adds to a single job's latency:
  (chain time - nodes x single-job latency) / nodes, in ms; target <= 30. The
  single-job latency is measured in the same pool just before each chain, as
  ``pool_bench``'s ``latency_api`` (median of 20 sequential ``Schedd().submit_file()``
  of one ``/bin/true`` to its terminated event in the user log, 0.2 s of idle pool
  between them); it is printed too (``chain_job_latency``, informational), and so is
  the same with each job submitted the moment the previous one terminated, as a
  chain's nodes are (``chain_job_latency_b2b``, informational: what the pool itself
  takes when its slot has just finished a job; ``chain_step`` includes the difference).
- ``parse``: a 100,000-node chain DAG file (one JOB and one PARENT line a node)
  through ``roost.dagman.submitdag.load`` (parse, splices, submit files checked)
  and ``roost.dagman.state.DagRun(dag).start()``, in this process; seconds;
  target <= 5. No pool.
- ``parse_rss``: the peak resident memory of a fresh Python that imports roost's
  DAGMan modules and does the same (its ``VmHWM``: Linux carries ``ru_maxrss``
  across fork and exec, so that would include this process's own); MB; target <= 200.
  ``parse_rss_base`` (informational): the same Python that only imports them.

The DAG's directory is world-writable and its files world-readable: the schedd runs
the DAG manager as the DAG's owner, and as ``nobody`` when that owner is root.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from pool_bench import BenchPool, run_steps, wait_terminated  # noqa: E402

NODE_SUB = "executable = /bin/true\nqueue\n"
FANOUT_REF = 20.0  # HTCondor DAGMan: 100 submits per 5 s scan interval
LATENCY_JOBS = 20

# figure -> (unit, reference or None, "lower"/"higher" is better, target or None)
FIGURES: dict[str, tuple[str, float | None, str, float | None]] = {
    "fanout": ("nodes/s", FANOUT_REF, "higher", 150.0),
    "fanout_manager": ("nodes/s", FANOUT_REF, "higher", None),
    "chain": ("s", None, "lower", 30.0),
    "chain_step": ("ms", None, "lower", 30.0),
    "chain_job_latency": ("ms", None, "lower", None),
    "chain_job_latency_b2b": ("ms", None, "lower", None),
    "parse": ("s", None, "lower", 5.0),
    "parse_rss": ("MB", None, "lower", 200.0),
    "parse_rss_base": ("MB", None, "lower", None),
}
SIZES: dict[str, int] = {}  # figure -> nodes, for the report


class DagDir:
    """A world-writable directory for one DAG, always removed."""

    def __init__(self, name: str, dag_text: str) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="roost-dag-bench-", dir="/tmp"))
        os.chmod(self.path, 0o777)
        self.dag = self.path / f"{name}.dag"
        for f, text in ((self.path / "node.sub", NODE_SUB), (self.dag, dag_text)):
            f.write_text(text)
            os.chmod(f, 0o644)

    def __enter__(self) -> DagDir:
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def file(self, suffix: str) -> Path:
        return Path(f"{self.dag}.{suffix}")

    def diagnose(self, bp: BenchPool) -> str:
        """What the manager, its job and the pool say, for a DAG that did not finish."""
        parts = []
        for suffix in ("dagman.out", "lib.err", "lib.out"):
            try:
                text = self.file(suffix).read_text(errors="replace")
            except FileNotFoundError:
                parts.append(f"[{suffix}: missing]")
                continue
            tail = "\n".join(text.splitlines()[-15:])
            parts.append(f"[{suffix}, last lines]\n{tail}")
        q = bp.roost("q", "-nobatch")
        parts.append("[roost q -nobatch, first lines]\n" + "\n".join((q.stdout + q.stderr).splitlines()[:12]))
        for log in sorted((bp.home / "log").glob("*")):
            try:
                lines = [ln for ln in log.read_text(errors="replace").splitlines()
                         if re.search(r"error|traceback|exception|dagman", ln, re.I)]
            except (OSError, IsADirectoryError):
                continue
            if lines:
                parts.append(f"[{log.name}: lines with error/dagman]\n" + "\n".join(lines[-8:]))
        return "\n".join(parts)


def run_dag(bp: BenchPool, dd: DagDir, timeout: float) -> tuple[float, dict[str, object]]:
    """``roost submit_dag`` the DAG and wait for the manager's EXITING line; return the
    seconds from the submit's start to the moment that line was seen, and the metrics."""
    out = dd.file("dagman.out")
    t0 = time.perf_counter()
    done = bp.roost("submit_dag", dd.dag.name, cwd=dd.path)
    if done.returncode != 0:
        raise RuntimeError(f"roost submit_dag failed: {(done.stderr or done.stdout).strip()}")
    if not re.search(r"submitted to cluster (\d+)\.", done.stdout):
        raise RuntimeError(f"roost submit_dag printed no cluster: {done.stdout.strip()}")
    deadline = t0 + timeout
    offset, tail = 0, b""
    needle = re.compile(rb"EXITING WITH STATUS (-?\d+)")
    while True:
        try:
            size = out.stat().st_size
        except FileNotFoundError:
            size = 0
        if size > offset:
            with open(out, "rb") as f:
                f.seek(offset)
                data = f.read()
            offset += len(data)
            tail = (tail + data)[-512:]
            m = needle.search(tail)
            if m:
                t1 = time.perf_counter()
                if int(m.group(1)) != 0:
                    raise RuntimeError(f"the DAG manager exited with status {m.group(1).decode()}\n{dd.diagnose(bp)}")
                break
        if time.perf_counter() > deadline:
            raise TimeoutError(f"no EXITING line in {out} after {timeout:g} s\n{dd.diagnose(bp)}")
        time.sleep(0.01)  # light polling: the CPU is the pool's
    try:
        metrics = json.loads(dd.file("metrics").read_text())
    except (OSError, ValueError):
        metrics = {}
    return t1 - t0, metrics


def bench_fanout(runs: int, n: int) -> dict[str, list[float]]:
    SIZES["fanout"] = SIZES["fanout_manager"] = n
    res: dict[str, list[float]] = {"fanout": [], "fanout_manager": []}
    text = "".join(f"JOB N{i} node.sub\n" for i in range(n))
    with BenchPool() as bp:
        for _ in range(runs):
            with DagDir("fanout", text) as dd:
                secs, metrics = run_dag(bp, dd, timeout=120 + n * 0.1)
                res["fanout"].append(n / secs)
                if metrics.get("jobs_succeeded") != n:
                    raise RuntimeError(f"{metrics.get('jobs_succeeded')}/{n} nodes succeeded (metrics)")
                dur = metrics.get("duration")
                if isinstance(dur, (int, float)) and dur > 0:
                    res["fanout_manager"].append(n / dur)
    return res


def job_latency(bp: BenchPool, name: str, count: int, gap: float = 0.2) -> list[float]:
    """Sequential single ``/bin/true`` jobs through the API, as pool_bench's latency_api
    (``gap`` seconds of idle pool between them); the first (warming the claim path) is
    not counted."""
    from roost.api.schedd import Schedd

    out: list[float] = []
    for i in range(count + 1):
        d = bp.home / f"{name}{i}"
        d.mkdir()
        (d / "job.sub").write_text("executable = /bin/true\nlog = job.log\nqueue\n")
        t0 = time.perf_counter()
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
        if gap:
            time.sleep(gap)  # idle pool between jobs
    return out


def bench_chain(runs: int, n: int) -> dict[str, list[float]]:
    SIZES["chain"] = SIZES["chain_step"] = n
    res: dict[str, list[float]] = {"chain": [], "chain_step": [], "chain_job_latency": [],
                                   "chain_job_latency_b2b": []}
    text = "".join(f"JOB N{i} node.sub\n" for i in range(n))
    text += "".join(f"PARENT N{i} CHILD N{i + 1}\n" for i in range(n - 1))
    with BenchPool() as bp:
        for r in range(runs):
            lat = statistics.median(job_latency(bp, f"lat{r}-", LATENCY_JOBS))
            b2b = statistics.median(job_latency(bp, f"b2b{r}-", LATENCY_JOBS, gap=0.0))
            with DagDir("chain", text) as dd:
                secs, metrics = run_dag(bp, dd, timeout=120 + n * 1.0)
                if metrics.get("jobs_succeeded") != n:
                    raise RuntimeError(f"{metrics.get('jobs_succeeded')}/{n} nodes succeeded (metrics)")
            res["chain"].append(secs)
            res["chain_step"].append(1000.0 * (secs - n * lat) / n)
            res["chain_job_latency"].append(1000.0 * lat)
            res["chain_job_latency_b2b"].append(1000.0 * b2b)
    return res


# The child's peak RSS is VmHWM (its own address space's high-water mark). Not
# getrusage's ru_maxrss: Linux carries that across fork and exec, so a child of this
# process would report at least this process's own RSS at the fork.
_RSS_CHILD = """
import sys
sys.path.insert(0, {src!r})
from roost.dagman.state import DagRun
from roost.dagman.submitdag import load
if sys.argv[1] != "-":
    DagRun(load(sys.argv[1])).start()
try:
    with open("/proc/self/status") as f:
        print(next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:")))
except (OSError, StopIteration):
    import resource
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def bench_parse(runs: int, n: int) -> dict[str, list[float]]:
    from roost.dagman.state import DagRun
    from roost.dagman.submitdag import load

    SIZES["parse"] = SIZES["parse_rss"] = n
    res: dict[str, list[float]] = {"parse": [], "parse_rss": [], "parse_rss_base": []}
    text = "".join(f"JOB N{i} node.sub\n" for i in range(n))
    text += "".join(f"PARENT N{i} CHILD N{i + 1}\n" for i in range(n - 1))
    child = _RSS_CHILD.format(src=str(ROOT / "src"))
    with DagDir("parse", text) as dd:
        for _ in range(runs):
            for arg, key in ((str(dd.dag), "parse_rss"), ("-", "parse_rss_base")):
                p = subprocess.run([sys.executable, "-c", child, arg], capture_output=True, text=True)
                if p.returncode != 0:
                    raise RuntimeError(f"the child python failed: {p.stderr.strip()[-2000:]}")
                res[key].append(int(p.stdout.split()[-1]) / 1024.0)  # kB
            t0 = time.perf_counter()
            run = DagRun(load(str(dd.dag)))
            run.start()
            res["parse"].append(time.perf_counter() - t0)
            if len(run.nodes) != n:
                raise RuntimeError(f"{len(run.nodes)}/{n} nodes in the DagRun")
            del run
    return res


def report(name: str, values: list[float] | None, error: str | None = None) -> bool:
    unit, ref, better, target = FIGURES[name]
    if name == "chain" and target is not None and SIZES.get(name, 1000) != 1000:
        target = target * SIZES[name] / 1000  # 30 ms a node, scaled to the chain's size
    ref_s = "none" if ref is None else f"{ref:g}"
    if not values:
        print(f"{name}: n/a {unit} (reference: {ref_s}, ratio: n/a) -- {error or 'not measured'}", flush=True)
        return False
    v = statistics.median(values)
    if ref is None or v <= 0:
        ratio = "n/a"
    else:
        ratio = f"{ref / v if better == 'lower' else v / ref:.2f}"
    verdict = ""
    ok = True
    if target is not None:
        ok = v <= target if better == "lower" else v >= target
        verdict = f" target {'<=' if better == 'lower' else '>='} {target:g}: {'met' if ok else 'NOT met'}"
    else:
        verdict = " (informational)"
    shown = f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}"
    size = f"{SIZES[name]} nodes, " if name in SIZES else ""
    print(f"{name}: {shown} {unit} (reference: {ref_s}, ratio: {ratio}){verdict} "
          f"[{size}{len(values)} runs, min {min(values):.3g}, max {max(values):.3g}]", flush=True)
    return ok


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=3, help="runs per figure (default 3)")
    p.add_argument("--quick", action="store_true", help="smaller DAGs: 1,000-node fan-out, 100-node chain")
    p.add_argument("--only", default=None, help="comma-separated: fanout,chain,parse")
    ns = p.parse_args()
    only = set((ns.only or "fanout,chain,parse").split(","))
    unknown = only - {"fanout", "chain", "parse"}
    if unknown:
        p.error(f"unknown figure(s): {', '.join(sorted(unknown))}")
    runs = max(1, ns.runs)
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "src" / "roost")], env=env, check=False,
                   stdout=subprocess.DEVNULL)
    steps: list[tuple[str, Callable[[], dict[str, list[float]]]]] = []
    if "fanout" in only:
        steps.append(("fanout", lambda: bench_fanout(runs, 1000 if ns.quick else 10_000)))
    if "chain" in only:
        steps.append(("chain", lambda: bench_chain(runs, 100 if ns.quick else 1000)))
    if "parse" in only:
        steps.append(("parse", lambda: bench_parse(runs, 100_000)))
    return 0 if run_steps(steps, report) else 1


if __name__ == "__main__":
    sys.exit(main())
