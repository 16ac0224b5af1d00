"""Queue item lists as condor_submit reads them (submit_utils.cpp: load_inline_q_foreach_items,
load_external_q_foreach_items, SubmitForeachArgs::split_item, SubmitStepFromQArgs::select_rowdata).

- in an item file (and ``from -`` and a command's output) every line is a row: blank
  lines and lines starting with ``#`` too; a line ending in ``\\`` continues;
- in an inline ``( ... )`` list, lines starting with ``#`` are comments, blank lines rows;
- an empty row changes no variable, so its proc repeats the previous row's values.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from roost.submit import SubmitError, parse_submit
from roost.submit.queue import CommandNotAllowed, item_lines, split_row
from roost.submit.reading import parse_text


def args_of(text: str, **kw) -> list[str]:  # noqa: ANN003
    desc = parse_submit("executable = /bin/echo\narguments = $(a)|$(b)\n" + text, cwd="/tmp", env={}, **kw)
    return [ad["Args"] for c in desc.expand() for ad in c.procs()]


@pytest.mark.parametrize(("row", "n", "fields"), [
    ("a b", 2, ["a", "b"]),
    ("  a ,  b c  ", 2, ["a", ",  b c"]),  # split at the first blank: the comma stays (as condor)
    ("a,,b", 2, ["a", ",b"]),
    ("a", 3, ["a", "", ""]),
    ("a,,b", 3, ["a", "", "b"]),
    ("a , b", 3, ["a", "", "b"]),
    ("one two three", 1, ["one two three"]),
    ("x\x1fy z\x1fw", 3, ["x", "y z", "w"]),
    ("   ", 2, []),
])
def test_rows_split_like_condor(row: str, n: int, fields: list[str]) -> None:
    assert split_row(row, n) == fields


def test_item_file_rows_keep_blank_and_hash_lines(tmp_path: Path) -> None:
    (tmp_path / "items.txt").write_text("a1 b1\n\n# c\n  \n a2 b2 \\\n   more\n")
    assert item_lines((tmp_path / "items.txt").read_text()) == ["a1 b1", "", "# c", "", "a2 b2 more"]
    desc = parse_submit("executable = /bin/echo\narguments = $(a)|$(b)\nqueue a, b from items.txt\n",
                        cwd=str(tmp_path), env={})
    got = [ad["Args"] for c in desc.expand() for ad in c.procs()]
    # blank rows repeat the row before them; "# c" is an ordinary row in a file
    assert got == ["a1|b1", "a1|b1", "#|c", "#|c", "a2|b2 more"]


def test_inline_list_skips_comments_but_not_blank_lines() -> None:
    assert args_of("queue a, b from (\n\n  x1 y1\n# comment\n   \nx2, y2 z2\n)\n") == [
        "|", "x1|y1", "x1|y1", "x2|y2 z2"]
    # text after "(" on the queue line is the first row; a one-line list is one row
    assert args_of("queue a from ( first\n second\n)\n") == ["first|", "second|"]
    assert args_of("queue a, b from (p q)\n") == ["p|q"]


def test_queue_keyword_is_a_whole_word() -> None:
    # "a,in" is not the keyword: condor splits only at blanks and "("
    desc = parse_submit("executable = /bin/echo\narguments = $(x)\nqueue x in (1 2 3)\n", cwd="/tmp", env={})
    assert [ad["Args"] for ad in desc.expand()[0].procs()] == ["1", "2", "3"]


def test_queue_variables_act_as_submit_commands() -> None:
    desc = parse_submit("executable = /bin/echo\narguments = ignored\n"
                        "queue input, arguments from (\n in/a.dat x y\n in/b.dat z\n)\n", cwd="/tmp", env={})
    got = [(ad["In"], ad["Args"]) for ad in desc.expand()[0].procs()]
    assert got == [("in/a.dat", "x y"), ("in/b.dat", "z")]


def test_from_command_runs_in_the_reading_layer(tmp_path: Path) -> None:
    text = "executable = /bin/echo\narguments = $(Item)\nqueue from /usr/bin/seq 3 |\n"
    # the pure language never runs anything
    with pytest.raises(CommandNotAllowed):
        parse_submit(text, cwd=str(tmp_path), env={})
    desc = parse_text(text, file="job.sub", cwd=str(tmp_path))
    assert [ad["Args"] for ad in desc.expand()[0].procs()] == ["1", "2", "3"]
    # the command runs in the submit directory, without a shell (new-syntax words)
    (tmp_path / "names").write_text("n1\nn2\n")
    desc = parse_text("executable = /bin/echo\narguments = $(Item)\n"
                      "queue from \"/bin/sh -c 'cat names; echo last'\" |\n", cwd=str(tmp_path))
    assert [ad["Args"] for ad in desc.expand()[0].procs()] == ["n1", "n2", "last"]


def test_from_command_failure_names_the_line(tmp_path: Path) -> None:
    with pytest.raises(SubmitError, match=r"job.sub:3: .*exit code 3"):
        parse_text("executable = /bin/echo\n\nqueue from \"/bin/sh -c 'exit 3'\" |\n", file="job.sub",
                   cwd=str(tmp_path))
    with pytest.raises(SubmitError, match="not a valid command"):
        parse_text("executable = /bin/echo\nqueue from /no/such/tool |\n", cwd=str(tmp_path))
