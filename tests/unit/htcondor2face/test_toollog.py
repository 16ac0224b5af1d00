"""htcondor2's tool logging (``enable_log``, ``enable_debug``, ``disable_debug``,
``log``) beside HTCondor's: the same script, run once with HTCondor's bindings and once
through roost's shim, writes the same lines to TOOL_LOG (the time stamps aside). Each
runs in its own process: HTCondor's logging is process-wide."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from roost.htcondor2.shim import SHIM_DIR

pytest.importorskip("htcondor2")

SCRIPT = """
    import sys
    import htcondor2

    log_file, flags = sys.argv[1], sys.argv[2]
    htcondor2.param["TOOL_LOG"] = log_file
    htcondor2.param["TOOL_DEBUG"] = flags
    htcondor2.enable_log()
    L = htcondor2.LogLevel
    for level, text in [(L.Always, "always"), (L.Error, "error"), (L.Status, "status"),
                        (L.FullDebug, "full debug"), (L.Job, "job"), (L.Job | L.FullDebug, "job verbose"),
                        (L.Security, "security"), (L.Terse, "terse")]:
        htcondor2.log(level, text)
    htcondor2.enable_debug()
    htcondor2.log(L.Always, "to stderr")
    htcondor2.log(L.Job, "job to stderr")
    htcondor2.disable_debug()
    htcondor2.log(L.Always, "still to stderr")
    htcondor2.log(L.Job, "job after disable")
    htcondor2.enable_log()
    htcondor2.log(L.Always, "back in the file")
"""

HEADER = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d ", re.M)


def _run(tmp: Path, shim: bool, flags: str) -> tuple[str, str]:
    log_file = tmp / ("roost.log" if shim else "htcondor.log")
    env = dict(os.environ, CONDOR_CONFIG="/dev/null", ROOST_CONFIG="/dev/null", ROOST_HOME=str(tmp))
    if shim:
        env["PYTHONPATH"] = SHIM_DIR + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(SCRIPT), str(log_file), flags], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    text = log_file.read_text()
    assert HEADER.match(text), text
    return HEADER.sub("", text), HEADER.sub("", done.stderr)


# (not D_ALL: HTCondor then adds header fields and its own start-up messages)
@pytest.mark.parametrize("flags", ["", "D_FULLDEBUG", "D_JOB", "D_JOB:2 D_SECURITY"])
def test_the_same_messages_reach_tool_log(tmp_path: Path, flags: str) -> None:
    ours, theirs = _run(tmp_path, True, flags), _run(tmp_path, False, flags)
    assert ours == theirs
    text, stderr = ours
    assert text.startswith("always\nerror\nstatus\n") and text.endswith("terse\nback in the file\n")
    assert stderr.startswith("to stderr\n") and stderr.endswith("still to stderr\n")


def test_bad_arguments_are_type_errors() -> None:
    import roost.htcondor2 as face

    with pytest.raises(TypeError):
        face.log("loud", "x")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        face.log(face.LogLevel.Always, 5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        face.enable_debug(3)  # type: ignore[arg-type]
