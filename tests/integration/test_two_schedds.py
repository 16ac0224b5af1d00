"""Two schedds on one host (HTCondor's ``SCHEDD2`` with ``-local-name``): each its own
name, queue, socket and log; jobs of both run; the tools reach each by ``-name``."""

from __future__ import annotations

import tempfile
from pathlib import Path

from poolkit import start_pool, stop_pool

TWO = """
DAEMON_LIST = MASTER COLLECTOR NEGOTIATOR SCHEDD SCHEDD2 STARTD
SCHEDD2.SCHEDD_NAME = second
"""


def test_two_schedds_on_one_host_each_with_its_own_queue(tmp_path: Path) -> None:
    home = Path(tempfile.mkdtemp(prefix="roost-2s-", dir="/tmp"))
    pool = start_pool(home, TWO)
    try:
        c = pool.collector()
        try:
            names = sorted(str(a["Name"]) for a in c.query_objs("Scheduler", projection=["Name"]))
        finally:
            c.close()
        host = [n for n in names if not n.startswith("second@")][0]
        assert names == sorted([host, f"second@{host}"]), names
        assert (home / "run" / "schedd2.sock").exists() and (home / "log" / "SchedLog.schedd2").exists()
        assert (home / "spool" / "schedd2" / "job_queue.db").exists()

        # a job to each: the default schedd (its Unix socket) and the second (by -name)
        for which in ("first", "second"):
            (tmp_path / f"{which}.sub").write_text(f"executable = /bin/echo\narguments = {which}\n"
                                                   f"output = {which}.out\nlog = job.log\nqueue\n")
        first = pool.roost("submit", "first.sub", cwd=tmp_path, check=True).stdout
        second = pool.roost("submit", "-name", f"second@{host}", "second.sub", cwd=tmp_path, check=True).stdout
        assert "submitted to cluster 1." in first and "submitted to cluster 1." in second, (first, second)
        pool.roost("wait", "-wait", "60", "job.log", cwd=tmp_path, check=True)
        assert (tmp_path / "first.out").read_text() == "first\n"
        assert (tmp_path / "second.out").read_text() == "second\n"
        hist1 = pool.roost("history", "-af", "ClusterId", "Args", check=True).stdout.split()
        hist2 = pool.roost("history", "-name", f"second@{host}", "-af", "ClusterId", "Args", check=True).stdout.split()
        assert hist1 == ["1", "first"] and hist2 == ["1", "second"], (hist1, hist2)
        # -global: a section per schedd; -submitter: that user's jobs in every schedd
        (tmp_path / "held.sub").write_text("executable = /bin/true\nhold = true\nqueue\n")
        pool.roost("submit", "held.sub", cwd=tmp_path, check=True)
        pool.roost("submit", "-name", f"second@{host}", "held.sub", cwd=tmp_path, check=True)
        q = pool.roost("q", "-global", "-allusers", check=True).stdout
        assert q.count("-- Schedd: ") == 2 and f"-- Schedd: second@{host} : <" in q, q
        assert q.count("Total for all users: 1 jobs;") == 2, q
        owner = pool.roost("q", "-af", "Owner", check=True).stdout.strip()
        q = pool.roost("q", "-submitter", owner, "-af", "ClusterId", "JobStatus", check=True).stdout
        assert q.splitlines() == ["2 5", "2 5"], q
        q = pool.roost("q", "-name", "nosuch", check=False)
        assert q.returncode == 1 and "no schedd named nosuch" in q.stderr
    finally:
        stop_pool(pool)
