"""What `roost q`, `roost status` and `roost history` print, against a real pool."""

from __future__ import annotations

import json
import time
from pathlib import Path

from poolkit import PoolHandle


def test_q_views(pool: PoolHandle, tmp_path: Path) -> None:
    r = pool.submit("executable = /bin/sleep\narguments = 300\nhold = true\nbatch_name = sweep\nqueue 3\n",
                    tmp_path)
    c = r.cluster
    try:
        out = pool.roost("q", check=True).stdout
        assert "-- Schedd:" in out
        assert "OWNER" in out and "BATCH_NAME" in out and "JOB_IDS" in out
        row = next(ln for ln in out.splitlines() if "sweep" in ln)
        assert row.split()[-2:] == ["3", f"{c}.0-2"]
        assert "Total for query: 3 jobs; 0 completed, 0 removed, 0 idle, 0 running, 3 held, 0 suspended" in out
        assert "Total for all users:" in out

        out = pool.roost("q", "-nobatch", str(c), check=True).stdout
        assert " ID      OWNER            SUBMITTED     RUN_TIME ST PRI SIZE CMD" in out
        lines = [ln for ln in out.splitlines() if ln.strip().startswith(f"{c}.")]
        assert len(lines) == 3 and all(" H " in ln and ln.endswith("sleep 300") for ln in lines)

        out = pool.roost("q", str(c), "-af", "ClusterId", "ProcId", "JobStatus", "Cmd", check=True).stdout
        assert out.splitlines() == [f"{c} {p} 5 /bin/sleep" for p in range(3)]

        out = pool.roost("q", f"{c}.1", "-af:jh", "RequestCpus * 2", check=True).stdout
        # headings: columns as wide as their widest cell, " ID" as HTCondor heads the job id
        wid = max(3, len(f"{c}.1"))
        assert out.splitlines() == [f"{' ID':<{wid}} RequestCpus * 2", f"{c}.1".ljust(wid) + " 2"]

        ads = json.loads(pool.roost("q", "-json", f"{c}.2", check=True).stdout)
        assert len(ads) == 1 and ads[0]["ClusterId"] == c and ads[0]["ProcId"] == 2

        long = pool.roost("q", "-long", f"{c}.0", check=True).stdout
        assert f"ClusterId = {c}\n" in long and 'Cmd = "/bin/sleep"\n' in long

        out = pool.roost("q", "-constraint", "ProcId >= 1", str(c), "-af", "ProcId", check=True).stdout
        assert out.split() == ["1", "2"]

        out = pool.roost("q", "-totals", check=True).stdout
        assert "Total for query:" in out and "3 held" in out and "OWNER" not in out

        bad = pool.roost("q", "-constraint", "(((")
        assert bad.returncode == 1 and bad.stderr.startswith("roost q: ") and len(bad.stderr.splitlines()) == 1
    finally:
        pool.roost("rm", str(c))
        pool.wait(r.job_ids(), timeout=30)


def test_status_views(pool: PoolHandle) -> None:
    out = pool.roost("status", check=True).stdout
    head = out.splitlines()[0].split()
    assert head == ["Name", "OpSys", "Arch", "State", "Activity", "LoadAv", "Mem", "ActvtyTime"]
    assert "slot1@" in out and "X86_64/LINUX" in out or "LINUX" in out
    assert any(ln.split()[:1] == ["Total"] for ln in out.splitlines())
    names = pool.roost("status", "-af", "Name", check=True).stdout.split()
    assert any(n.startswith("slot1@") for n in names)
    ads = json.loads(pool.roost("status", "-json", check=True).stdout)
    assert all(a["MyType"] == "Machine" for a in ads)
    out = pool.roost("status", "-schedd", check=True).stdout
    assert "RunningJobs" in out and "IdleJobs" in out
    out = pool.roost("status", "-totals", check=True).stdout
    assert "ActvtyTime" not in out and "Total" in out
    bad = pool.roost("status", "-constraint", "(((")
    assert bad.returncode == 1 and bad.stderr.startswith("roost status: ")


