"""`roost classad match|eval|convert`, run the way a user runs them."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import htcondor2  # noqa: F401  -- must precede classad2 (non-strict mode, as HTCondor's tools)

# isort: split
import classad2
import pytest

from roost.cli.classad_cmd import main

ROOT = Path(__file__).resolve().parents[3]
JOB = str(ROOT / "examples" / "classad" / "job.ad")
MACHINES = str(ROOT / "examples" / "classad" / "machines.ads")


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = main(list(argv), out=out, err=err)
    return rc, out.getvalue(), err.getvalue()


def _rows(output: str) -> dict[str, list[str]]:
    """Table rows keyed by machine name (columns split on two or more spaces)."""
    import re

    rows = {}
    for line in output.splitlines():
        if line.startswith("slot"):
            cells = re.split(r"\s{2,}", line.strip())
            rows[cells[0]] = cells
    return rows


# -- match ---------------------------------------------------------------------


def test_match_example_table() -> None:
    rc, out, err = run("match", JOB, MACHINES)
    assert rc == 0 and err == ""
    rows = _rows(out)
    assert len(rows) == 10
    assert out.splitlines()[-1] == "3 of 10 machines match; best: slot1@node10.example.org"
    names = list(rows)
    assert names[:3] == ["slot1@node10.example.org", "slot1@node07.example.org", "slot1@node01.example.org"]
    assert rows["slot1@node10.example.org"][1:] == ["yes", "-", "3000.0", "4"]
    assert rows["slot1@node07.example.org"][4] == "10"  # machine Rank prefers physics jobs
    assert rows["slot1@desktop04.example.org"][1:3] == ["no", "machine START false"]
    assert rows["slot1@gpu05.example.org"][1:3] == ["no", "machine START false"]
    assert rows["slot1@arm03.example.org"][1:3] == ["no", "job Requirements false"]
    assert rows["slot1@legacy09.example.org"][1:3] == ["no", "job Requirements undefined"]
    why = out.split("Why not:\n")[1]
    assert '  slot1@arm03.example.org: job Requirements false: TARGET.Arch == "X86_64" is false\n' in why
    assert "  slot1@legacy09.example.org: job Requirements undefined: TARGET.HasFileTransfer is undefined\n" in why
    assert "  slot1@desktop04.example.org: machine START false: KeyboardIdle > 15 * 60 is false\n" in why
    assert "gpu05" not in why  # its START is not a conjunction: nothing more to say


def test_failing_clause_prefers_the_false_one(tmp_path: Path) -> None:
    job = tmp_path / "job.ad"
    job.write_text("Requirements = (TARGET.Missing > 1) && (TARGET.Memory > 100) && true\n")
    machines = tmp_path / "m.ads"
    machines.write_text('Name = "m"\nMemory = 50\nSTART = true\n')
    _, out, _ = run("match", str(job), str(machines))
    assert "  m: job Requirements false: TARGET.Memory > 100 is false\n" in out


def test_match_agrees_with_classad2_symmetric_match() -> None:
    job = classad2.parseOne(open(JOB).read())
    machines = list(classad2.parseAds(open(MACHINES).read()))
    _, out, _ = run("match", JOB, MACHINES)
    rows = _rows(out)
    for m in machines:
        assert (rows[m["Name"]][1] == "yes") == job.symmetricMatch(m), m["Name"]
        want_rank = classad2.ExprTree("Rank").eval(job, m)
        assert float(rows[m["Name"]][3]) == pytest.approx(want_rank)


def test_match_json() -> None:
    rc, out, _ = run("match", JOB, MACHINES, "-json")
    doc = json.loads(out)
    assert rc == 0 and doc["matching"] == 3 and doc["total"] == 10
    assert doc["best"] == "slot1@node10.example.org"
    arm = next(m for m in doc["machines"] if m["Name"] == "slot1@arm03.example.org")
    assert arm["FailingClauses"] == ['TARGET.Arch == "X86_64" is false']
    gpu = next(m for m in doc["machines"] if m["Name"] == "slot1@gpu05.example.org")
    assert gpu == {
        "Name": "slot1@gpu05.example.org", "Matches": False, "RejectedBy": ["machine START false"],
        "FailingClauses": [], "JobRank": 3300.0, "MachineRank": None,
    }  # fmt: skip


def test_match_new_format_and_start_only_machines(tmp_path: Path) -> None:
    job = tmp_path / "job.ad"
    job.write_text('[ Owner = "bob"; Requirements = TARGET.Memory > 100; Rank = TARGET.Memory ]\n')
    machines = tmp_path / "m.ads"
    machines.write_text(
        '[ Name = "a"; Memory = 50; START = true ]\n'
        '[ Name = "b"; Memory = 200; START = TARGET.Owner == "bob" ]\n'
        '[ Name = "c"; Memory = 400; START = false ]\n'
        '[ Memory = 300 ]\n'
    )
    rc, out, _ = run("match", str(job), str(machines))
    assert rc == 0
    assert out.splitlines()[-1] == "1 of 4 machines match; best: b"
    lines = [line.split()[0] for line in out.splitlines()[3:7]]  # header, blank, column titles
    assert lines == ["b", "c", "ad", "a"]  # the match first, then the rest by job Rank
    assert "machine START false" in out and "machine has no Requirements or START" in out


def test_match_machines_from_condor_status_json(tmp_path: Path) -> None:
    _, as_json, _ = run("convert", "-json", MACHINES)
    path = tmp_path / "machines.json"
    path.write_text(as_json)
    rc, out, _ = run("match", JOB, str(path))
    assert rc == 0 and out.splitlines()[-1] == "3 of 10 machines match; best: slot1@node10.example.org"


def test_match_no_machine_matches(tmp_path: Path) -> None:
    job = tmp_path / "job.ad"
    job.write_text("Requirements = false\n")
    rc, out, _ = run("match", str(job), MACHINES)
    assert rc == 0 and out.splitlines()[-1] == "0 of 10 machines match"


def test_match_bad_machine_file_names_file_line_and_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ads"
    bad.write_text('Name = "a"\nMemory = 10\n\nName = "b"\nMemory = (20 +\n')
    rc, out, err = run("match", JOB, str(bad))
    assert rc == 1 and out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"roost classad: {bad}:5:")
    assert "expected" in err


def test_match_missing_file() -> None:
    rc, _, err = run("match", "/nonexistent/job.ad", MACHINES)
    assert rc == 1 and err == "roost classad: cannot read /nonexistent/job.ad: No such file or directory\n"


def test_match_usage_errors() -> None:
    assert run("match", JOB)[0] == 2
    rc, _, err = run("match", JOB, MACHINES, "-bogus")
    assert rc == 2 and "unknown option -bogus" in err


# -- eval ----------------------------------------------------------------------


def test_eval_expressions() -> None:
    rc, out, _ = run("eval", "1 + 2", '"a" + 1', 'strcat("x", "y")', "{1, 2.5}", "[a = 1; b = a + 1].b", "undefined")
    assert rc == 0
    assert out.splitlines() == ["3", "error", '"xy"', "{ 1,2.500000000000000E+00 }", "2", "undefined"]


def test_eval_with_assignments_and_ad_file() -> None:
    rc, out, _ = run("eval", "x = 5", "y = x * 2", "y + 1", "x == 5")
    assert out.splitlines() == ["11", "true"]
    rc, out, _ = run("eval", "-file", JOB, "RequestMemory / 1024", "Owner", "RequestCpus * 1.5")
    assert rc == 0 and out.splitlines() == ["8", '"alice"', "6.0"]


def test_eval_with_target() -> None:
    rc, out, _ = run("eval", "-file", JOB, "-target", MACHINES, "Requirements", "Rank", "TARGET.Name")
    assert rc == 0 and out.splitlines() == ["true", "1950.0", '"slot1@node01.example.org"']


def test_eval_bad_expression() -> None:
    rc, out, err = run("eval", "1 +")
    assert rc == 1 and out == "" and err.startswith("roost classad: in argument '1 +': column")


# -- convert -------------------------------------------------------------------


def test_convert_to_json_is_printjson_of_each_ad() -> None:
    rc, out, _ = run("convert", "-json", MACHINES)
    assert rc == 0
    ads = json.loads(out)
    assert len(ads) == 10 and ads[0]["Name"] == "slot1@node01.example.org"
    first = out.split("\n,\n")[0].removeprefix("[\n")
    from roost.classad.adstream import parseNext

    ours = parseNext(open(MACHINES).read())
    assert first == ours.printJson()


@pytest.mark.parametrize("fmt", ["-json", "-jsonl", "-old", "-new"])
def test_convert_round_trips(fmt: str, tmp_path: Path) -> None:
    rc, out, _ = run("convert", fmt, MACHINES)
    assert rc == 0
    path = tmp_path / "converted"
    path.write_text(out)
    rc, again, _ = run("convert", "-old", str(path))
    assert again == run("convert", "-old", MACHINES)[1]


def test_convert_old_output_is_what_classad2_reads() -> None:
    _, out, _ = run("convert", "-old", MACHINES)
    ref = list(classad2.parseAds(out))
    assert [a["Name"] for a in ref] == [a["Name"] for a in classad2.parseAds(open(MACHINES).read())]


def test_convert_reads_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("A = 1\n\nB = 2\n"))
    assert run("convert", "-new", "-") == (0, "[ A = 1 ]\n[ B = 2 ]\n", "")


# -- the command as installed --------------------------------------------------


def test_help_and_unknown_command() -> None:
    rc, out, _ = run("-help")
    assert rc == 0 and "match JOB.ad MACHINES.ads" in out
    assert run()[0] == 2
    rc, _, err = run("frobnicate")
    assert rc == 2 and "unknown command 'frobnicate'" in err


def test_roost_classad_match_as_a_process() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.run(
        [sys.executable, "-m", "roost.cli.main", "classad", "match", JOB, MACHINES],
        capture_output=True, text=True, env=env, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "3 of 10 machines match; best: slot1@node10.example.org"
