"""submit_dag's FILE.dag.condor.sub: the DAGMan job's description roost writes must
read cleanly through roost's own condor_submit (no warning a user would see for a
line they never wrote), whether it comes from ``submit_dag`` or ``Submit.from_dag``."""

from __future__ import annotations

import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import roost.htcondor2 as face
from roost.dagman.submitdag import Options, prepare
from roost.submit.description import parse_submit

DAG = """\
JOB A a.sub
JOB B b.sub
PARENT A CHILD B
SET_JOB_ATTR Project = "ours"
ENV SET ANSWER=42
"""


@pytest.fixture
def dagdir() -> Iterator[Path]:
    """A directory the DAG's manager could write (root's DAGs run as nobody)."""
    path = Path(tempfile.mkdtemp(prefix="roost-subdag-", dir="/tmp"))
    path.chmod(0o777)
    (path / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (path / "b.sub").write_text("executable = /bin/true\nqueue\n")
    (path / "wf.dag").write_text(DAG)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _warnings_of(text: str, cwd: Path) -> list[str]:
    desc = parse_submit(text, file="wf.dag.condor.sub", cwd=str(cwd), env={})
    return [w.message for c in desc.expand(1) for w in c.warnings]


def test_submit_dag_description_builds_without_warnings(dagdir: Path) -> None:
    opts = Options(maxjobs=3, maxidle=5, priority=4, notification="never", batch_name="mine")
    prepared = prepare(str(dagdir / "wf.dag"), opts)
    assert "copy_to_spool" not in prepared.text  # HTCondor's condor_submit_dag writes none either
    assert _warnings_of(prepared.text, dagdir) == []


def test_from_dag_description_submits_without_warnings(dagdir: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sub = face.Submit.from_dag(str(dagdir / "wf.dag"), {"maxjobs": 2, "force": True})
    assert sub.get("universe") == "scheduler"
    assert sub.get("copy_to_spool") is None
    assert _warnings_of(str(sub), dagdir) == []
    [ad] = sub.jobs()
    assert ad["JobUniverse"] == 7 and ad["Project"] == "ours"
