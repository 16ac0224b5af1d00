"""Job mail's content and rules (HTCondor's Email class), and the pool event log's
rotation and 028 events (roost.daemons.schedd.notify, .userlog)."""

from __future__ import annotations

import time

import pytest

from roost.config import Config
from roost.daemons.schedd.notify import Notifier, exit_body, format_time, metric_units, should_send
from roost.daemons.schedd.userlog import PoolEventLog, UserLogs
from roost.eventlog import SubmitEvent, TerminatedEvent, read_events


def getter(**ad):
    return ad.get


def config(tmp_path, text: str = "") -> Config:
    path = tmp_path / "roost_config"
    path.write_text(text)
    return Config.load(path, env={}, facts={"FULL_HOSTNAME": "ap.example.org"})


def test_format_time_and_units_are_htcondors() -> None:
    assert format_time(0) == "  0+00:00:00"
    assert format_time(90061) == "  1+01:01:01"
    assert metric_units(0) == "0.0 B "
    assert metric_units(1024) == "1024.0 B "  # only above 1024 is it a KB, as in HTCondor
    assert metric_units(1536) == "1.5 KB"
    assert metric_units(3 << 20) == "3.0 MB"


@pytest.mark.parametrize(("notify", "kind", "ad", "sent"), [
    (0, "exit", {"ExitCode": 1}, False),
    (1, "exit", {"ExitCode": 0}, True),
    (1, "hold", {"HoldReasonCode": 1}, True),
    (1, "remove", {}, True),
    (2, "exit", {"ExitCode": 5}, True),
    (2, "hold", {"HoldReasonCode": 12}, False),
    (3, "exit", {"ExitCode": 0}, False),
    (3, "exit", {"ExitCode": 2}, True),
    (3, "exit", {"ExitCode": 2, "JobSuccessExitCode": 2}, False),
    (3, "exit", {"ExitBySignal": True, "ExitSignal": 9}, True),
    (3, "hold", {"HoldReasonCode": 1}, False),   # the user asked
    (3, "hold", {"HoldReasonCode": 12}, True),   # a transfer failed
    (3, "hold", {"HoldReasonCode": 3}, False),   # periodic_hold (policy)
    (3, "hold", {"HoldReasonCode": 15}, False),  # SubmittedOnHold (HTCondor's list)
    (3, "hold", {"HoldReasonCode": 16}, True),   # SpoolingInput: not on HTCondor's list
    (3, "remove", {}, False),
])
def test_when_mail_is_sent(notify: int, kind: str, ad: dict, sent: bool) -> None:
    assert should_send(getter(JobNotification=notify, **ad), kind) is sent


def test_exit_body_lists_command_exit_times_and_usage() -> None:
    now = time.time()
    get = getter(ClusterId=12, ProcId=3, Cmd="/bin/sh", Arguments="-c 'exit 3'", Iwd="/home/a", ExitCode=3,
                 ExitBySignal=False, QDate=int(now) - 3725, ImageSize=2048, RemoteUserCpu=61.0,
                 RemoteSysCpu=2.0, LastRemoteWallClockTime=70.0, RemoteWallClockTime=140.0,
                 BytesSent=2048.0, BytesRecvd=4096.0, EmailAttributes="Owner")
    body = exit_body(get, now, lambda n: '"alice"' if n == "Owner" else None)
    assert body.startswith("Condor job 12.3\n\t/bin/sh -c 'exit 3'\n\tsubmitted from directory /home/a\n"
                           "exited normally with status 3\n\n\nSubmitted at:        ")
    assert "Real Time:             0+01:02:05\n\nVirtual Image Size:  2048 Kilobytes\n\n" in body
    assert ("Statistics from last run:\nAllocation/Run time:       0+00:01:10\n"
            "Remote User CPU Time:      0+00:01:01\nRemote System CPU Time:    0+00:00:02\n"
            "Total Remote CPU Time:     0+00:01:03\n\n"
            "Statistics totaled from all runs:\nAllocation/Run time:       0+00:02:20\n") in body
    assert "\nNetwork:\n    4.0 KB Run Bytes Received By Job\n    2.0 KB Run Bytes Sent By Job\n" in body
    assert body.endswith('\n\nOwner = "alice"\n')
    signal = exit_body(getter(ClusterId=1, ProcId=0, ExitBySignal=True, ExitSignal=9), now)
    assert "\ndied on signal 9\n" in signal


