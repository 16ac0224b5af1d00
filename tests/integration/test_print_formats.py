"""`roost q -print-format FILE` and `roost status -print-format FILE` against a real pool."""

from __future__ import annotations

import json
from pathlib import Path

from poolkit import PoolHandle

HOLD_CPF = """# condor_q 25's -hold layout, as a file (queue.cpp's jobHold_PrintFormat)
SELECT
   ClusterId     AS ' ID'  NOSUFFIX WIDTH 5 PRINTF '%4d.'
   ProcId        AS ' '    NOPREFIX WIDTH 3 PRINTF '%-3d'
   Owner         AS  OWNER WIDTH -14 PRINTAS OWNER OR ??
   JobStatus     AS ST              PRINTAS JOB_STATUS
   Cmd           AS CMD   WIDTH 0   PRINTAS JOB_DESCRIPTION
WHERE ProcId >= 1
SUMMARY STANDARD
"""


def test_q_print_format(pool: PoolHandle, tmp_path: Path) -> None:
    r = pool.submit("executable = /bin/sleep\narguments = 300\nhold = true\nqueue 3\n", tmp_path)
    c = r.cluster
    try:
        cpf = tmp_path / "hold.cpf"
        cpf.write_text(HOLD_CPF)
        out = pool.roost("q", "-print-format", str(cpf), str(c), check=True).stdout
        lines = out.splitlines()
        assert any(ln.startswith("-- Schedd:") for ln in lines)
        assert " ID      OWNER          ST CMD" in lines
        rows = [ln for ln in lines if ln.lstrip().startswith(f"{c}.")]
        owner = pool.job(f"{c}.1")["Owner"]  # type: ignore[index]
        # WHERE ProcId >= 1 leaves jobs 1 and 2
        assert rows == [f"{c:4d}.{p:<3d} {owner:<14.14} H  sleep 300" for p in (1, 2)]
        assert "Total for query: 2 jobs; 0 completed, 0 removed, 0 idle, 0 running, 2 held, 0 suspended" in out

        bare = tmp_path / "bare.cpf"
        bare.write_text("SELECT BARE FIELDPREFIX ,\n  ClusterId\n  ProcId PRINTF %d\n  JobStatus PRINTAS JOB_STATUS\n")
        out = pool.roost("q", "-pr", str(bare), str(c), check=True).stdout
        width = max(len("ClusterId"), len(str(c)))
        # BARE: no title, heading or totals; widths are the labels' (ProcId's number padded on
        # the left to it, as HTCondor pads every printf'd number, even in a left-aligned column)
        assert out.splitlines() == [f"{c!s:<{width}},{p:>6d},{'H':<9}" for p in range(3)]

        bad = tmp_path / "bad.cpf"
        bad.write_text("SELECT\n  Owner PRINTAS NO_SUCH\n")
        got = pool.roost("q", "-print-format", str(bad))
        assert got.returncode == 1
        assert got.stderr.startswith(f"roost q: {bad}:2: unknown PRINTAS function NO_SUCH")
    finally:
        pool.roost("rm", str(c))
        pool.wait(r.job_ids(), timeout=30)


STATUS_CPF = """SELECT
   Name      AS Name   WIDTH -34 PRINTF %s OR ??
   State     AS ST     PRINTAS ACTIVITY_CODE
   Cpus      AS Cpus   PRINTF %4d
   Memory    AS Memory WIDTH 6 PRINTF %6d
WHERE PartitionableSlot =?= true
SUMMARY STANDARD
"""


def test_status_print_format(pool: PoolHandle, tmp_path: Path) -> None:
    cpf = tmp_path / "slots.cpf"
    cpf.write_text(STATUS_CPF)
    slots = json.loads(pool.roost("status", "-json", "-constraint", "PartitionableSlot =?= true",
                                  check=True).stdout)
    assert slots
    out = pool.roost("status", "-print-format", str(cpf), check=True).stdout
    lines = out.splitlines()
    assert lines[0] == f"{'Name':<34} ST Cpus Memory"
    state = {"Unclaimed": "U", "Claimed": "C", "Owner": "O", "Matched": "M"}
    activity = {"Idle": "i", "Busy": "b"}
    want = sorted(f"{s['Name']:<34} {state[s['State']]}{activity[s['Activity']]} {s['Cpus']:4d} {s['Memory']:6d}"
                  for s in slots)
    assert lines[1:1 + len(slots)] == want
    # SUMMARY STANDARD: the slot totals after a blank line, as the default view prints them
    assert lines[1 + len(slots)] == "" and any(ln.split()[:1] == ["Total"] for ln in lines[2 + len(slots):])

    bad = tmp_path / "bad.cpf"
    bad.write_text("SELECT\n  Name WIDTH\n")
    got = pool.roost("status", "-pr", str(bad))
    assert got.returncode == 1 and got.stderr.startswith(f"roost status: {bad}:2: expected a number or AUTO")
