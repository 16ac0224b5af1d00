"""Attribute lookup, scopes, matchmaking context and cycles, checked against classad2."""

from __future__ import annotations

import random

import htcondor2  # noqa: F401  -- before classad2: HTCondor's default (non-strict) mode

# isort: split
import classad2
import pytest
from eval_harness import run

import roost.classad as rc
from roost.classad import evaluate as ev
from roost.classad.ast import AdExpr, AttrRef, BinaryOp, Literal

MY = "[a=1; n=[q=a; r=b]; s=.a]"
TG = "[b=2; a=5]"

CASES = [
    # (expression, scope, target)
    (".a", MY, TG), (".a", MY, None), ("s", MY, None), ("b", MY, TG), ("n.r", MY, TG),
    ("n.q", MY, TG), ("TARGET.b", "[a=1]", TG), ("other.b", "[a=1]", TG), ("ad.a", "[a=1]", TG),
    ("TARGET.c", "[a=1]", "[b=2; c = a + b]"), ("TARGET.c", "[a=1; b=10]", "[c = a + x; x = 3]"),
    ("TARGET.c", "[a=1; b=10]", "[c = a + y]"), ("TARGET.c", "[a=1; y=10]", "[c = a + y]"),
    ("TARGET.c", "[a=1; y=10]", "[a = 4; c = a + y]"),
    ("TARGET.c", "[a=1; y=10]", "[a = 4; c = TARGET.a + MY.a]"),
    ("c", "[y=10]", "[a = 4; c = TARGET.y + a]"), ("TARGET.d", "[target = [d = 7]]", "[d = 4]"),
    ("MY.d", "[my = [d = 7]; d = 3]", "[d = 4]"), ("MY.d", "[d = 3]", "[d = 4]"),
    ("MY.z", "[d = 3]", "[z = 4]"), ("TARGET.n.q", "[a = 3]", "[n = [q = a]; a = 9]"),
    ("TARGET.n.q", "[a = 3]", "[n = [q = a]]"), ("TARGET.n.q", "[a = 3]", "[n = [q = TARGET.a]]"),
    ("x.y", "[x = [y = target.a]]", "[a = 5]"), ("x.y", "[x = [y = other.a]]", "[a = 5]"),
    ("x.y", "[x = [y = ad.a]; a=6]", "[a = 5]"), ("x.y", "[x = [y = my.a]; a=6]", "[a = 5]"),
    ("x.y", "[x = [y = parent.a]; a=6]", "[a = 5]"), ("x.y", "[x = [y = b]; a=6]", "[b = 5]"),
    ("target", "[a=1]", None), ("TARGET.a", "[a=1]", None), ("TARGET.a", "[a=1]", "[a=1]"),
    ("CurrentTime > 0", "[a=1]", None), ("a", "[a = b; b = a]", "[b = 1]"),
    ("TARGET.a", "[a = 1; b = TARGET.a]", "[a = MY.b]"),
    ("TARGET.a", "[a = 1; b = TARGET.a]", "[a = TARGET.b]"),
    ("TARGET.a", "[a = 1; b = TARGET.a + 1]", "[a = TARGET.b + 1]"),
    ("b", "[a = 1; b = TARGET.a + 1]", "[a = TARGET.b + 1]"),
    ('eval("TARGET.x + y")', "[y = 2]", "[x = 1]"), ("unparse(a)", "[a = x + 1]", None),
    ("unparse(TARGET.a)", "[a = x + 1]", None), ("unparse(b)", "[a = x + 1]", None),
    ("{[a=1],[a=2]}[1].a", "[a=1]", None), ("l[0].a", "[l = {[a=1],[a=2]}]", None),
    ("l.a", "[l = {[a=x],[a=2]}; x = 5]", None), ('m["y"]', "[m = [y = x]; x = 4]", None),
    ('m["y"]', "[m = [y = parent.x]; x = 4]", None),
    ("evalInEachContext(a * 2, {[a=1],[a=2]})", None, None),
    ("countMatches(a > 1, {[a=1],[a=2]})", None, None),
    ("countMatches(req, gpus)", "[req = Capability > 7; gpus = {[Capability = 8], [Capability = 6]}]", None),
    ("evalInEachContext(req, gpus)", "[req = Capability > 7; gpus = {[Capability = 8], [Capability = 6]}]", None),
    # nested records and their parents
    ("[x=1; y=[z = x]].y.z", None, None), ("[x=1; y=[z = parent.x]].y.z", None, None),
    ("[x=1; y=[z = my.x]].y.z", None, None), ("[my = 5; a = my].a", None, None),
    ("[a=1;b=my.a].b", None, None), ("[target=[a=3]; b=target.a].b", None, None),
    ("[my=[a=3]; a=9; b=my.a].b", None, None), ("y.z", "[x=1; y=[x=2; z = .x]]", None),
    ("y.z", "[x=1; y=[x=2; z = toplevel.x]]", None), ("y.z", "[x=1; y=[x=2; z = self.x]]", None),
    ("[x=1; y=[x=2; z = .x]].y.z", None, None), ("toplevel", None, None), (".x", None, None),
    ("x", None, None),
    # cycles: the reference closing the cycle is UNDEFINED
    ("[a = a].a", None, None), ("[a = b; b = a + 1].a", None, None), ("[a = b; b = a + 1].b", None, None),
    ("[a = isUndefined(a) ? 1 : 2].a", None, None), ('[a = eval("a")].a', None, None),
    ("a", "[a = isUndefined(b) ? 10 : b; b = isUndefined(a) ? 20 : a]", None),
    ("a", "[a = b + c; b = c; c = 3]", None),
]


