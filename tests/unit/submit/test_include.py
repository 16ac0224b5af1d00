"""``include`` in all the forms of HTCondor's manual (submit description files and the
configuration's "Including Configuration from Elsewhere"). What htcondor 24's
``Submit`` did with the same files is in the comment beside each case."""

from __future__ import annotations

from pathlib import Path

import pytest

from roost.submit import SubmitError, parse_submit
from roost.submit.queue import CommandNotAllowed
from roost.submit.reading import parse_text


@pytest.fixture
def scripts(tmp_path: Path) -> Path:
    gen = tmp_path / "gen.sh"
    gen.write_text('#!/bin/sh\necho "arguments = from_script $1"\necho "+Foo = \\"$PWD\\""\n')
    fail = tmp_path / "fail.sh"
    fail.write_text('#!/bin/sh\necho "arguments = failing"\nexit 3\n')
    gen.chmod(0o755)
    fail.chmod(0o755)
    return tmp_path


def ad(text: str, cwd: Path) -> dict:
    desc = parse_text("executable = /bin/true\n" + text + "\nqueue\n", file="job.sub", cwd=str(cwd))
    return desc.expand()[0].proc_ad(0)


def test_a_command_ending_in_a_bar_is_run_in_the_submit_directory(scripts: Path) -> None:
    # Args "from_script x", Foo the submit directory: no shell, run where condor_submit runs
    a = ad("include : ./gen.sh x |", scripts)
    assert (a["Args"], a["Foo"]) == ("from_script x", str(scripts))
    assert ad("include command : ./gen.sh y", scripts)["Args"] == "from_script y"
    assert ad('include : "./gen.sh \'two words\'" |', scripts)["Args"] == "from_script two words"


def test_a_failing_command_still_has_its_output_read(scripts: Path) -> None:
    # condor_submit reads it and says nothing; roost warns
    desc = parse_text("executable = /bin/true\ninclude : ./fail.sh |\nqueue\n", file="job.sub", cwd=str(scripts))
    (c,) = desc.expand()
    assert c.proc_ad(0)["Args"] == "failing"
    assert any(str(w).startswith("job.sub:2: WARNING: include : ./fail.sh |: the command exited with status 3")
               for w in c.warnings)


def test_into_caches_the_output_of_a_command_that_succeeds(scripts: Path) -> None:
    assert ad("include command into cache.inc : ./gen.sh z", scripts)["Args"] == "from_script z"
    assert (scripts / "cache.inc").read_text().startswith("arguments = from_script z\n")
    (scripts / "cache.inc").write_text("arguments = from_cache\n")  # there: the command is not run again
    assert ad("include command into cache.inc : ./gen.sh z", scripts)["Args"] == "from_cache"
    # a failure is an error and leaves no cache; ifexist includes nothing
    with pytest.raises(SubmitError, match=r"job.sub:2: include command into c2.inc : ./fail.sh: .*exit code 3"):
        ad("include command into c2.inc : ./fail.sh", scripts)
    assert "Args" not in ad("include ifexist command into c3.inc : ./fail.sh", scripts)
    assert not (scripts / "c2.inc").exists() and not (scripts / "c3.inc").exists()


def test_ifexist_skips_a_missing_file_or_command(scripts: Path) -> None:
    assert ad("include ifexist : nothere.inc", scripts)["Arguments"] == ""
    assert ad("include ifexist : ./nosuchcmd |", scripts)["Arguments"] == ""
    with pytest.raises(SubmitError, match=r"^job.sub:2: include : nothere.inc: cannot read \(No such file"):
        ad("include : nothere.inc", scripts)
    with pytest.raises(SubmitError, match=r"^job.sub:2: include : ./nosuchcmd \|: not a valid command"):
        ad("include : ./nosuchcmd |", scripts)


def test_a_file_and_nested_includes(scripts: Path) -> None:
    (scripts / "inner.inc").write_text("request_cpus = 2\ninclude : ./gen.sh nested |\n")
    a = ad("INCLUDE:inner.inc", scripts)
    assert (a["RequestCpus"], a["Args"]) == (2, "from_script nested")


@pytest.mark.parametrize(("line", "why"), [
    ("include bogus : x", "unexpected keyword(s) 'bogus' after include"),
    ("include into c : x", "unexpected keyword(s) 'into c' after include"),
    ("include command into : x", "expected a file name after 'include command into'"),
    ("include : a | b", "not a valid command (a '|' may only end it)"),
])
def test_bad_include_lines(scripts: Path, line: str, why: str) -> None:
    with pytest.raises(SubmitError) as e:
        ad(line, scripts)
    assert str(e.value).startswith("job.sub:2: ") and why in str(e.value), str(e.value)


def test_the_pure_language_runs_no_command(scripts: Path) -> None:
    # the schedd parses without run_command: it answers SUBMIT_LOCALLY and the tool runs it
    for line in ("include : ./gen.sh x |", "include command into new.inc : ./gen.sh x"):
        with pytest.raises(CommandNotAllowed):
            parse_submit(f"executable = /bin/true\n{line}\nqueue\n", cwd=str(scripts), env={})
    (scripts / "made.inc").write_text("arguments = cached\n")  # a cache already made is only read
    desc = parse_submit("executable = /bin/true\ninclude command into made.inc : ./gen.sh\nqueue\n",
                        cwd=str(scripts), env={})
    assert desc.expand()[0].proc_ad(0)["Args"] == "cached"
