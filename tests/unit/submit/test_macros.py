"""Macro expansion, checked against HTCondor's own submit parser (htcondor2.Submit)."""

from __future__ import annotations

import pytest

from roost.submit import SubmitError, parse_submit
from roost.submit.macros import Expander, probe_template

htcondor2 = pytest.importorskip("htcondor2")

DEFS = """
n = 7
p = /x/y/z.tar.gz
lst = x,y,z
a = $(n)-$(n)
nested = $(a)/$(p)
"""

CASES = [
    "$(n)",
    "$(undefined_thing:dflt)",
    "$(n:5)",
    "$$(Memory) and $$([Memory * 2])",
    "$INT(n,%03d)",
    "$INT(n)",
    "$INT(2.9)",
    "$REAL(n)",
    "$REAL(2.5*2)",
    "$REAL(n,%.2f)",
    "$Fpn(/x/y/z.tar.gz)",
    "$Fx(p) $Fb(p) $Fd(p) $Fq(a b)",
    "$Fn(p) $Fdb(p) $Fnx(p)",
    "$Fddb(/a/b/c/d.txt)",
    "$Fqn(/a/b/d.txt)",
    "$Fqa(/a/b/d.txt)",
    "$Fp(p) $Fpb(p)",
    "$BASENAME(/a/b/d.tar.gz, .tar.gz)",
    "$CHOICE(2, x, y, z)",
    "$CHOICE(1, lst)",
    "$(DOLLAR)(x)",
    "$(  n  )",
    "$(n)$(n)$",
    "$(nested)",
    "$ENV(NOPE_NOT_SET_ANYWHERE:fallback)",
    "$ENV(NOPE_NOT_SET_ANYWHERE)",
    "$RANDOM_INTEGER(5,5)",
    "plain text # not a comment",
]


@pytest.mark.parametrize("value", CASES)
def test_expansion_matches_htcondor(value: str) -> None:
    text = DEFS + f"v = {value}\nqueue\n"
    theirs = htcondor2.Submit(text)
    try:
        expected = theirs.expand("v")
    except KeyError:  # htcondor2 reports an empty expansion as a missing key
        expected = ""
    desc = parse_submit(text, cwd="/tmp", env={})
    block = desc.blocks[0]
    exp = Expander(block.macros, env={}, cwd="/tmp")
    assert exp.lookup("v") == expected


def test_self_reference_is_an_error_not_a_hang() -> None:
    desc = parse_submit("x = $(y)\ny = $(x)\nexecutable = /bin/true\narguments = $(x)\nqueue\n", cwd="/tmp", env={})
    with pytest.raises(SubmitError, match="refers to itself"):
        desc.expand()


def test_env_reads_the_given_environment_only() -> None:
    exp = Expander({}, env={"HOME": "/home/u"})
    assert exp.expand("$ENV(HOME)/x") == "/home/u/x"


def test_probe_marks_live_and_complex_values() -> None:
    names = ["process", "item"]
    exp = Expander({"a": "out.$(Process)", "b": "$INT(Process,%03d)", "c": "fixed"})
    _, t, live = probe_template("$(a)", exp, names)
    assert live and t is not None and t.render({"process": "4", "item": ""}) == "out.4"
    _, t, live = probe_template("$(b)", exp, names)
    assert live and t is None
    probe, t, live = probe_template("$(c)", exp, names)
    assert not live and probe == "fixed"