@pytest.mark.parametrize("text,scope,target", CASES, ids=[f"{c[0]}@{c[1]}@{c[2]}" for c in CASES])
def test_scoping(text: str, scope: str | None, target: str | None) -> None:
    assert run(rc, text, scope, target) == run(classad2, text, scope, target)


def chain(n: int) -> str:
    return "[" + "; ".join(f"a{i} = a{i + 1} + 1" for i in range(n)) + f"; a{n} = 0]"


def test_long_reference_chain_is_evaluated() -> None:
    """Deeper than the fast mode's depth counter: the precise mode finishes it."""
    ad = rc.ClassAd(chain(150))
    assert ad.eval("a0") == 150
    assert classad2.ClassAd(chain(150)).eval("a0") == 150


def test_too_deep_chain_fails_like_htcondor() -> None:
    with pytest.raises(classad2.ClassAdException):
        classad2.ClassAd(chain(3000)).eval("a0")
    with pytest.raises(rc.ClassAdException):
        rc.ClassAd(chain(3000)).eval("a0")


def test_long_cycle_is_undefined_without_blowing_the_stack() -> None:
    n = 120
    text = "[" + "; ".join(f"a{i} = a{(i + 1) % n} + 1" for i in range(n)) + "]"
    assert rc.ClassAd(text).eval("a0") is rc.Value.Undefined
    assert classad2.ClassAd(text).eval("a0") is classad2.Value.Undefined


def test_fast_mode_state_is_restored_after_errors() -> None:
    ad = rc.ClassAd("[a = a; b = 1 + 2]")
    for _ in range(3):
        assert ad.eval("a") is rc.Value.Undefined
    assert getattr(ev._local, "stack", None) is None
    assert ad.eval("b") == 3


def test_shared_nodes_in_two_ads_are_not_a_cycle() -> None:
    """The parser caches trees by text, so two ads can hold the same node object."""
    shared = BinaryOp("+", AttrRef("x", base=AttrRef("TARGET")), Literal(1))
    job = rc.ClassAd(AdExpr((("x", shared),)))
    machine = rc.ClassAd(AdExpr((("x", shared),)))
    # job.x = machine.x + 1 = (job.x + 1) + 1: a real cycle, UNDEFINED
    assert ev.eval_attr(job, "x", machine) is rc.Value.Undefined
    ok = rc.ClassAd(AdExpr((("y", shared),)))
    other = rc.ClassAd("[x = 5]")
    assert ev.eval_attr(ok, "y", other) == 6


def test_internal_api() -> None:
    job = rc.ClassAd("[RequestMemory = 2048; Requirements = TARGET.Memory >= RequestMemory]")
    machine = rc.ClassAd("[Memory = 4096; Requirements = TARGET.RequestMemory < 4000]")
    assert ev.eval_attr(job, "requirements", machine) is True
    assert ev.eval_attr(job, "requirements") is rc.Value.Undefined
    assert ev.eval_attr(job, "nosuch", machine) is rc.Value.Undefined
    assert ev.matches(job, machine) and ev.matches(machine, job)
    assert ev.symmetric_match(job, machine)
    machine["Memory"] = 1024
    assert not ev.symmetric_match(job, machine)
    assert ev.evaluate(job.lookup("RequestMemory").node, job) == 2048