def test_history_views(pool: PoolHandle, tmp_path: Path) -> None:
    r = pool.submit("executable = /bin/echo\narguments = hi\nqueue 2\n", tmp_path)
    pool.wait(r.job_ids(), timeout=60)
    c = r.cluster
    out = pool.roost("history", str(c), check=True).stdout
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "OWNER", "SUBMITTED", "RUN_TIME", "ST", "COMPLETED", "CMD"]
    # newest (last completed) first; the two run at once, so either may finish last
    assert sorted(ln.split()[0] for ln in lines[1:]) == [f"{c}.0", f"{c}.1"]
    # condor_history's print format: the job id padded to 12, ST "C ", the command's name and arguments
    assert all(ln.startswith(f"{c}.") and " C " in ln and ln.endswith(" echo hi") for ln in lines[1:])
    assert lines[0] == " ID          OWNER            SUBMITTED   RUN_TIME   ST   COMPLETED CMD"
    out = pool.roost("history", "-limit", "1", str(c), check=True).stdout
    assert len(out.splitlines()) == 2
    out = pool.roost("history", "-af", "ProcId", "ExitCode", "-constraint", f"ClusterId == {c}", check=True).stdout
    assert sorted(out.splitlines()) == ["0 0", "1 0"]
    ads = json.loads(pool.roost("history", "-json", f"{c}.0", check=True).stdout)
    assert ads[0]["JobStatus"] == 4


def test_wait_command(pool: PoolHandle, tmp_path: Path) -> None:
    r = pool.submit("executable = /bin/true\nlog = w.log\nqueue 3\n", tmp_path)
    out = pool.roost("wait", *r.job_ids(), "-wait", "60", check=True, timeout=90).stdout
    assert out.splitlines()[-1] == "All jobs done."
    assert "3/3 done" in out
    out = pool.roost("wait", str(tmp_path / "w.log"), "-wait", "10", check=True).stdout
    assert out.splitlines()[-1] == "All jobs done."
    r2 = pool.submit("executable = /bin/sleep\narguments = 300\nqueue\n", tmp_path)
    try:
        slow = pool.roost("wait", "-wait", "1", *r2.job_ids())
        assert slow.returncode == 1 and slow.stdout.splitlines()[-1] == "Time expired."
    finally:
        pool.roost("rm", str(r2.cluster))


def test_submit_command(pool: PoolHandle, tmp_path: Path) -> None:
    (tmp_path / "s.sub").write_text("executable = /bin/echo\narguments = $(Process)\noutput = o.$(Process)\n"
                                    "log = s.log\nqueue 2\n")
    out = pool.roost("submit", "s.sub", cwd=tmp_path, check=True).stdout.splitlines()
    assert out[0] == "Submitting job(s).."  # a dot per job, as condor_submit
    n, _, rest = out[-1].partition(" job(s) submitted to cluster ")
    assert n == "2" and rest.endswith(".")
    cluster = rest[:-1]
    assert pool.roost("wait", "-wait", "60", cluster, timeout=90).returncode == 0
    assert (tmp_path / "o.1").read_text() == "1\n"
    bad = pool.roost("submit", "missing.sub", cwd=tmp_path)
    assert bad.returncode == 1 and "missing.sub" in bad.stderr