def test_address_defaults_to_owner_at_email_domain(tmp_path) -> None:
    cfg = config(tmp_path, "SMTP_SERVER = mail.example.org:2525\nEMAIL_DOMAIN = users.example.org\n")
    n = Notifier.from_config(cfg, "pool.example.org")
    assert n is not None and n.smtp == ("mail.example.org", 2525)
    assert n.address(getter(Owner="alice")) == "alice@users.example.org"
    assert n.address(getter(Owner="alice", NotifyUser="bob@x.org")) == "bob@x.org"
    assert Notifier.from_config(config(tmp_path), "d") is None  # neither SMTP_SERVER nor MAIL: no mail


def test_pool_event_log_rotates_and_adds_job_ad_events(tmp_path) -> None:
    cfg = config(tmp_path, f"EVENT_LOG = {tmp_path}/logs/EventLog\nEVENT_LOG_MAX_SIZE = 2000\n"
                 "EVENT_LOG_MAX_ROTATIONS = 2\nEVENT_LOG_JOB_AD_INFORMATION_ATTRS = Owner, JobStatus\n")
    (tmp_path / "logs").mkdir()
    logs = UserLogs(config=cfg)
    assert isinstance(logs.pool, PoolEventLog)
    ad = {"Owner": "alice", "JobStatus": 4}
    for i in range(30):
        logs.write(None, [SubmitEvent(i, 0, 1.7e9), TerminatedEvent(i, 0, 1.7e9, return_value=0)], "alice", ad.get)
    logs.close()
    tmp_path = tmp_path / "logs"
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["EventLog", "EventLog.1", "EventLog.2"], files
    for name in files:
        assert (tmp_path / name).stat().st_size <= 2000
    events = list(read_events(tmp_path / "EventLog"))
    assert events and [int(e.type) for e in events[:3]] == [0, 28, 5]
    assert events[1]["Owner"] == "alice" and events[1]["JobStatus"] == 4
    # the newest rotation holds the events just before the current file's
    older = list(read_events(tmp_path / "EventLog.1"))
    assert older[-1].cluster == events[0].cluster - 1 or older[-1].cluster == events[0].cluster


def test_job_form_decides_each_logs_form(tmp_path) -> None:
    cfg = config(tmp_path, "DEFAULT_USERLOG_FORMAT_OPTIONS = JSON\n")
    logs = UserLogs(config=cfg)
    plain, xml, nodes = str(tmp_path / "a.log"), str(tmp_path / "b.log"), str(tmp_path / "n.log")
    logs.write([plain], [SubmitEvent(1, 0, 1.7e9)], None, getter(UserLog=plain))
    logs.write([xml], [SubmitEvent(2, 0, 1.7e9)], None, getter(UserLog=xml, UserLogUseXML=True))
    logs.write([nodes], [SubmitEvent(3, 0, 1.7e9)], None, getter(UserLog=plain, DAGManNodesLog=nodes))
    logs.close()
    assert (tmp_path / "a.log").read_text().startswith("{\n")   # the config's form
    assert (tmp_path / "b.log").read_text().startswith("<c>\n")  # the job's
    assert (tmp_path / "n.log").read_text().startswith("000 (")  # DAGMan's nodes log: text
    assert [e.cluster for f in ("a.log", "b.log", "n.log") for e in read_events(tmp_path / f)] == [1, 2, 3]


def test_mail_program_gets_subject_address_and_body(tmp_path) -> None:
    """Without SMTP_SERVER, MAIL is run as ``MAIL -s subject address`` with the body on
    its input (HTCondor's Unix mailer); a failing program is logged, never raised."""
    import asyncio

    out = tmp_path / "mail.out"
    prog = tmp_path / "mailer"
    prog.write_text(f"#!/bin/sh\nprintf '%s|' \"$@\" > {out}\ncat >> {out}\n")
    prog.chmod(0o755)
    bad = tmp_path / "badmailer"
    bad.write_text("#!/bin/sh\necho no relay >&2\nexit 3\n")
    bad.chmod(0o755)

    async def send(program) -> Notifier:
        n = Notifier.from_config(config(tmp_path, f"MAIL = {program}\nFULL_HOSTNAME = ap.test\n"), "users.test")
        assert n is not None and n.smtp is None
        n.job_exited(getter(ClusterId=7, ProcId=1, Owner="alice", JobNotification=1, ExitCode=0, Cmd="/bin/true"))
        await n.close()
        return n

    n = asyncio.run(send(prog))
    assert n.sent == 1
    text = out.read_text()
    assert text.startswith("-s|[Condor] Condor Job 7.1|--|alice@users.test|This is an automated email from the Condor")
    assert 'on machine "ap.test".  Do not reply.\n\nCondor job 7.1\n\t/bin/true\nexited normally with status 0\n' in text
    assert asyncio.run(send(bad)).failed == 1


