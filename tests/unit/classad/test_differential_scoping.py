"""Name resolution and matchmaking: MY., TARGET., PARENT., bare names, job/machine pairs."""

from __future__ import annotations

import re

from diff_harness import check_all, check_attr, check_match

JOB = """[
    MyType = "Job"; Owner = "alice"; ClusterId = 12; ProcId = 3;
    RequestCpus = 2; RequestMemory = 2048; RequestDisk = 100000; ImageSize = 1500;
    Memory = 1; Name = "job-name";
    Requirements = TARGET.Arch == "X86_64" && TARGET.OpSys == "LINUX" && TARGET.Memory >= RequestMemory
                   && TARGET.Disk >= RequestDisk && TARGET.Cpus >= RequestCpus;
    Rank = TARGET.KFlops / 1000 + TARGET.Memory
]"""

MACHINE = """[
    MyType = "Machine"; Name = "slot1@node7"; Arch = "X86_64"; OpSys = "LINUX";
    Memory = 4096; Disk = 500000; Cpus = 4; KFlops = 1200000; LoadAvg = 0.25;
    Start = TARGET.Owner != "mallory" && LoadAvg < 0.5;
    Requirements = START;
    Rank = TARGET.Owner == "alice" ? 10 : 0
]"""

REFS = [
    "Memory", "MY.Memory", "TARGET.Memory", "target.memory", "my.MEMORY", "Owner", "TARGET.Owner",
    "MY.Owner", "Arch", "TARGET.Arch", "Nope", "MY.Nope", "TARGET.Nope", "Requirements", "Rank",
    "TARGET.Requirements", "TARGET.Rank", "MY.Requirements", "TARGET.Start", "Start", "PARENT.Memory",
    "PARENT", "MY", "TARGET", "TARGET.TARGET.Memory", "MY.MY.Memory", "TARGET.MY.Memory",
    "MY.TARGET.Memory", ".Memory", "RequestMemory <= TARGET.Memory", "TARGET.Memory - Memory",
    "isUndefined(TARGET.Nope)", "TARGET.Name", "Name", "MY.Name",
]


def test_references_job_against_machine() -> None:
    check_all([(e, JOB, MACHINE) for e in REFS])


def test_references_machine_against_job() -> None:
    check_all([(e, MACHINE, JOB) for e in REFS])


def test_references_without_target() -> None:
    check_all([(e, JOB, None) for e in REFS] + [(e, None, None) for e in REFS])


def test_references_with_target_only() -> None:
    check_all([(e, None, MACHINE) for e in REFS])


def test_attribute_names_case_insensitive_and_shadowing() -> None:
    ad = "[MY = 5; TARGET = [x = 1]; Parent = 7; x = 2; Y = x * MY]"
    check_all([(e, ad, None) for e in ("MY", "TARGET", "Parent", "y", "MY.x", "TARGET.x", "PARENT", "X")])
    check_all([(e, ad, "[x = 3]") for e in ("MY.x", "TARGET.x", "TARGET", "MY", "y")])


def test_nested_record_scoping() -> None:
    ad = """[a = 1; b = 10;
             inner = [a = 2; c = a; d = b; e = parent.a; f = parent.parent.a; g = MY.a; h = TARGET.a];
             up = inner.c; viaparent = inner.e; deep = [x = [y = a]].x.y]"""
    check_all([(e, ad, "[a = 99]") for e in (
        "inner.c", "inner.d", "inner.e", "inner.f", "inner.g", "inner.h", "up", "viaparent", "deep",
        "inner", "inner.nope",
    )])


def test_classad_eval_attributes() -> None:
    for attr in ("Requirements", "Rank", "Memory", "RequestMemory", "nope", "owner"):
        check_attr(JOB, attr)
    for attr in ("Start", "Requirements", "Rank", "LoadAvg"):
        check_attr(MACHINE, attr)


def _variant(base: str, **changes: str) -> str:
    out = base
    for k, v in changes.items():
        out = re.sub(rf"\b{k} = [^;\]]*", f"{k} = {v}", out, count=1)
    return out


def test_match_pairs() -> None:
    pairs = [
        (JOB, MACHINE),
        (JOB, _variant(MACHINE, Memory="1024")),
        (JOB, _variant(MACHINE, Arch='"ARM64"')),
        (JOB, _variant(MACHINE, LoadAvg="0.9")),
        (_variant(JOB, Owner='"mallory"'), MACHINE),
        (JOB, _variant(MACHINE, Requirements="undefined")),
        (JOB, _variant(MACHINE, Requirements="error")),
        (JOB, _variant(MACHINE, Requirements='"yes"')),
        (JOB, _variant(MACHINE, Requirements="1")),
        (JOB, _variant(MACHINE, Requirements="0.0")),
        (JOB, _variant(MACHINE, Requirements="TARGET.NotThere")),
        (JOB, _variant(MACHINE, Requirements="TARGET.RequestMemory <= MY.Memory")),
        (JOB, _variant(MACHINE, Requirements="RequestMemory <= Memory")),  # bare names: MY first
        (_variant(JOB, Requirements="true"), "[Name = \"m\"]"),  # machine has no Requirements
        ("[Requirements = true]", "[Requirements = true]"),
        ("[]", "[]"),
        ("[Requirements = TARGET.x == MY.x; x = 1]", "[Requirements = TARGET.x == MY.x; x = 1]"),
        ("[Requirements = TARGET.x == MY.x; x = 1]", "[Requirements = TARGET.x == MY.x; x = 1.0]"),
        ("[Requirements = TARGET.x =?= MY.x; x = 1]", "[Requirements = TARGET.x =?= MY.x; x = 1.0]"),
        ("[Requirements = TARGET.s == \"ABC\"]", "[Requirements = true; s = \"abc\"]"),
        ("[Requirements = TARGET.s =?= \"ABC\"]", "[Requirements = true; s = \"abc\"]"),
        ("[Requirements = member(TARGET.Name, {\"a\", \"b\"})]", "[Requirements = true; Name = \"b\"]"),
        ("[Requirements = TARGET.Requirements]", "[Requirements = TARGET.Requirements]"),
        ("[Requirements = x; x = TARGET.y]", "[Requirements = true; y = true]"),
    ]
    check_all(pairs, check_match)


def _bench_module():  # the benchmark's realistic ad generators, so the bench measures agreed work
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "bench" / "classad_bench.py"
    spec = importlib.util.spec_from_file_location("classad_bench", path)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_realistic_jobs_against_realistic_machines() -> None:
    import random

    bench = _bench_module()
    rng = random.Random(7)
    jobs = ["[" + "; ".join(f"{k} = {v}" for k, v in bench.job_attrs(i, rng)) + "]" for i in range(6)]
    machines = [bench.machine_text(i, rng) for i in range(60)]
    check_all([(j, m) for j in jobs for m in machines], check_match)
    check_all([("TARGET.Rank", m, j) for j in jobs[:2] for m in machines[:20]])
    check_all([("Rank", j, m) for j in jobs[:2] for m in machines[:20]])
