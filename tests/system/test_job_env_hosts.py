"""Issue 25 across hosts: any submitter of a multi-host pool became root on every
execute host through the job's environment (the execute host's root launcher loaded
``LD_PRELOAD``/``LD_AUDIT`` libraries, even one shipped with the job as ``./evil.so``).
Jobs from the submit host run on the two execute hosts; the payload may run as the
job's user there, never as root."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

from hostpool import MultiHostPool

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
import payloads  # noqa: E402

NOBODY = 65534

SUBMIT = """\
executable = /bin/sh
arguments = "-c 'hostname > where.txt'"
transfer_executable = false
should_transfer_files = YES
when_to_transfer_output = ON_EXIT
transfer_output_files = where.txt
transfer_output_remaps = "where.txt = where.$(Process).txt"
{extra}
request_cpus = 1
request_memory = 32
queue 4
"""


def test_a_submitters_library_never_runs_as_root_on_an_execute_host(hosts: MultiHostPool) -> None:
    where = Path(tempfile.mkdtemp(prefix="roost-evil-", dir="/tmp"))
    try:
        evil = payloads.build(where)
        if evil is None:
            import pytest

            pytest.skip("no C compiler to build the payload library")
        submit = hosts["submit"]
        hosts.wait_for_slots({"exec1", "exec2"})
        work = submit.host.dir / "work"
        work.mkdir()
        work.chmod(0o777)
        (work / "evil.so").write_bytes(evil.library.read_bytes())
        variants = {
            "named": f'environment = "LD_PRELOAD={evil.library} LD_AUDIT={evil.library}"',
            "shipped": 'transfer_input_files = evil.so\nenvironment = "LD_PRELOAD=./evil.so LD_AUDIT=./evil.so"',
        }
        ran_on: set[str] = set()
        for name, extra in variants.items():
            (work / f"{name}.sub").write_text(SUBMIT.format(extra=extra))
            done = submit.roost("submit", f"{name}.sub", cwd=work)
            cluster = re.search(r"submitted to cluster (\d+)", done.stdout)
            assert cluster, done.stdout
            submit.roost("wait", "-quiet", "-wait", "90", cluster.group(1), timeout=100)
            ran_on |= {(work / f"where.{p}.txt").read_text().strip() for p in range(4)}
            hist = submit.roost("history", cluster.group(1), "-af", "ExitCode").stdout.split()
            assert hist == ["0"] * 4, (name, hist)
        assert ran_on == {"exec1", "exec2"}, ran_on
        assert evil.as_root() == [], "the payload ran as root:\n" + "\n".join(evil.as_root())
        assert evil.uids() == {NOBODY}, evil.lines()  # it did run: as the job's user
    finally:
        subprocess.run(["rm", "-rf", str(where)], check=False)
