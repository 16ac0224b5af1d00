"""classad_eval: HTCondor's own test cases for the tool, and each printed result checked
against what classad2 (HTCondor's bindings) evaluates for the same context."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from roost.cli.classad_eval_cmd import EvalError, evaluate

ROOT = Path(__file__).resolve().parents[3]

# (arguments, output) from HTCondor's src/condor_tests/test_classad_eval.py; {my} and
# {target} are files holding [ x = 7; z = 10; ] and [ x = 8; y = 9; ]
HTCONDOR_CASES = [
    (["1"], "[  ]\n1\n"),
    (["1 + 1"], "[  ]\n2\n"),
    (["x = 7", "x"], "[ x = 7 ]\n7\n"),
    (["x = y", "x"], "[ x = y ]\nundefined\n"),
    (["x = y", "y = 7", "x"], "[ x = y; y = 7 ]\n7\n"),
    (["[ x = y; y = 7; ]", "x"], "[ x = y; y = 7 ]\n7\n"),
    (["-quiet", "x = y", "y = 7", "x"], "7\n"),
    (["x = y", "x", "y = 7", "x"], "[ x = y ]\nundefined\n[ x = y; y = 7 ]\n7\n"),
    (["x = y", "x", "-quiet", "y = 7", "x"], "[ x = y ]\nundefined\n7\n"),
    (["-quiet", "-file", "{my}", "x"], "7\n"),
    (["-quiet", "-my-file", "{my}", "x"], "7\n"),
    (["-quiet", "-file", "{my}", "MY.x"], "7\n"),
    (["-quiet", "-my-file", "{my}", "TARGET.x"], "undefined\n"),
    (["-quiet", "-target-file", "{target}", "x"], "8\n"),
    (["-quiet", "-target-file", "{target}", "MY.x"], "undefined\n"),
    (["-quiet", "-target-file", "{target}", "TARGET.x"], "8\n"),
    (["-quiet", "-my-file", "{my}", "-target-file", "{target}", "x"], "7\n"),
    (["-quiet", "-my-file", "{my}", "-target-file", "{target}", "MY.x"], "7\n"),
    (["-quiet", "-my-file", "{my}", "-target-file", "{target}", "TARGET.x"], "8\n"),
    (["-quiet", "-my-file", "{my}", "-target-file", "{target}", "y"], "9\n"),
    (["-quiet", "-my-file", "{my}", "-target-file", "{target}", "z"], "10\n"),
]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "my.ad").write_text("[ x = 7; z = 10; ]\n")
    (tmp_path / "target.ad").write_text("[ x = 8; y = 9; ]\n")
    return {"my": str(tmp_path / "my.ad"), "target": str(tmp_path / "target.ad")}


@pytest.mark.parametrize(("args", "expected"), HTCONDOR_CASES)
def test_htcondor_cases(args: list[str], expected: str, files: dict[str, str]) -> None:
    out: list[str] = []
    assert evaluate([a.format(**files) for a in args], out) == 0
    assert "\n".join(out) + "\n" == expected


EXPRESSIONS = ["x", "z", "l", "r", "t", "s", 'strcat("foo", z)', "undefined", "error", "1/0",
               "ifThenElse(y, 1, 2)", "{ [a = 1; b = a + 1] }", "absTime(0)", "relTime(3600)", "y + 1",
               "x =?= undefined", 'regexps("o+", z, "0")', "size(l) * r", "member(2, l)",
               'TARGET.Memory > 1024 && MY.r < 2', "TARGET.Name", 'split("a b, c")', "-q",
               "int(r) == 1 ? \"one\" : \"other\"", "isUndefined(TARGET.nothing)"]


def test_results_as_classad2_evaluates(tmp_path: Path) -> None:
    classad2 = pytest.importorskip("classad2")
    pytest.importorskip("htcondor2")  # its import puts classad2 in HTCondor's default (non-strict) mode
    context = '[ x = y; z = "foo"; l = { 1, 2, 3 }; r = 1.5; t = TARGET.Memory; s = x + 1; q = 4 ]'
    target = '[ Memory = 2048; Name = "slot1@host" ]'
    (tmp_path / "slot.ad").write_text(target + "\n")
    out: list[str] = []
    assert evaluate([context, "-target-file", str(tmp_path / "slot.ad"), *EXPRESSIONS], out) == 0
    my, tgt = classad2.ClassAd(context), classad2.ClassAd(target)
    assert classad2.ClassAd(out[0]) == my  # the context, printed once before the first result
    assert out[1:] == [repr(classad2.ExprTree(e).simplify(my, tgt)) for e in EXPRESSIONS]


def test_old_syntax_file_and_assignments_without_spaces(tmp_path: Path) -> None:
    # condor_q -long's form, which HTCondor's tool cannot read; a=2 as in its man page
    (tmp_path / "job.ad").write_text('ClusterId = 12\nOwner = "alice"\nRequestMemory = 2048\n')
    out: list[str] = []
    assert evaluate(["-quiet", "-file", str(tmp_path / "job.ad"), "a=2", "RequestMemory*a", "Owner"], out) == 0
    assert out == ["4096", '"alice"']


def test_bad_input_names_the_problem(tmp_path: Path) -> None:
    with pytest.raises(EvalError, match=r"Unable to turn 'x \+' into a ClassAd or an expression: 1:4:"):
        evaluate(["x +"], [])
    (tmp_path / "bad.ad").write_text("A = 1\nB =\n")
    with pytest.raises(EvalError, match=r"bad.ad:2:4: expected an expression"):
        evaluate(["-file", str(tmp_path / "bad.ad"), "A"], [])
    with pytest.raises(EvalError, match=r"Unable to read file '.*nope.ad': No such file"):
        evaluate(["-file", str(tmp_path / "nope.ad")], [])
    assert evaluate(["-file"], []) == 255


def test_the_installed_name(tmp_path: Path) -> None:
    # bin/classad_eval: output on stdout, an error naming classad_eval and exit status 1
    ok = subprocess.run([sys.executable, str(ROOT / "bin" / "classad_eval"), "a = 2", "b = 2", "a + b"],
                        capture_output=True, text=True, check=False)
    assert (ok.returncode, ok.stdout) == (0, "[ a = 2; b = 2 ]\n4\n")
    bad = subprocess.run([sys.executable, str(ROOT / "bin" / "classad_eval"), "a = 2", "a +"],
                         capture_output=True, text=True, check=False)
    assert bad.returncode == 1 and bad.stdout == "[ a = 2 ]\n"
    assert bad.stderr.startswith("classad_eval: Unable to turn 'a +' into a ClassAd or an expression")
