"""Queue statements and item data, checked against htcondor2.Submit.itemdata()."""

from __future__ import annotations

from pathlib import Path

import pytest

from roost.submit import SubmitError, parse_submit
from roost.submit.queue import load_items, parse_queue_args

htcondor2 = pytest.importorskip("htcondor2")

FORMS = [
    "queue 2 in (a b c)",
    "queue x in a, b c",
    "queue x,y in (a b c)",
    "queue a,b from (\n 1 2\n  3   4 5 \n)",
    "queue a b from (\n 1,2\n# comment\n 3,4\n)",
    "queue matching *.dat",
    "queue f matching files *",
    "queue f matching dirs *",
    "queue matching *",
    "queue x from [1:3] (\n a\n b\n c\n d\n)",
    "queue x in [::2] (a b c d e)",
]


@pytest.fixture()
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for n in ("a.dat", "b.dat", "c.txt"):
        (tmp_path / n).write_text("x")
    (tmp_path / "d1").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("form", FORMS)
def test_itemdata_matches_htcondor(form: str, sandbox: Path) -> None:
    text = "executable = /bin/echo\n" + form + "\n"
    expected = list(htcondor2.Submit(text).itemdata())
    desc = parse_submit(text, cwd=str(sandbox), env={})
    assert desc.blocks[0].items == expected


def test_slices_select_procs_and_keep_item_index(sandbox: Path) -> None:
    text = "executable = /bin/echo\narguments = $(x) $(ItemIndex) $(Row)\nqueue x in [1:4:2] (a b c d e)\n"
    (c,) = parse_submit(text, cwd=str(sandbox), env={}).expand()
    assert [c.proc_ad(i)["Args"] for i in range(len(c))] == ["b 1 1", "d 3 3"]


def test_count_times_items_and_step(sandbox: Path) -> None:
    text = "executable = /bin/echo\narguments = $(Item) $(Step) $(Process)\nqueue 2 in (a b)\n"
    (c,) = parse_submit(text, cwd=str(sandbox), env={}).expand()
    assert [ad["Args"] for ad in c.procs()] == ["a 0 0", "a 1 1", "b 0 2", "b 1 3"]


def test_queue_from_file(sandbox: Path) -> None:
    (sandbox / "rows.txt").write_text("1 one\n2 two words\n")
    text = "executable = /bin/echo\narguments = $(n) $(w)\nqueue n,w from rows.txt\n"
    (c,) = parse_submit(text, cwd=str(sandbox), env={}).expand()
    assert [ad["Args"] for ad in c.procs()] == ["1 one", "2 two words"]


def test_queue_count_from_macro_and_zero() -> None:
    d = parse_submit("N = 4\nexecutable = /bin/true\nqueue $(N)\n", cwd="/tmp", env={})
    assert d.num_procs() == 4
    assert parse_submit("executable = /bin/true\nqueue 0\n", cwd="/tmp", env={}).expand() == []


def test_missing_item_file_is_an_error_with_line(sandbox: Path) -> None:
    with pytest.raises(SubmitError) as e:
        parse_submit("executable = /bin/true\n\nqueue x from nope.txt\n", file="job.sub", cwd=str(sandbox), env={})
    assert e.value.line == 3 and "nope.txt" in str(e.value) and "job.sub:3" in str(e.value)


def test_parse_queue_args_shapes() -> None:
    s = parse_queue_args("3 x, y from data.txt")
    assert (s.count_expr, s.vars, s.mode, s.source) == ("3", ["x", "y"], "from", "data.txt")
    assert load_items(parse_queue_args("5")) is None