@pytest.mark.parametrize("bad", [{"NotifyUser": "-Smta=/home/alice/x@y"}, {"NotifyUser": "|/bin/sh"},
                                 {"NotifyUser": "a@b c@d"}, {"NotifyUser": "a@b,c@d"},
                                 {"NotifyUser": "a@b\r\nBcc: c@d"}, {"Owner": "-Sx"},
                                 {"NotifyUser": "", "Owner": "-E"}])
def test_address_that_could_be_an_option_or_a_list_gets_no_mail(tmp_path, bad: dict) -> None:
    n = Notifier.from_config(config(tmp_path, "MAIL = /bin/false\nEMAIL_DOMAIN = users.test\n"), "d")
    assert n is not None
    assert n.address(getter(**({"Owner": "alice"} | bad))) is None
    assert n.address(getter(Owner="alice", NotifyUser="a.b+x=y%z_w-v@mail-1.example.org")) == \
        "a.b+x=y%z_w-v@mail-1.example.org"


def test_mail_program_never_sees_an_option_address_or_a_tilde_escape(tmp_path) -> None:
    """The review's reproduction: NotifyUser = -Smta=... must never reach MAIL (root runs
    it); a command line with '~!' in it reaches MAIL's input indented, not as a line
    mailx would run."""
    import asyncio

    out = tmp_path / "mail.out"
    prog = tmp_path / "mailer"
    prog.write_text(f"#!/bin/sh\nprintf '%s|' \"$@\" > {out}\ncat >> {out}\n")
    prog.chmod(0o755)
    n = Notifier.from_config(config(tmp_path, f"MAIL = {prog}\nEMAIL_DOMAIN = users.test\n"), "d")
    assert n is not None
    evil = getter(ClusterId=1, ProcId=0, Owner="alice", JobNotification=1, NotifyUser="-Smta=/tmp/evil",
                  Cmd="/bin/true\n~! id")

    async def hold(get) -> None:
        n.job_held(get, "reason")
        await n.close()

    asyncio.run(hold(evil))
    assert not out.exists() and n.sent == 0
    asyncio.run(hold(getter(ClusterId=1, ProcId=0, Owner="alice", JobNotification=1, Cmd="/bin/true\n~! id")))
    text = out.read_text()
    assert text.startswith("-s|[Condor] Condor Job 1.0 put on hold|--|alice@users.test|")
    assert "\n ~! id\n" in text and "\n~" not in text


def test_edit_of_notify_user_takes_one_plain_address() -> None:
    from roost.daemons.schedd.queries import edit_value
    from roost.net.errors import RequestError

    assert edit_value("EDIT", "NotifyUser", '"bob@example.org"') == "bob@example.org"
    assert edit_value("EDIT", "notifyuser", '""') == ""
    for text in ('"-Smta=/home/alice/x@y"', '"|/bin/sh"', '"a@b, c@d"', 'strcat("-S", "x")', "12"):
        with pytest.raises(RequestError, match="NotifyUser"):
            edit_value("EDIT", "NotifyUser", text)