def _pool(rng: random.Random) -> tuple[list[str], list[str]]:
    jobs, machines = [], []
    for _ in range(12):
        mem = rng.choice(["1024", "4096", "ifThenElse(MemoryUsage =!= undefined, MemoryUsage, 2048)"])
        usage = rng.choice(["", "MemoryUsage = 3000;", "MemoryUsage = undefined;"])
        req = rng.choice([
            'TARGET.Arch == "X86_64" && TARGET.Memory >= RequestMemory',
            "TARGET.Memory >= RequestMemory && (TARGET.HasGPU ?: false) == false",
            'Memory >= RequestMemory && OpSys == "linux"',  # bare names fall back to the target
            "TARGET.Cpus >= RequestCpus || TARGET.Owner =?= undefined",
        ])
        jobs.append(
            f'[Owner = "{rng.choice(["alice", "bob"])}"; RequestCpus = {rng.randint(1, 4)}; '
            f"RequestMemory = {mem}; {usage} Requirements = {req}; Rank = TARGET.Memory]"
        )
    for _ in range(40):
        start = rng.choice([
            'TARGET.Owner != "bob" && TARGET.RequestMemory <= Memory',
            "KeyboardIdle > 300 || TARGET.RequestCpus <= 1",
            "MY.Memory >= TARGET.RequestMemory && isUndefined(TARGET.Nope)",
            "true",
            "undefined",
        ])
        gpu = rng.choice(["", "HasGPU = true;", "HasGPU = false;"])
        machines.append(
            f'[Arch = "{rng.choice(["X86_64", "x86_64", "aarch64"])}"; OpSys = "LINUX"; '
            f"Memory = {rng.choice([1024, 2048, 8192])}; Cpus = {rng.randint(1, 8)}; "
            f"KeyboardIdle = {rng.randint(0, 900)}; {gpu} Start = {start}; Requirements = START]"
        )
    return jobs, machines


def test_symmetric_match_over_a_pool_agrees_with_classad2() -> None:
    jobs, machines = _pool(random.Random(7))
    ref_j = [classad2.ClassAd(t) for t in jobs]
    ref_m = [classad2.ClassAd(t) for t in machines]
    our_j = [rc.ClassAd(t) for t in jobs]
    our_m = [rc.ClassAd(t) for t in machines]
    hits = 0
    for jt, rj, oj in zip(jobs, ref_j, our_j):
        for mt, rm, om in zip(machines, ref_m, our_m):
            want = rj.symmetricMatch(rm)
            hits += want
            assert oj.symmetricMatch(om) == want, (jt, mt)
            assert om.matches(oj) == rm.matches(rj), (jt, mt)
            assert run(rc, "Requirements", jt, mt) == run(classad2, "Requirements", jt, mt)
    assert 0 < hits < len(jobs) * len(machines)  # the pool exercises both outcomes


def test_failed_evaluation_is_error_or_no_match_in_the_internal_api() -> None:
    deep = rc.ClassAd(chain(3000))
    assert ev.eval_attr(deep, "a0") is rc.Value.Error
    deep["Requirements"] = rc.ExprTree("a0 > 0")
    assert ev.matches(deep, rc.ClassAd("[]")) is False
    with pytest.raises(ev.EvaluationFailed):
        ev.evaluate(deep.lookup("a0").node, deep)


def test_evaluation_from_several_threads() -> None:
    import threading

    n = 120
    cyclic = "[" + "; ".join(f"a{i} = a{(i + 1) % n} + 1" for i in range(n)) + "]"
    errors: list[str] = []

    def work(k: int) -> None:
        for j in range(20):
            ad = rc.ClassAd(cyclic) if (j + k) % 2 else rc.ClassAd(chain(100))
            want = rc.Value.Undefined if (j + k) % 2 else 100
            got = ad.eval("a0")
            if got is not want and got != want:
                errors.append(f"thread {k}: {got!r}")
            expr = rc.ExprTree(f"TARGET.x + {k * 1000 + j}")  # compiled concurrently
            if expr.eval(rc.ClassAd("[]"), rc.ClassAd("[x = 1]")) != k * 1000 + j + 1:
                errors.append(f"thread {k}: compiled code mixed up")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
