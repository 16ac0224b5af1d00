"""The schedd's bulk actions (bulk.py) on a real SQLite queue, without sockets: a schedd
that dies between a chunk's commit and its events' write logs them at its next start,
once; a bulk text a kill cut short is completed, not doubled; hold, release and edit of
many jobs set what the one-job actions set."""

from __future__ import annotations

import asyncio
import getpass
import re
from collections import Counter
from pathlib import Path

import pytest

from roost.config import Config
from roost.daemons.schedd import bulk
from roost.daemons.schedd.jobqueue import JobQueue
from roost.daemons.schedd.lifecycle import JobLifecycle
from roost.daemons.schedd.store import Store
from roost.daemons.schedd.userlog import UserLogs
from roost.eventlog import AbortedEvent, format_event
from roost.vocabulary import JobEventType, JobStatus

_EVENT = re.compile(r"^(\d{3}) \((\d+)\.(\d+)\.\d+\) ", re.M)


def _events(log: Path, number: int) -> Counter[tuple[int, int]]:
    text = log.read_text() if log.exists() else ""
    return Counter((int(c), int(p)) for n, c, p in _EVENT.findall(text) if int(n) == number)


def _lifecycle(db: Path) -> JobLifecycle:
    store = Store(str(db), fsync=True)
    queue = JobQueue(store)
    queue.load()
    return JobLifecycle(None, store, queue, UserLogs(), on_idle=lambda j: None, on_change=lambda: None)  # type: ignore[arg-type]


def _submit(life: JobLifecycle, log: Path, n: int) -> int:
    cid = life.queue.new_cluster_id()
    ad = {"Cmd": "/bin/true", "JobStatus": JobStatus.IDLE, "UserLog": str(log), "Iwd": str(log.parent)}
    asyncio.run(life.store.commit(life.queue.add_cluster(cid, getpass.getuser(), ad, [{"ProcId": i} for i in range(n)])))
    return cid


def test_a_schedd_dying_after_a_chunk_commits_logs_its_events_at_restart_once(tmp_path, monkeypatch):
    db, log = tmp_path / "job_queue.db", tmp_path / "t.log"
    n = 5 * bulk.CHUNK // 2  # three chunks
    life = _lifecycle(db)
    cid = _submit(life, log, n)
    real = life.userlogs.write_text
    calls = []

    def dies_at_the_second_write(path, text, owner=None):
        calls.append(path)
        if len(calls) >= 2:  # the second chunk is durable; the schedd dies before logging it
            raise SystemError("killed")
        real(path, text, owner)

    monkeypatch.setattr(life.userlogs, "write_text", dies_at_the_second_write)

    async def remove() -> None:
        with pytest.raises(SystemError):
            await life.remove_many(list(life.queue.select()), "bulk test")

    asyncio.run(remove())
    assert len(_events(log, JobEventType.JOB_ABORTED)) == bulk.CHUNK  # only the first chunk's were written
    life.userlogs.close()
    life.store.close()

    again = _lifecycle(db)  # the next schedd
    assert again.replay_pending_events() >= 1
    aborted = _events(log, JobEventType.JOB_ABORTED)
    committed = n - again.queue.totals_named()["Total"]
    assert committed >= 2 * bulk.CHUNK  # what committed is removed...
    assert len(aborted) == committed and set(aborted.values()) == {1}  # ...and logged once
    assert again.replay_pending_events() == 0 and again.store.pending_events() == []

    async def the_rest() -> None:
        await again.remove_many(list(again.queue.select()), "bulk test")
        await again.store.barrier()

    asyncio.run(the_rest())
    aborted = _events(log, JobEventType.JOB_ABORTED)
    assert len(aborted) == n and set(aborted.values()) == {1}
    rows = again.store.history_rows()
    assert Counter((r[0], r[1]) for r in rows) == Counter({(cid, p): 1 for p in range(n)})
    again.userlogs.close()
    again.store.close()


def test_a_bulk_text_cut_short_is_completed_not_doubled(tmp_path):
    log = tmp_path / "t.log"
    text = "".join(format_event(AbortedEvent(7, p, 1_700_000_000.0 + p, reason="r")) for p in range(50))
    cut = text.index("009 (007.020.000)") + 10  # a kill in the middle of the 21st event
    log.write_text("000 (007.000.000) earlier\n...\n" + text[:cut])
    logs = UserLogs()
    assert logs.replay(str(log), text, None)
    logs.close()
    assert log.read_text() == "000 (007.000.000) earlier\n...\n" + text
    assert not UserLogs().replay(str(log), text, None)  # all there: nothing appended