def test_a_trickling_smtp_server_holds_no_shared_thread_and_its_session_ends() -> None:
    """A tarpit (accepts, then sends an endless multi-line greeting a byte at a time, so
    no socket operation ever times out): the mail is given up at the session deadline,
    its socket is closed (the mail thread is free again), and meanwhile the loop's
    default executor, here one thread as on a busy schedd, keeps doing other work."""
    import asyncio
    import socket
    import threading
    from concurrent.futures import ThreadPoolExecutor

    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]
    closed = threading.Event()
    trickling = threading.Event()

    def tarpit() -> None:
        conn, _ = srv.accept()
        trickling.set()
        end = time.monotonic() + 10  # a mailer without a deadline would wait for ever
        with conn:
            try:
                while time.monotonic() < end:
                    for b in b"220-slow\r\n":
                        conn.send(bytes([b]))
                        time.sleep(0.02)  # time is the point: a byte at a time, no operation times out
            except OSError:
                closed.set()

    t = threading.Thread(target=tarpit, daemon=True)
    t.start()

    async def main() -> Notifier:
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(max_workers=1))
        n = Notifier(smtp=("127.0.0.1", port), mail_program=None, mail_from="roost@pool.test",
                     domain="users.test", admin=None, signature=None, hostname="ap.test")
        n.deadline = 1.0
        n.job_held(getter(ClusterId=1, ProcId=0, Owner="alice", JobNotification=1), "held")
        assert await asyncio.to_thread(trickling.wait, 10)  # the session is under way, the greeting trickling
        assert await asyncio.wait_for(asyncio.to_thread(lambda: 42), 3) == 42
        assert n._task is not None
        await asyncio.wait_for(asyncio.shield(n._task), 8)
        await n.close()
        return n

    try:
        n = asyncio.run(main())
        assert (n.sent, n.failed) == (0, 1)
        assert closed.wait(5), "the mailer never closed the tarpit's connection"
    finally:
        srv.close()


def _pool_log(tmp_path, where) -> UserLogs:
    return UserLogs(config=config(tmp_path, f"EVENT_LOG = {where}\nEVENT_LOG_MAX_SIZE = 0\n"))


def test_pool_event_log_takes_a_clusters_events_in_one_call(tmp_path) -> None:
    (tmp_path / "logs").mkdir()
    logs = _pool_log(tmp_path, tmp_path / "logs" / "EventLog")
    logs.to_pool_many([([SubmitEvent(7, p, 1.7e9)], getter(Owner="alice")) for p in range(500)])
    logs.close()
    assert [e.proc for e in read_events(tmp_path / "logs" / "EventLog")] == list(range(500))
    assert oct((tmp_path / "logs" / "EventLog").stat().st_mode & 0o777) == "0o644"  # like HTCondor's


def test_pool_event_log_refuses_a_symlink_a_hard_link_and_an_open_directory(tmp_path, caplog) -> None:
    """Root writes the pool's event log: a symlink or a second hard link planted in its
    place, or a directory others may write to, gets an error in the SchedLog and no
    write (and no exception: events keep flowing to the job logs)."""
    import logging
    import os

    target = tmp_path / "target"
    target.write_text("precious\n")
    safe = tmp_path / "logs"
    safe.mkdir(mode=0o755)
    safe.chmod(0o755)
    (safe / "EventLog").symlink_to(target)
    os.link(target, safe / "Linked")
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    group_dir = tmp_path / "group"  # writable by a group that is not the schedd's
    group_dir.mkdir()
    other_gid = next(g for g in (65534, 100, 1, 2, 3) if g != os.getegid())
    os.chown(group_dir, -1, other_gid)
    group_dir.chmod(0o775)
    for path in (safe / "EventLog", safe / "Linked", open_dir / "EventLog", group_dir / "EventLog"):
        caplog.clear()
        logs = _pool_log(tmp_path, path)
        with caplog.at_level(logging.ERROR, logger="roost.daemons.schedd.userlog"):
            logs.write(None, [SubmitEvent(1, 0, 1.7e9)], "alice", getter(Owner="alice"))
        logs.close()
        assert target.read_text() == "precious\n", path
        assert any("cannot write the event log" in r.getMessage() for r in caplog.records), path
    assert not (open_dir / "EventLog").exists()
    # made safe (no one else may write; group-writable by the schedd's own group is
    # fine, as under umask 002), the next write goes through
    open_dir.chmod(0o755)
    os.chown(group_dir, -1, os.getegid())
    for d in (open_dir, group_dir):
        logs = _pool_log(tmp_path, d / "EventLog")
        logs.write(None, [SubmitEvent(1, 0, 1.7e9)], "alice", getter(Owner="alice"))
        logs.close()
        assert [e.cluster for e in read_events(d / "EventLog")] == [1]
