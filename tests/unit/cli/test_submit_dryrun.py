"""condor_submit -dry-run's listing, and -format's printf, from pure parts."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from roost.cli import printf, submit_dryrun
from roost.submit.reading import parse_text

SUB = "executable = /bin/echo\narguments = $(Process) $(x)\noutput = o.$(Process)\nqueue x in (a, b)\n"


def _listing(text: str) -> tuple[str, str]:
    clusters = parse_text(text, file="t.sub", cwd="/tmp", overrides={}, append=[]).expand(
        cluster_id=7, qdate=1000, owner="alice")
    out, ads = io.StringIO(), io.StringIO()
    submit_dryrun.write(clusters, out, ads)
    return out.getvalue(), ads.getvalue()


def test_stdout_says_dry_run_with_a_dot_per_proc() -> None:
    out, _ = _listing(SUB)
    assert out == "Dry-Run job(s)..\n2 job(s) dry-run to cluster 7.\n"


def test_listing_is_the_cluster_ad_then_each_procs_own_attributes() -> None:
    _, ads = _listing(SUB)
    assert ads.startswith("\nClusterId=7\n")  # every proc starts with an empty line
    procs = ads[1:].split("\n\n")
    first = procs[0].splitlines()
    assert first[0] == "ClusterId=7"
    assert 'Cmd="/bin/echo"' in first and 'Owner="alice"' in first and "QDate=1000" in first
    names = [ln.partition("=")[0] for ln in first[1:first.index("ProcId=0")]]
    assert names == sorted(names, key=str.lower) and "Args" not in names  # Args differs per proc
    assert first[first.index("ProcId=0"):] == ["ProcId=0", "JobStatus=1", 'Args="0 a"', 'Out="o.0"']
    assert procs[1].splitlines() == ["ProcId=1", "JobStatus=1", 'Args="1 b"', 'Out="o.1"']


def test_single_proc_keeps_everything_in_the_cluster_ad_and_expressions_as_text() -> None:
    _, ads = _listing("executable = /bin/true\nrequirements = Memory > 2 && Cpus >= 1\nhold = true\nqueue\n")
    lines = ads.splitlines()
    assert lines[-2:] == ["ProcId=0", "JobStatus=5"]
    assert "Requirements=" in ads and any(ln.startswith("Requirements=") and "Memory > 2" in ln for ln in lines)


def test_format_prints_each_conversion_per_ad() -> None:
    ads = [{"Name": "a", "Cpus": 2, "Load": 0.5}, {"Name": "b", "Cpus": 4}]
    pairs = [("%s:", "Name"), ("%d ", "Cpus * 2"), ("%4.1f\\n", "Load")]
    # a value that does not fit its conversion (b has no Load) prints nothing, its text
    # included, as HTCondor's print mask does (more in test_printf_format.py)
    assert printf.text(pairs, ads) == "a:4  0.5\nb:8 "
    assert printf.text([("%v|", "Name"), ("%V\\n", "Name")], ads[:1]) == 'a|"a"\n'
    assert printf.text([("[%s]", "Missing")], ads[:1]) == ""


QUEUE_FORMS = ["x, y from items.txt", "x in (a, b, c)", "x matching files *.dat", "2 x in (p, q)"]


@pytest.mark.parametrize("queue", QUEUE_FORMS)
def test_listing_agrees_with_htcondor2_submit(queue: str, tmp_path: Path) -> None:
    """Differential: the procs the listing shows (count, each one's arguments and output)
    against what HTCondor's own ``htcondor2.Submit`` expands for the same text (its
    ``itemdata`` and ``expand``; it cannot make job ads without a schedd)."""
    htcondor2 = pytest.importorskip("htcondor2")
    (tmp_path / "items.txt").write_text("a 1\nb 2\nc 3\n")
    for name in ("one.dat", "two.dat"):
        (tmp_path / name).write_text("")
    text = f'executable = /bin/echo\narguments = "$(Process) $(x) $(y)"\noutput = o.$(x).$(Step)\nqueue {queue}\n'
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        sub = htcondor2.Submit(text)
        rows = list(sub.itemdata() or [{}])
        count = int(queue.split()[0]) if queue[0].isdigit() else 1
        want = []
        for i, (row, step) in enumerate((r, s) for r in rows for s in range(count)):
            one = htcondor2.Submit(dict(sub))
            for k, v in {**row, "Process": str(i), "Step": str(step)}.items():
                one[k] = v
            # the arguments as HTCondor's job ad holds them: the words, one space apart
            want.append((" ".join(one.expand("arguments").strip('"').split()), one.expand("output")))
        clusters = parse_text(text, file="t.sub", cwd=str(tmp_path), overrides={}, append=[]).expand(
            cluster_id=1, qdate=1000, owner="alice")
    finally:
        os.chdir(old)
    out, ads = io.StringIO(), io.StringIO()
    submit_dryrun.write(clusters, out, ads)
    got = []
    for proc in ads.getvalue()[1:].split("\n\n"):
        attrs = dict(ln.split("=", 1) for ln in proc.splitlines())
        got.append((json.loads(attrs["Arguments"]), json.loads(attrs["Out"])))
    assert got == want
    assert out.getvalue() == f"Dry-Run job(s){'.' * len(want)}\n{len(want)} job(s) dry-run to cluster 1.\n"


def test_queue_option_and_its_conflict_with_the_files_queue(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from roost.cli import submit_cmd

    monkeypatch.chdir(tmp_path)
    for name in ("a.dat", "b.dat", "c.dat"):
        (tmp_path / name).write_text("")
    # -queue takes every word up to the next option; with name=value pairs no submit file is read
    assert submit_cmd.main(["-dry-run", "-", "executable=/bin/echo", "arguments=$(f)", "-queue", "f", "matching",
                            "*.dat"]) == 0
    out = capsys.readouterr().out
    assert [ln for ln in out.splitlines() if ln.startswith("Args=")] == ['Args="a.dat"', 'Args="b.dat"',
                                                                        'Args="c.dat"']
    (tmp_path / "q.sub").write_text("executable = /bin/true\nqueue 2\n")
    assert submit_cmd.main(["-dry-run", "-", "q.sub", "-queue", "3"]) == 1
    assert "-queue argument conflicts with queue statement" in capsys.readouterr().err
    assert submit_cmd.main(["-dry-run", "-", "-maxjobs", "1", "q.sub"]) == 1
    assert "exceed -maxjobs (1)" in capsys.readouterr().err


def test_terse_dry_run_prints_only_the_id_range(tmp_path: Path) -> None:
    clusters = parse_text(SUB, file="t.sub", cwd=str(tmp_path), overrides={}, append=[]).expand(
        cluster_id=3, qdate=1000, owner="alice")
    out, ads = io.StringIO(), io.StringIO()
    submit_dryrun.write(clusters, out, ads, terse=True)
    assert out.getvalue() == "3.0 - 3.1\n" and ads.getvalue().startswith("\nClusterId=3\n")


def test_condor_submit_flags_starting_with_a_are_not_read_as_append(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from roost.cli import submit_cmd

    (tmp_path / "noq.sub").write_text("executable = /bin/true\n")
    assert submit_cmd.main(["-allow-crlf-script", "-debug", "-dry-run", "-", str(tmp_path / "noq.sub"),
                            "-queue", "1"]) == 0
    assert "ClusterId=1" in capsys.readouterr().out
