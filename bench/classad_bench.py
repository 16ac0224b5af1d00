"""ClassAd library speed: roost.classad against HTCondor's own (PyPI ``htcondor``: classad2).

Runnable on its own::

    .venv/bin/python bench/classad_bench.py [--runs N] [--quick] [--only roost|classad2]

Prints one line per figure, ``figure: value unit (reference: value, ratio: x.xx)``,
the median of several runs, the reference being classad2 measured in this same
run, then the target ratio and whether it is met. A ratio above 1 means roost
is faster. Until roost.classad is importable the roost side is reported as n/a.

Figures:
- parse a typical 40-attribute job ad, new ``[...]`` syntax, ``ClassAd(text)``;
  1,000 distinct ads cycled (so no cache keyed on the whole text can help);
- the same, each ad parsed for the first time in the process (a fresh batch of
  1,000 per run: what a schedd sees for new submissions; no per-value cache
  has seen their Args, GlobalJobId, ... before);
- the same ads in the old one-attribute-per-line syntax, ``parseOne(text, ParserType.Old)``;
- evaluate a typical job Requirements against a machine ad,
  ``ExprTree.eval(scope=job, target=machine)`` (the tree built once, as a
  negotiator holds it);
- ``job.symmetricMatch(machine)`` of one job against 10,000 distinct machine ads.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import htcondor2  # noqa: F401  (selects HTCondor's default, non-strict mode)

# isort: split
import classad2

N_ADS = 1000
N_MACHINES = 10_000
REQUIREMENTS = (
    'TARGET.Arch == "X86_64" && TARGET.OpSys == "LINUX" && TARGET.Memory >= RequestMemory'
    " && TARGET.Disk >= RequestDisk && TARGET.Cpus >= RequestCpus"
)
OWNERS = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"]


def job_attrs(i: int, rng: random.Random) -> list[tuple[str, str]]:
    """About 40 attributes of a realistic vanilla job ad, as (name, expression text)."""
    owner = OWNERS[i % len(OWNERS)]
    cluster, proc = 1000 + i // 10, i % 10
    qdate = 1_700_000_000 + i * 7
    mem = rng.choice([512, 1024, 2048, 4096, 8192])
    return [
        ("MyType", '"Job"'),
        ("TargetType", '"Machine"'),
        ("ClusterId", str(cluster)),
        ("ProcId", str(proc)),
        ("GlobalJobId", f'"submit.example.org#{cluster}.{proc}#{qdate}"'),
        ("Owner", f'"{owner}"'),
        ("User", f'"{owner}@example.org"'),
        ("AcctGroup", '"physics"'),
        ("QDate", str(qdate)),
        ("EnteredCurrentStatus", str(qdate + 3)),
        ("JobStatus", "1"),
        ("JobUniverse", "5"),
        ("Cmd", f'"/home/{owner}/bin/analyze"'),
        ("Args", f'"--input data_{i:05d}.root --seed {rng.randrange(1 << 30)} --events 10000"'),
        ("Iwd", f'"/home/{owner}/runs/run{cluster}"'),
        ("In", '"/dev/null"'),
        ("Out", f'"out.{cluster}.{proc}"'),
        ("Err", f'"err.{cluster}.{proc}"'),
        ("UserLog", f'"/home/{owner}/runs/run{cluster}/job.log"'),
        ("Environment", f'"OMP_NUM_THREADS=1 RUN={i}"'),
        ("RequestCpus", str(rng.choice([1, 1, 2, 4]))),
        ("RequestMemory", str(mem)),
        ("RequestDisk", str(rng.choice([100000, 500000, 1000000]))),
        ("ImageSize", str(rng.randrange(1000, 100000))),
        ("DiskUsage", str(rng.randrange(100, 10000))),
        ("NumJobStarts", "0"),
        ("NumRestarts", "0"),
        ("JobPrio", str(rng.randrange(-5, 6))),
        ("NiceUser", "false"),
        ("ShouldTransferFiles", '"YES"'),
        ("WhenToTransferOutput", '"ON_EXIT"'),
        ("TransferInput", f'"data_{i:05d}.root,calib.db"'),
        ("Requirements", REQUIREMENTS),
        ("Rank", "TARGET.KFlops / 1000.0 + TARGET.Memory / 1024"),
        ("PeriodicHold", "(JobStatus == 2) && (time() - EnteredCurrentStatus > 86400)"),
        ("PeriodicRemove", "NumJobStarts > 10 || (JobStatus == 5 && time() - EnteredCurrentStatus > 604800)"),
        ("OnExitRemove", "ExitBySignal == false && ExitCode == 0"),
        ("JobLeaseDuration", "2400"),
        ("WantRemoteIO", "true"),
        ("LeaveJobInQueue", "false"),
        ("MaxHosts", "1"),
        ("CumulativeSlotTime", "0.0"),
    ]


def machine_text(i: int, rng: random.Random) -> str:
    mem = rng.choice([2048, 4096, 8192, 16384, 32768, 65536]) + rng.randrange(0, 64)
    attrs = [
        ("MyType", '"Machine"'),
        ("Name", f'"slot{i % 32 + 1}@node{i // 32:04d}.example.org"'),
        ("Machine", f'"node{i // 32:04d}.example.org"'),
        ("Arch", rng.choice(['"X86_64"'] * 9 + ['"aarch64"'])),
        ("OpSys", rng.choice(['"LINUX"'] * 19 + ['"WINDOWS"'])),
        ("Memory", str(mem)),
        ("Disk", str(rng.randrange(50_000, 5_000_000))),
        ("Cpus", str(rng.choice([1, 2, 4, 8, 16]))),
        ("KFlops", str(rng.randrange(500_000, 3_000_000))),
        ("LoadAvg", f"{rng.random():.3f}"),
        ("KeyboardIdle", str(rng.randrange(0, 10_000))),
        ("State", '"Unclaimed"'),
        ("Activity", '"Idle"'),
        ("Start", 'KeyboardIdle > 300 && LoadAvg < 0.9 && TARGET.Owner != "mallory"'),
        ("Requirements", "START"),
        ("Rank", 'TARGET.AcctGroup =?= "physics" ? 10 : 0'),
    ]
    return "[" + "; ".join(f"{k} = {v}" for k, v in attrs) + "]"


def _new_text(attrs: list[tuple[str, str]]) -> str:
    return "[" + ";\n".join(f"{k} = {v}" for k, v in attrs) + "]"


def make_inputs(runs: int) -> dict[str, Any]:
    rng = random.Random(20261122)
    jobs = [job_attrs(i, rng) for i in range(N_ADS)]
    # batches never seen before: one for the warm-up and one per timed run
    fresh = [
        [_new_text(job_attrs(N_ADS * (b + 1) + i, rng)) for i in range(N_ADS)] for b in range(runs + 1)
    ]
    return {
        "fresh": fresh,
        "new": [_new_text(a) for a in jobs],
        "old": ["\n".join(f"{k} = {v}" for k, v in a) + "\n" for a in jobs],
        "machines": [machine_text(i, rng) for i in range(N_MACHINES)],
    }


def bench_parse_new(lib: Any, inp: dict[str, list[str]]) -> Callable[[], int]:
    texts = inp["new"]

    def run() -> int:
        ctor = lib.ClassAd
        for t in texts:
            ctor(t)
        return len(texts)

    return run


def bench_parse_fresh(lib: Any, inp: dict[str, Any]) -> Callable[[], int]:
    batches = iter(inp["fresh"])

    def run() -> int:
        ctor = lib.ClassAd
        texts = next(batches)
        for t in texts:
            ctor(t)
        return len(texts)

    return run


def bench_parse_old(lib: Any, inp: dict[str, list[str]]) -> Callable[[], int]:
    texts, old = inp["old"], lib.ParserType.Old

    def run() -> int:
        parse = lib.parseOne
        for t in texts:
            parse(t, old)
        return len(texts)

    return run


def bench_eval(lib: Any, inp: dict[str, list[str]]) -> Callable[[], int]:
    job = lib.ClassAd(inp["new"][0])
    machine = lib.ClassAd(inp["machines"][0])
    tree = lib.ExprTree(REQUIREMENTS)
    if tree.eval(scope=job, target=machine) is not True:
        machine = lib.ClassAd(
            '[Arch = "X86_64"; OpSys = "LINUX"; Memory = 65536; Disk = 9000000; Cpus = 16]'
        )
    assert tree.eval(scope=job, target=machine) is True, "bench eval setup should match"
    n = 20_000

    def run() -> int:
        ev = tree.eval
        for _ in range(n):
            ev(scope=job, target=machine)
        return n

    return run


MATCH_HITS: dict[str, int] = {}


def bench_match(lib: Any, inp: dict[str, list[str]]) -> Callable[[], int]:
    job = lib.ClassAd(inp["new"][0])
    machines = [lib.ClassAd(t) for t in inp["machines"]]
    # a bench that matched differently would measure different work: check first
    MATCH_HITS[lib.__name__] = sum(1 for m in machines if job.symmetricMatch(m))

    def run() -> int:
        sm = job.symmetricMatch
        for m in machines:
            sm(m)
        return len(machines)

    return run


# (figure, unit, setup, target ratio or None for an informational figure)
FIGURES = [
    ("classad parse 40-attr job ad (new syntax)", "ads/s", bench_parse_new, 1.0),
    ("classad parse 40-attr job ad, first sight (new syntax)", "ads/s", bench_parse_fresh, None),
    ("classad parse 40-attr job ad (old syntax)", "ads/s", bench_parse_old, 1.0),
    ("classad eval job Requirements vs machine", "evals/s", bench_eval, 3.0),
    ("classad symmetricMatch job vs 10k machines", "matches/s", bench_match, 5.0),
]


def _rate(run: Callable[[], int]) -> float:
    t0 = time.perf_counter()
    n = run()
    return n / (time.perf_counter() - t0)


def measure(runs: int, *benches: Callable[[], int] | None) -> list[float]:
    """Median rate of each bench, their runs interleaved so both libraries see the same machine load."""
    live = [b for b in benches if b is not None]
    rates: list[list[float]] = [[] for _ in live]
    for _ in range(runs):
        for i, b in enumerate(live):
            rates[i].append(_rate(b))
    medians = iter([statistics.median(r) for r in rates])
    return [next(medians) if b is not None else float("nan") for b in benches]


def load_roost() -> tuple[Any, str | None]:
    try:
        import roost.classad as rc

        for name in ("ClassAd", "ExprTree", "parseOne", "ParserType"):
            getattr(rc, name)
        return rc, None
    except Exception as e:  # roost is written in parallel with this bench
        return None, f"{type(e).__name__}: {e}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="timed runs per figure (median reported)")
    ap.add_argument("--only", choices=["roost", "classad2"], help="measure one library only")
    args = ap.parse_args(argv)

    inp = make_inputs(args.runs)
    roost, why = (None, "skipped") if args.only == "classad2" else load_roost()
    if roost is None and args.only != "classad2":
        print(f"# roost.classad not usable, reference only ({why})", file=sys.stderr)
    met_all = True
    failed = False
    for figure, unit, setup, target in FIGURES:
        ref_run = setup(classad2, inp) if args.only != "roost" else None
        if ref_run is not None:
            ref_run()  # warm-up
        mine_s, ratio_s, verdict = "n/a", "n/a", "not measured"
        mine_run = None
        if roost is not None:
            try:
                mine_run = setup(roost, inp)
                mine_run()  # warm-up (compiles and caches), and a smoke test
            except Exception as e:
                verdict = f"FAILED ({type(e).__name__}: {str(e)[:120]})"
                mine_run = None
                met_all = False
                failed = True
        ref, mine = measure(args.runs, ref_run, mine_run)
        if mine_run is not None:
            ratio = mine / ref
            mine_s, ratio_s = f"{mine:.0f}", f"{ratio:.2f}"
            if ref_run is None:
                verdict = "not compared (no reference measured)"
            elif target is not None:
                verdict = "met" if ratio >= target else "NOT met"
                met_all &= ratio >= target
            else:
                verdict = "informational"
        print(f"{figure}: {mine_s} {unit} (reference: {ref:.0f}, ratio: {ratio_s})")
        goal = f"ratio >= {target:g}, {verdict}" if target is not None else f"none ({verdict})"
        print(f"  target: {goal}", flush=True)
    if len(set(MATCH_HITS.values())) > 1:
        print(f"# symmetricMatch hit counts DISAGREE: {MATCH_HITS}", file=sys.stderr)
        return 1
    print(f"# symmetricMatch hits out of {N_MACHINES}: {MATCH_HITS}", file=sys.stderr)
    # Exit status reports failures (roost raising, matches disagreeing), not missed targets:
    # `make bench` runs every bench in turn and must not stop at a slow figure.
    print(f"# all targets met: {met_all and roost is not None and args.only is None}", file=sys.stderr)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