def test_q_run_goodput_unmatchable_and_file_sources(pool: PoolHandle, tmp_path: Path) -> None:
    r = pool.submit(f"executable = /bin/sleep\narguments = 300\nlog = {tmp_path}/run.log\nqueue\n", tmp_path)
    never = pool.submit('executable = /bin/true\nrequirements = TARGET.Arch == "SPARC"\nqueue\n', tmp_path)
    jid = f"{r.cluster}.0"
    try:
        ad = pool.wait_for(jid, lambda j: j["JobStatus"] == 2 and j.get("RemoteHost"), timeout=60, what="running")
        out = pool.roost("q", "-run", check=True).stdout
        lines = out.splitlines()
        assert " ID      OWNER            SUBMITTED     RUN_TIME HOST(S)" in lines
        row = next(ln for ln in lines if ln.split()[:1] == [jid])
        assert row.split()[-1] == ad["RemoteHost"]
        shown = [ln.split()[0] for ln in lines[3:] if ln.strip()]
        assert f"{never.cluster}.0" not in shown and "Total for" not in out  # running only; no summary
        assert " ID      OWNER            SUBMITTED     CPU_TIME HOST(S)" in pool.roost(
            "q", "-run", "-cputime", check=True).stdout
        out = pool.roost("q", "-goodput", jid, check=True).stdout
        assert " ID      OWNER            SUBMITTED     RUN_TIME  GOODPUT  CPU_UTIL    Mb/s" in out
        out = pool.roost("q", "-currentrun", "-nobatch", jid, check=True).stdout
        assert any(ln.split()[:1] == [jid] and " R " in ln for ln in out.splitlines())

        out = pool.roost("q", "-unmatchable", check=True).stdout
        ids = [ln.split()[0] for ln in out.splitlines() if ln[:1] == " " and ln.split()[0][:1].isdigit()]
        assert ids == [f"{never.cluster}.0"]

        out = pool.roost("q", "-userlog", str(tmp_path / "run.log"), "-nobatch", check=True).stdout
        assert f"-- Userlog: {tmp_path}/run.log @ " in out
        assert [ln.split()[0] for ln in out.splitlines() if ln.split()[:1] == [jid]] == [jid]
        assert "Total for query: 1 jobs;" in out and "Total for all users" not in out

        ads = tmp_path / "ads.txt"
        ads.write_text(pool.roost("q", "-long", str(r.cluster), str(never.cluster), check=True).stdout)
        out = pool.roost("q", "-jobads", str(ads), "-constraint", "JobStatus == 1", "-af", "ClusterId",
                         check=True).stdout
        assert out.split() == [str(never.cluster)]
        bad = pool.roost("q", "-jobads", str(tmp_path / "missing"))
        assert bad.returncode == 1 and "can't open" in bad.stderr
    finally:
        pool.roost("rm", str(r.cluster), str(never.cluster))
        pool.wait(r.job_ids() + never.job_ids(), timeout=30)


def test_status_xml_and_history_file(pool: PoolHandle, tmp_path: Path) -> None:
    import xml.dom.minidom

    def xml_names() -> list[str]:
        doc = xml.dom.minidom.parseString(pool.roost("status", "-xml", check=True).stdout)
        names = [a for a in doc.getElementsByTagName("a") if a.getAttribute("n") == "Name"]
        return sorted(n.getElementsByTagName("s")[0].firstChild.data for n in names)

    # the module's pool runs other tests' jobs: a dynamic slot may come or go between two
    # commands, so the two views are compared until one pair was taken with nothing moving
    for _ in range(10):
        got, expect = xml_names(), sorted(pool.roost("status", "-af", "Name", check=True).stdout.split())
        if got == expect:
            break
        time.sleep(0.5)
    assert got == expect

    history = tmp_path / "history"
    history.write_text('ClusterId = 7\nProcId = 0\nOwner = "ann"\nJobStatus = 4\nCmd = "/bin/echo"\n'
                       '*** ProcId = 0 ClusterId = 7 Owner = "ann" CompletionDate = 1764600100\n'
                       'ClusterId = 8\nProcId = 0\nOwner = "bob"\nJobStatus = 3\nCmd = "/bin/false"\n'
                       '*** ProcId = 0 ClusterId = 8 Owner = "bob" CompletionDate = 1764600300\n')
    out = pool.roost("history", "-file", str(history), "-af", "ClusterId", "Owner", check=True).stdout
    assert out.splitlines() == ["8 bob", "7 ann"]  # newest (last written) first
    out = pool.roost("history", "-file", str(history), "-forwards", "-constraint", "JobStatus == 4",
                     "-af", "ClusterId", check=True).stdout
    assert out.split() == ["7"]
