"""Events and mail a real pool writes: 040 transfer and 006 image-size events, the XML
(``log_xml``) and JSON user logs, the pool's EVENT_LOG (JSON here), and job mail sent
to a real SMTP server (aiosmtpd, in this process) for Always / Complete / Error; a
mail server that is down delays no job.  htcondor2.JobEventLog reads every log."""

from __future__ import annotations

import email
import json
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from poolkit import PoolHandle, start_pool, stop_pool, wait_until

from roost.eventlog import read_events

aiosmtpd = pytest.importorskip("aiosmtpd.controller")
htcondor2 = pytest.importorskip("htcondor2")


class Mailbox:
    """What the SMTP server received; ``start()``/``stop()`` the server (a new one each start)."""

    def __init__(self, port: int) -> None:
        self.messages: list[Any] = []
        self.port = port
        self.server: Any = None

    def start(self) -> None:
        self.server = aiosmtpd.Controller(self, hostname="127.0.0.1", port=self.port)
        self.server.start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 (aiosmtpd's name)
        self.messages.append((list(envelope.rcpt_tos), email.message_from_bytes(envelope.content)))
        return "250 OK"

    def about(self, jid: str) -> list[Any]:
        return [(to, m) for to, m in self.messages if m["Subject"].startswith(f"[Condor] Condor Job {jid}")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def mailpool() -> Iterator[tuple[PoolHandle, Mailbox, Any]]:
    port = _free_port()
    box = ctl = Mailbox(port)
    box.start()
    home = Path(tempfile.mkdtemp(prefix="roost-evm-", dir="/tmp"))
    extra = (f"\nEVENT_LOG = {home}/log/EventLog\nEVENT_LOG_FORMAT_OPTIONS = JSON\n"
             "EVENT_LOG_JOB_AD_INFORMATION_ATTRS = Owner, JobStatus\n"
             f"SMTP_SERVER = 127.0.0.1:{port}\nMAIL_FROM = roost@pool.test\nEMAIL_DOMAIN = users.test\n")
    try:
        p = start_pool(home, extra)
    except BaseException:
        ctl.stop()
        raise
    try:
        yield p, box, ctl
    finally:
        stop_pool(p)
        ctl.stop()


def _types(path: Path) -> list[int]:
    return [int(e.type) for e in read_events(path)]


def _htcondor_types(path: Path) -> list[int]:
    return [int(e.type) for e in htcondor2.JobEventLog(str(path)).events(stop_after=0)]


GROW = ("import time\nx = []\nfor i in range(6):\n    x.append(bytearray(8 << 20))\n    time.sleep(0.5)\n"
        "open('out.txt', 'w').write(open('in.txt').read().upper())\n")


def test_transfer_and_image_size_events(mailpool, jobdir: Path) -> None:
    pool, _box, _ctl = mailpool
    (jobdir / "grow.py").write_text(GROW)
    (jobdir / "in.txt").write_text("hello\n")
    r = pool.submit("executable = /usr/bin/python3\narguments = grow.py\ntransfer_executable = false\n"
                    "should_transfer_files = YES\ntransfer_input_files = grow.py, in.txt\n"
                    "transfer_output_files = out.txt\nlog = t.log\nqueue\n", jobdir)
    jid = r.job_ids()[0]
    assert pool.wait([jid], timeout=90)["done"] == 1
    assert (jobdir / "out.txt").read_text() == "HELLO\n"
    log = jobdir / "t.log"
    events = list(read_events(log))
    transfers = [e["Type"] for e in events if int(e.type) == 40]
    assert transfers == [2, 3, 5, 6], transfers  # input started/finished, output started/finished
    kinds = [int(e.type) if int(e.type) != 40 else 40 + e["Type"] for e in events]
    assert kinds.index(42) < kinds.index(43) < kinds.index(1) < kinds.index(45) < kinds.index(46) < kinds.index(5)
    started = next(e for e in events if int(e.type) == 40 and e["Type"] == 2)
    assert started["Host"].startswith("<")
    sizes = [e for e in events if int(e.type) == 6]
    assert sizes and sizes[-1]["Size"] > 8 * 1024 and sizes[-1]["MemoryUsage"] >= 8, sizes
    assert _htcondor_types(log) == [int(e.type) for e in events]
    assert [int(e.type) for e in events][0] == 0 and int(events[-1].type) == 5


@pytest.mark.parametrize(("key", "first"), [("log_xml = true", "<c>"), ("+UserLogUseXML = 2", "{")])
def test_xml_and_json_user_logs(mailpool, jobdir: Path, key: str, first: str) -> None:
    pool, _box, _ctl = mailpool
    r = pool.submit(f"executable = /bin/sh\narguments = \"-c 'exit 3'\"\nlog = x.log\n{key}\nqueue\n", jobdir)
    jid = r.job_ids()[0]
    assert pool.wait([jid], timeout=60)["done"] == 1
    log = jobdir / "x.log"
    assert log.read_text().startswith(first)
    ours = list(read_events(log))
    assert [int(e.type) for e in ours] == _htcondor_types(log)
    assert int(ours[0].type) == 0 and int(ours[-1].type) == 5
    assert ours[-1]["ReturnValue"] == 3 and ours[-1]["TerminatedNormally"] is True
    theirs = list(htcondor2.JobEventLog(str(log)).events(stop_after=0))
    assert theirs[-1]["ReturnValue"] == 3


def test_pool_event_log_has_every_job_in_json(mailpool, jobdir: Path) -> None:
    pool, _box, _ctl = mailpool
    r = pool.submit("executable = /bin/true\nqueue 2\n", jobdir)  # no user log
    ids = r.job_ids()
    assert pool.wait(ids, timeout=60)["done"] == 2
    path = pool.home / "log" / "EventLog"
    assert path.read_text().startswith("{")

    def ended() -> bool:
        mine = [e for e in read_events(path) if e.cluster == int(ids[0].split(".")[0])]
        return sorted(e.proc for e in mine if int(e.type) == 5) == [0, 1]

    wait_until(ended, 10, "both ends in the event log")
    mine = [e for e in read_events(path) if e.cluster == int(ids[0].split(".")[0])]
    kinds = [int(e.type) for e in mine]
    assert kinds.count(0) == 2 and kinds.count(1) == 2 and kinds.count(5) == 2
    infos = [e for e in mine if int(e.type) == 28]
    assert infos and all(e["Owner"] == "root" for e in infos), infos[:1]
    assert all(json.loads(json.dumps(e.attrs())) for e in mine)
    assert len(_htcondor_types(path)) == len(list(read_events(path)))


def _body(msg: Any) -> str:
    return msg.get_payload(decode=True).decode().replace("\r\n", "\n")


def _mail_for(box: Mailbox, jid: str, timeout: float = 20) -> tuple[list[str], Any]:
    wait_until(lambda: box.about(jid), timeout, f"mail about {jid}")
    return box.about(jid)[0]


def test_mail_on_always_complete_and_error(mailpool, jobdir: Path) -> None:
    pool, box, _ctl = mailpool
    jobs = {}
    for name, notify, code in (("always", "Always", 0), ("complete", "Complete", 0), ("err_ok", "Error", 0),
                               ("err_bad", "Error", 3), ("never", "Never", 3)):
        extra = "notify_user = alice@example.org\n" if name == "always" else ""
        r = pool.submit(f"executable = /bin/sh\narguments = \"-c 'exit {code}'\"\nnotification = {notify}\n"
                        f"{extra}queue\n", jobdir)
        jobs[name] = r.job_ids()[0]
    assert pool.wait(list(jobs.values()), timeout=60)["done"] == 5
    to, msg = _mail_for(box, jobs["always"])
    assert to == ["alice@example.org"] and msg["From"] == "roost@pool.test"
    assert msg["Subject"] == f"[Condor] Condor Job {jobs['always']}"
    body = _body(msg)
    assert body.startswith("This is an automated email from the Condor system\non machine ")
    # the arguments as the job ad keeps them (HTCondor's canonical V2 form, as its mail shows them)
    assert f"Condor job {jobs['always']}\n\t/bin/sh -c exit' '0\n\tsubmitted from directory {jobdir}\n" in body, body
    for line in ("exited normally with status 0\n", "\n\nSubmitted at:        ", "Completed at:        ",
                 "Statistics from last run:\nAllocation/Run time:     ", "Remote User CPU Time:    ",
                 "Statistics totaled from all runs:\n", "Run Bytes Received By Job\n",
                 "The Official HTCondor Homepage is https://htcondor.org/\n"):
        assert line in body, (line, body)
    to, _ = _mail_for(box, jobs["complete"])
    assert to == ["root@users.test"]  # the owner at EMAIL_DOMAIN
    to, msg = _mail_for(box, jobs["err_bad"])
    assert "exited normally with status 3\n" in _body(msg)
    # Mail goes out from one queue, one message at a time, in order: once a later job's
    # mail has come, a wrong one about these would have come before it.
    last = pool.submit("executable = /bin/true\nhold = true\nnotification = Always\nqueue\n", jobdir).job_ids()[0]
    pool.roost("rm", last, check=True)
    _mail_for(box, last)
    assert not box.about(jobs["err_ok"]) and not box.about(jobs["never"])


def test_mail_on_hold_for_always(mailpool, jobdir: Path) -> None:
    pool, box, _ctl = mailpool
    r = pool.submit("executable = /bin/sleep\narguments = 60\nnotification = Always\nqueue\n", jobdir)
    jid = r.job_ids()[0]
    pool.wait_for(jid, lambda ad: ad.get("JobStatus") == 2, timeout=30, what="running")
    pool.roost("hold", jid, "-reason", "checking mail", check=True)
    _to, msg = _mail_for(box, jid)
    assert msg["Subject"] == f"[Condor] Condor Job {jid} put on hold"
    assert "\nis being put on hold.\n\n" in _body(msg)
    pool.roost("rm", jid, check=True)


def test_mail_server_down_or_silent_delays_no_job(mailpool, jobdir: Path) -> None:
    """Refused: the failure is logged and the jobs end.  Silent (accepts, never greets:
    each message would wait out its 30 s timeout): the jobs still end long before one
    timeout, and a job submitted after them too."""
    pool, _box, ctl = mailpool
    ctl.stop()
    silent = None
    try:
        r = pool.submit("executable = /bin/true\nnotification = Always\nqueue 2\n", jobdir)
        assert pool.wait(r.job_ids(), timeout=60)["done"] == 2
        schedlog = pool.home / "log" / "SchedLog"
        wait_until(lambda: "cannot mail" in schedlog.read_text(errors="replace"), 20, "the failure logged")
        silent = socket.socket()
        silent.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        silent.bind(("127.0.0.1", ctl.port))
        silent.listen(16)  # never accepted: the SMTP greeting never comes
        r = pool.submit("executable = /bin/true\nnotification = Always\nqueue 3\n", jobdir)
        assert pool.wait(r.job_ids(), timeout=20)["done"] == 3
        more = pool.submit("executable = /bin/true\nnotification = Always\nqueue\n", jobdir).job_ids()
        assert pool.wait(more, timeout=20)["done"] == 1
    finally:
        if silent is not None:
            silent.close()
        ctl.start()


def _write_calls(pid: int) -> int:
    """How many write system calls process ``pid`` has made (Linux's /proc/PID/io)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("syscw:"):
            return int(line.split()[1])
    raise AssertionError("no syscw in /proc/PID/io")


def test_a_big_cluster_reaches_the_pool_event_log_in_a_few_writes(mailpool, jobdir: Path) -> None:
    """Every job's submit event is in EVENT_LOG, written per cluster, not per job: the
    schedd makes far fewer write calls than the cluster has jobs (the queue's commit
    and the SchedLog are all else it writes)."""
    pool, _box, _ctl = mailpool
    n = 3000
    pid = pool.daemon_pid("SCHEDD")
    before = _write_calls(pid)
    r = pool.submit(f"executable = /bin/true\nrequirements = false\nqueue {n}\n", jobdir)
    cid = int(r.job_ids()[0].split(".")[0])
    evlog = pool.home / "log" / "EventLog"

    def submits() -> int:
        got = 0
        for p in [evlog.with_name("EventLog.old"), evlog]:
            if p.exists():
                got += sum(1 for e in read_events(p) if int(e.type) == 0 and e.cluster == cid)
        return got

    wait_until(lambda: submits() == n, 30, f"{n} submit events in the EventLog")
    writes = _write_calls(pid) - before
    pool.roost("rm", str(cid), check=True)
    assert writes < n // 3, f"{writes} write calls for a cluster of {n} jobs"


def test_notify_user_that_is_no_plain_address_is_refused(mailpool, jobdir: Path) -> None:
    """notify_user goes to the MAIL program (as root): roost submit refuses one that
    could be an option (naming file and line), the schedd refuses it in a custom
    attribute and at qedit; a plain address may still be set."""
    pool, _box, _ctl = mailpool
    (jobdir / "bad.sub").write_text("executable = /bin/true\nnotification = Always\n"
                                    "notify_user = -Smta=/tmp/evil@x\nqueue\n")
    done = pool.roost("submit", "bad.sub", cwd=jobdir)
    assert done.returncode != 0 and "bad.sub:3" in done.stderr and "notify_user" in done.stderr, done.stderr
    (jobdir / "custom.sub").write_text("executable = /bin/true\n+NotifyUser = \"|/bin/sh\"\nqueue\n")
    done = pool.roost("submit", "custom.sub", cwd=jobdir)
    assert done.returncode != 0 and "NotifyUser" in done.stderr, done.stderr
    jid = pool.submit("executable = /bin/true\nrequirements = false\nqueue\n", jobdir).job_ids()[0]
    done = pool.roost("qedit", jid, "NotifyUser", '"-Smta=/tmp/evil@x"')
    assert done.returncode != 0 and "NotifyUser" in (done.stderr + done.stdout)
    pool.roost("qedit", jid, "NotifyUser", '"bob@example.org"', check=True)
    job = pool.job(jid)
    assert job is not None and job.get("NotifyUser") == "bob@example.org"
    pool.roost("rm", jid, check=True)
