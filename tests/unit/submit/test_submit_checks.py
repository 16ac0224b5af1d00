"""condor_submit's file checks before anything is queued (issue 13): a missing
executable or input, a log or output in a missing directory, a DOS script: one line
naming the file, the line and the problem. Nothing is checked where the file lives on
the execute machine (transfer_executable = false) or for pure parses."""

from __future__ import annotations

from pathlib import Path

import pytest

from roost.submit import SubmitError, parse_submit
from roost.submit.reading import PathChecks, file_size


def expand(text: str, cwd: Path, checks=None):  # noqa: ANN001, ANN201
    desc = parse_submit(text, file="job.sub", cwd=str(cwd), env={}, file_size=file_size,
                        check_path=checks if checks is not None else PathChecks())
    return desc.expand(cluster_id=1, qdate=1, owner="alice")


@pytest.mark.parametrize("text,line,why", [
    ("executable = /no/such/program\nqueue\n", 1, "executable: /no/such/program: no such file"),
    ("executable = /bin/true\ninput = missing.in\nqueue\n", 2, "input: {cwd}/missing.in: no such file"),
    ("executable = /bin/true\ntransfer_input_files = here.txt, gone.txt\nqueue\n", 2,
     "transfer_input_files: {cwd}/gone.txt: no such file"),
    ("executable = /bin/true\nlog = nodir/job.log\nqueue\n", 2,
     "log: {cwd}/nodir/job.log: its directory {cwd}/nodir does not exist"),
    ("executable = /bin/true\n\noutput = out/$(Process).txt\nqueue 2\n", 3, "output: {cwd}/out/0.txt: its directory"),
    ("executable = dos.sh\nqueue\n", 1, "executable: {cwd}/dos.sh: a script with DOS line endings (CRLF)"),
])
def test_each_problem_is_one_line_with_file_and_line(tmp_path: Path, text: str, line: int, why: str) -> None:
    (tmp_path / "here.txt").write_text("x")
    (tmp_path / "dos.sh").write_bytes(b"#!/bin/sh\r\necho hi\r\n")
    with pytest.raises(SubmitError) as e:
        expand(text, tmp_path)
    msg = str(e.value)
    assert msg.startswith(f"job.sub:{line}: "), msg
    assert why.format(cwd=tmp_path) in msg, msg
    assert "\n" not in msg


def test_good_descriptions_and_execute_side_files_pass(tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("x")
    (tmp_path / "data").mkdir()
    (tmp_path / "script.sh").write_text("#!/bin/sh\necho ok\n")
    ok = [
        "executable = script.sh\ninput = in.txt\nlog = job.log\noutput = o.$(Process)\nqueue 3\n",
        "executable = /opt/only/on/the/execute/host\ntransfer_executable = false\nqueue\n",
        "executable = /bin/true\ntransfer_input_files = data/, in.txt, https://example.org/x\nqueue\n",
        "executable = /bin/true\noutput = /dev/null\nerror = /dev/null\nqueue\n",
    ]
    for text in ok:
        assert expand(text, tmp_path)
    # a pure parse (no file system access offered) checks nothing
    desc = parse_submit("executable = /no/such\nqueue\n", file="job.sub", cwd=str(tmp_path), env={})
    assert desc.expand(cluster_id=1)


def test_a_big_queue_looks_at_each_path_once(tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("x")
    seen: list[tuple[str, str]] = []
    inner = PathChecks()

    def spy(what: str, path: str) -> str | None:
        seen.append((what, path))
        return inner(what, path)

    (c,) = expand("executable = /bin/true\ninput = in.txt\nlog = job.log\nqueue 500\n", tmp_path, spy)
    assert len(c) == 500
    assert len(set(seen)) == 3  # the executable, the input, the log's directory


def test_what_condor_submit_does_not_check_is_not_checked(tmp_path: Path) -> None:
    ok = [
        "executable = /no/such\nskip_filechecks = true\nqueue\n",
        "executable = /bin/true\ninput = http://example.org/in\nqueue\n",
        "executable = /bin/true\noutput = nodir/o.txt\ntransfer_output = false\nqueue\n",
        "executable = /bin/true\ntransfer_input_files = $$(OpSys)/in.txt\nqueue\n",
    ]
    for text in ok:
        assert expand(text, tmp_path), text
