"""condor_submit -spool's pure part: which names may enter a job's spool directory, what
is sent, how the ad is rewritten, and where fetched output goes back to."""

from __future__ import annotations

import pytest

from roost.core.spooling import (
    SpoolError,
    fetch_destination,
    input_names,
    input_plan,
    job_spool_dir,
    spool_edits,
    spool_name,
)


@pytest.mark.parametrize("name", ["a", "a/b", "dir/sub/file.txt", "_spool0/x", "..a", "a..", ".hidden"])
def test_names_inside_the_directory_pass(name: str) -> None:
    assert spool_name(name) == name


@pytest.mark.parametrize("name", ["", "/etc/passwd", "..", "../x", "a/../../x", "a/..", "a//b", "./a", "a/.",
                                  "a/", "x\x00y", "a" * 256, "d/" * 2100 + "f", 3, None, ["a"]])
def test_names_that_could_leave_or_are_malformed_are_refused(name: object) -> None:
    with pytest.raises(SpoolError):
        spool_name(name)


def test_job_spool_dir_is_htcondors_layout() -> None:
    assert job_spool_dir("/s", 12345, 2) == "/s/2345/2/cluster12345.proc2.subproc0"


def _ad(**kw: object) -> dict[str, object]:
    ad: dict[str, object] = {"Iwd": "/home/a/work", "Cmd": "run.sh", "In": "in.txt",
                             "TransferInput": "data.txt, sub/dir/, /abs/file, http://x/y", "Out": "out.txt",
                             "Err": "/home/a/logs/err.txt"}
    ad.update(kw)
    return ad


def test_the_plan_sends_executable_stdin_and_inputs_but_not_urls() -> None:
    ad = _ad()
    plan = input_plan(ad.get, exists=lambda p: True)
    assert [(i.src, i.name, i.role) for i in plan] == [
        ("/home/a/work/run.sh", "run.sh", "executable"), ("/home/a/work/in.txt", "in.txt", "stdin"),
        ("/home/a/work/data.txt", "data.txt", ""), ("/home/a/work/sub/dir", "_spool1", ""),
        ("/abs/file", "file", "")]
    # transfer_executable = false (or a program only the execute host has) is not sent
    assert "run.sh" not in [i.name for i in input_plan(_ad(TransferExecutable=False).get, exists=lambda p: True)]
    assert "run.sh" not in [i.name for i in input_plan(ad.get, exists=lambda p: False)]


def test_a_plan_with_an_escaping_name_is_refused() -> None:
    with pytest.raises(SpoolError):
        input_plan(_ad(TransferInput="..").get, exists=lambda p: True)


def test_the_ad_points_into_the_spool_and_keeps_the_submitted_values() -> None:
    ad = _ad(TransferOutputRemaps="out.txt=/home/a/res/out.txt")
    edits = spool_edits(ad.get, "/s/1/0/cluster1.proc0.subproc0", {"run.sh", "in.txt", "data.txt", "_spool1", "file"})
    assert edits["Iwd"] == "/s/1/0/cluster1.proc0.subproc0" and edits["SUBMIT_Iwd"] == "/home/a/work"
    assert edits["Cmd"] == "/s/1/0/cluster1.proc0.subproc0/run.sh" and edits["SUBMIT_Cmd"] == "run.sh"
    assert edits["In"] == "in.txt"
    assert edits["TransferInput"] == "data.txt,_spool1/,file,http://x/y"
    assert "Out" not in edits  # relative: lands in the spool under its own name
    assert edits["Err"] == "err.txt" and edits["SUBMIT_Err"] == "/home/a/logs/err.txt"
    assert edits["TransferOutputRemaps"] == "" and edits["SUBMIT_TransferOutputRemaps"].startswith("out.txt=")
    spooled = dict(ad, **edits)
    assert input_names(spooled.get) == {"run.sh", "in.txt", "data.txt", "_spool1", "file"}


def test_an_executable_not_sent_stays_where_it_was() -> None:
    edits = spool_edits(_ad(TransferExecutable=False).get, "/s/d", set())
    assert edits["Cmd"] == "/home/a/work/run.sh"
    assert "Cmd" not in spool_edits(_ad(Cmd="/bin/true", TransferExecutable=False).get, "/s/d", set())


def test_fetched_output_goes_back_where_it_was_submitted() -> None:
    ad = _ad(TransferOutputRemaps="res.dat=results/r.dat")
    spooled = dict(ad, **spool_edits(ad.get, "/s/d", set()))
    get = spooled.get
    assert fetch_destination(get, "out.txt") == "/home/a/work/out.txt"
    assert fetch_destination(get, "err.txt") == "/home/a/logs/err.txt"
    assert fetch_destination(get, "res.dat") == "/home/a/work/results/r.dat"
    assert fetch_destination(get, "made/by/job.txt") == "/home/a/work/made/by/job.txt"
    for bad in ("../../etc/cron.d/x", "/etc/passwd", "a/../../b"):
        with pytest.raises(SpoolError):
            fetch_destination(get, bad)