def test_hold_release_and_edit_many_set_what_one_job_actions_set(tmp_path):
    db, log = tmp_path / "job_queue.db", tmp_path / "t.log"
    n = bulk.CHUNK + 10
    life = _lifecycle(db)
    _submit(life, log, n)
    one = _submit(life, tmp_path / "one.log", 1)

    async def work() -> None:
        jobs = [j for j in life.queue.select() if j.cluster.id != one]
        held = await life.hold_many(jobs, "bulk", 1)
        assert len(held) == n
        assert await life.hold(next(iter(life.queue.select([str(one)]))), "bulk", 1)
        assert len(await life.hold_many(jobs, "again", 1)) == 0  # held already: not again
        released = await life.release_many(jobs, "let go")
        assert len(released) == n
        edited = await life.edit_many(jobs, {"notE": 5})
        assert len(edited) == n
        await life.store.barrier()

    asyncio.run(work())
    single = next(iter(life.queue.select([str(one)])))
    for job in life.queue.select():
        if job is single:
            continue
        assert job.status == JobStatus.IDLE
        assert job.get("LastHoldReason") == "bulk" and job.get("ReleaseReason") == "let go"
        assert job.get("HoldReason") is None and job.get("NumHolds") == 1
        assert job.get("NumHoldsByReason") == single.get("NumHoldsByReason")
        assert job.get("notE") == 5
    assert single.status == JobStatus.HELD and single.get("HoldReason") == "bulk"
    assert len(_events(log, JobEventType.JOB_HELD)) == n and len(_events(log, JobEventType.JOB_RELEASED)) == n
    life.store.close()
    again = _lifecycle(db)  # and so it reads back
    back = again.queue.job(1, n - 1)
    assert back is not None and back.status == JobStatus.IDLE and back.get("notE") == 5 and back.get("NumHolds") == 1
    again.store.close()


def test_a_bulk_event_text_is_the_events_own_text():
    from roost.eventlog import HeldEvent, ReleasedEvent
    from roost.eventlog.writer import EventFormatter

    for form in (EventFormatter(), EventFormatter(utc=True, iso=False)):
        for make in (lambda c, p: AbortedEvent(c, p, 1_700_000_000.5, reason="via condor_rm"),
                     lambda c, p: HeldEvent(c, p, 1_700_000_000.5, reason="r", code=1, subcode=0),
                     lambda c, p: ReleasedEvent(c, p, 1_700_000_000.5, reason="let go")):
            head, tail = form.alike(make(0, 0))
            for c, p in ((1, 0), (12, 7), (12345, 100000)):
                assert "%s%03d.%03d%s" % (head, c, p, tail) == form.format(make(c, p))  # noqa: UP031


def test_a_bulk_removal_of_jobs_without_a_log_still_writes_the_pool_event_log(tmp_path):
    """Jobs with no user log get no event of their own (none is made for them), but the
    pool's event log (EVENT_LOG) has every job's 009, each once."""
    cfg_path = tmp_path / "roost_config"
    cfg_path.write_text(f"EVENT_LOG = {tmp_path}/EventLog\nEVENT_LOG_MAX_SIZE = 0\n")
    cfg = Config.load(cfg_path, env={}, facts={"FULL_HOSTNAME": "ap.example.org"})
    store = Store(str(tmp_path / "job_queue.db"), fsync=False)
    queue = JobQueue(store)
    queue.load()
    life = JobLifecycle(None, store, queue, UserLogs(config=cfg), on_idle=lambda j: None,  # type: ignore[arg-type]
                        on_change=lambda: None)
    n = bulk.CHUNK + 7
    cid = queue.new_cluster_id()
    asyncio.run(store.commit(queue.add_cluster(cid, getpass.getuser(), {"Cmd": "/bin/true", "JobStatus": 1},
                                               [{"ProcId": i} for i in range(n)])))

    async def remove() -> None:
        assert len(await life.remove_many(list(queue.select()), "no log")) == n
        await store.barrier()

    asyncio.run(remove())
    life.userlogs.close()
    aborted = _events(tmp_path / "EventLog", JobEventType.JOB_ABORTED)
    assert aborted == Counter({(cid, p): 1 for p in range(n)})
    assert len(store.history_rows()) == n and store.pending_events() == []
    store.close()
