"""The submit language's lines: continuations, includes, conditionals, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from roost.submit import SubmitError, parse_submit
from roost.submit.lexer import Assign, Queue, lex


def test_continuation_comments_and_multiline_values() -> None:
    st = lex("# c\na = 1 \\\n  2\nb @=end\nline one\nline two\n@end\nqueue 3\n")
    assert st[0] == Assign("a", "1 2", 2)
    assert isinstance(st[1], Assign) and st[1].value == "line one\nline two"
    assert isinstance(st[2], Queue) and st[2].args == "3"


def test_syntax_error_names_file_and_line() -> None:
    with pytest.raises(SubmitError) as e:
        parse_submit("executable = /bin/true\nthis is not valid\nqueue\n", file="x.sub", cwd="/tmp", env={})
    assert e.value.line == 2 and str(e.value).startswith("x.sub:2:")


def test_unclosed_inline_items() -> None:
    with pytest.raises(SubmitError, match="never closed"):
        lex("queue x from (\n a\n b\n")


def test_if_elif_else_and_defined() -> None:
    text = ("executable = /bin/true\nmode = true\nif defined nothing\n arguments = 1\nelif $(mode)\n"
            " arguments = 2\nelse\n arguments = 3\nendif\nif false\n output = never\nendif\nqueue\n")
    (c,) = parse_submit(text, cwd="/tmp", env={}).expand()
    ad = c.proc_ad(0)
    assert ad["Args"] == "2" and ad["Out"] == "/dev/null"


def test_include(tmp_path: Path) -> None:
    (tmp_path / "common.inc").write_text("request_cpus = 3\n")
    text = "executable = /bin/true\ninclude : common.inc\nqueue\n"
    (c,) = parse_submit(text, cwd=str(tmp_path), env={}).expand()
    assert c.proc_ad(0)["RequestCpus"] == 3
    with pytest.raises(SubmitError, match="missing.inc"):
        parse_submit("include : missing.inc\nqueue\n", cwd=str(tmp_path), env={})


def test_overrides_and_append() -> None:
    text = "executable = /bin/true\narguments = $(who)\nqueue\n"
    (c,) = parse_submit(text, cwd="/tmp", env={}, overrides={"who": "cli"}, append=["output = app.out"]).expand()
    ad = c.proc_ad(0)
    assert ad["Args"] == "cli" and ad["Out"] == "app.out"


def test_no_queue_statement() -> None:
    with pytest.raises(SubmitError, match="queue"):
        parse_submit("executable = /bin/true\n", cwd="/tmp", env={})


def test_conditionals_match_htcondor() -> None:
    htcondor2 = pytest.importorskip("htcondor2")
    text = ("mode = 1\nif defined nothing\n a = 1\nelif $(mode)\n a = 2\nelse\n a = 3\nendif\n"
            "if version >= 9.0\n v = new\nelse\n v = old\nendif\nif ! defined mode\n w = 1\nelse\n w = 2\nendif\n"
            "if false\n z = never\nendif\nexecutable = /bin/true\nqueue\n")
    theirs = htcondor2.Submit(text)
    ours = parse_submit(text, cwd="/tmp", env={}).blocks[0].macros
    for k in ("a", "v", "w"):
        assert ours[k] == theirs[k]
    assert "z" not in ours and "z" not in theirs


def test_complex_conditionals_are_rejected_like_condor_submit() -> None:
    with pytest.raises(SubmitError, match="complex conditionals"):
        parse_submit('m = b\nif $(m) == "b"\nendif\nexecutable = /bin/true\nqueue\n', file="c.sub", cwd="/tmp", env={})
