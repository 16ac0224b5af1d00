"""Descriptions condor_submit refuses, refused the same way: one line naming the file,
the line and the problem. What HTCondor says for each (htcondor 24's Submit.jobs(), the
same submit code as condor_submit 24/25) is in the comment beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from roost.submit import SubmitError, parse_submit
from roost.submit.reading import PathChecks, file_size


def expand(text: str, cwd: Path | str = "/tmp", **kw):  # noqa: ANN003, ANN201
    desc = parse_submit(text, file="job.sub", cwd=str(cwd), env={}, **kw)
    return desc, desc.expand(cluster_id=1, qdate=1, owner="alice")


@pytest.mark.parametrize(("text", "line", "why"), [
    # "Invalid Queue count expression"
    ("executable = /bin/true\nqueue abc\n", 2, "queue abc: invalid queue count expression"),
    ("executable = /bin/true\nqueue 2 abc\n", 2, "queue 2 abc: invalid queue count expression"),
    ("executable = /bin/true\nqueue 3000000000\n", 2, "out of range"),
    # "Unterminated double-quote."
    ('executable = /bin/true\narguments = "a b\nqueue\n', 2, 'arguments: unterminated double quote in: "a b'),
    ('executable = /bin/true\nenvironment = "A=1 B=2\nqueue\n', 2, "environment: unterminated double quote"),
    ('executable = /bin/true\nenv = "A=1\nqueue\n', 2, "env: unterminated double quote"),
    # "Unbalanced quote starting here: 'b c"
    ("executable = /bin/true\narguments = \"a 'b c\"\nqueue\n", 2, "arguments: unterminated single quote"),
    ("executable = /bin/true\nenvironment = \"A='b c\"\nqueue\n", 2, "environment: unterminated single quote"),
    # "Found illegal unescaped double-quote: "b c"
    ('executable = /bin/true\narguments = a "b c\nqueue\n', 2,
     'arguments: unescaped double quote in old-syntax arguments: "b c'),
    # "Unexpected characters following double-quote."
    ('executable = /bin/true\narguments = "a b" c\nqueue\n', 2, "arguments: unexpected text after the closing"),
    # "Expecting double-quoted input string (V2 format)."
    ("executable = /bin/true\narguments2 = a b\nqueue\n", 2, "arguments2: expected the new syntax"),
    ("executable = /bin/true\nenvironment2 = A=1\nqueue\n", 2, "environment2: expected the new syntax"),
    # "no matches for pattern(s): '*.nomatch' "
    ("executable = /bin/true\nsubmit_fail_empty_matches = true\nqueue matching *.nomatch\n", 3,
     "queue matching: no matches for pattern(s): '*.nomatch'"),
])
def test_refused_with_file_and_line(text: str, line: int, why: str) -> None:
    with pytest.raises(SubmitError) as e:
        expand(text)
    msg = str(e.value)
    assert msg.startswith(f"job.sub:{line}: "), msg
    assert why in msg, msg
    assert "\n" not in msg


def test_escaped_quotes_in_old_syntax_arguments_are_literal() -> None:
    # Args "a \"b\" c" in HTCondor's ad
    _, got = expand('executable = /bin/true\narguments = a \\"b\\" c\nqueue\n')
    assert got[0].proc_ad(0)["Args"] == 'a "b" c'
    _, got = expand('executable = /bin/true\narguments =   "a b"  \nqueue\n')  # blanks around the quotes
    assert got[0].proc_ad(0)["Arguments"] == "a b"  # two words, as HTCondor's "a b"


def test_a_count_expression_still_counts() -> None:
    _, got = expand("executable = /bin/true\nN = 3\nqueue $(N) * 2\n")
    assert len(got[0]) == 6


def test_matching_nothing_queues_nothing_and_warns(tmp_path: Path) -> None:
    # HTCondor: no error, zero jobs, 'has only empty "queue" commands -- no jobs queued'
    desc, got = expand("executable = /bin/true\nqueue matching *.nomatch\n", tmp_path)
    assert got == []
    text = [str(w) for w in desc.warnings]
    assert "job.sub:2: WARNING: '*.nomatch' does not match any files" in text
    assert any('has only empty "queue" commands -- no jobs queued' in w for w in text)


def test_an_empty_pattern_beside_one_that_matches(tmp_path: Path) -> None:
    (tmp_path / "a.dat").write_text("x")
    desc, got = expand("executable = /bin/true\narguments = $(Item)\nqueue matching *.nomatch *.dat\n", tmp_path)
    assert [ad["Args"] for ad in got[0].procs()] == ["a.dat"]
    assert any("'*.nomatch' does not match any files" in str(w) for w in got[0].warnings)
    _, got = expand("executable = /bin/true\nsubmit_warn_empty_matches = false\nqueue matching *.nomatch *.dat\n",
                    tmp_path)
    assert not any("does not match" in str(w) for w in got[0].warnings)


def test_an_initialdir_that_does_not_exist(tmp_path: Path) -> None:
    # "No such directory: <path>", checked for every proc's own initialdir
    (tmp_path / "run0").mkdir()
    (tmp_path / "run1").mkdir()
    checks = {"file_size": file_size, "check_path": PathChecks()}
    _, got = expand("executable = /bin/true\ninitialdir = run$(Process)\nqueue 2\n", tmp_path, **checks)
    assert [ad["Iwd"] for ad in got[0].procs()] == [f"{tmp_path}/run0", f"{tmp_path}/run1"]
    with pytest.raises(SubmitError) as e:
        expand("executable = /bin/true\ninitialdir = run$(Process)\nqueue 3\n", tmp_path, **checks)
    assert str(e.value) == f"job.sub:2: initialdir: {tmp_path}/run2: no such directory"
    (tmp_path / "file").write_text("x")
    with pytest.raises(SubmitError, match="not a directory"):
        expand("executable = /bin/true\n\niwd = file\nskip_filechecks = true\nqueue\n", tmp_path, **checks)
    # a pure parse looks at no file system
    expand("executable = /bin/true\ninitialdir = nowhere\nqueue\n", tmp_path)
