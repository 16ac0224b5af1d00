"""A damaged job queue file: detected at start, moved aside with its WAL, every row
that can still be read kept (real SQLite files, really damaged)."""

from __future__ import annotations

import asyncio
import os

from roost.daemons.schedd import salvage
from roost.daemons.schedd.jobqueue import JobQueue
from roost.daemons.schedd.store import Store


def _fill(db, clusters: int, procs: int = 20) -> None:
    """A queue of ``clusters`` clusters (big ads: many pages), checkpointed into the file."""
    q = JobQueue(Store(str(db), fsync=False))
    q.load()

    async def work() -> None:
        for _ in range(clusters):
            cid = q.new_cluster_id()
            ad = {"Cmd": "/bin/true", "JobStatus": 1, "Padding": "x" * 3000}
            await q.store.commit(q.add_cluster(cid, "alice", ad, [{"ProcId": i, "Args": "y" * 200} for i in range(procs)]))

    asyncio.run(work())
    q.store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    q.store.close()


def _load(db) -> tuple[JobQueue, str | None]:
    store = Store(str(db), fsync=False)
    q = JobQueue(store)
    q.load()
    return q, store.repaired


def test_a_sound_file_is_left_alone(tmp_path):
    db = tmp_path / "job_queue.db"
    _fill(db, 5)
    assert salvage.damage(str(db)) is None
    q, repaired = _load(db)
    assert repaired is None and len(q.clusters) == 5
    q.store.close()
    assert not [p for p in os.listdir(tmp_path) if ".damaged-" in p]


def test_a_truncated_file_keeps_every_readable_job(tmp_path):
    db = tmp_path / "job_queue.db"
    _fill(db, 60)
    size = os.path.getsize(db)
    with open(db, "r+b") as f:
        f.truncate(size * 6 // 10)
    assert salvage.damage(str(db)) is not None
    q, repaired = _load(db)
    assert repaired is not None and str(db) in repaired and "damaged" in repaired
    aside = [p for p in os.listdir(tmp_path) if p.startswith("job_queue.db.damaged-")]
    assert aside, os.listdir(tmp_path)
    kept = len(q.clusters)
    assert 0 < kept < 60, repaired
    assert f"{kept} clusters" in repaired
    for cluster in q.clusters.values():  # what was kept is whole and usable
        assert cluster.ad["Cmd"] == "/bin/true"
        for job in cluster.procs.values():
            assert job.classad().eval("Cmd") == "/bin/true"
    # numbering goes on after every cluster the file ever named
    assert q.next_cluster == 61
    q.store.close()
    # the new file is sound and holds the same
    again, repaired = _load(db)
    assert repaired is None and len(again.clusters) == kept
    again.store.close()


def test_overwritten_pages_in_the_middle(tmp_path):
    db = tmp_path / "job_queue.db"
    _fill(db, 60)
    size = os.path.getsize(db)
    with open(db, "r+b") as f:  # a run of pages full of junk, past the schema page
        f.seek(size // 2 // 4096 * 4096)
        f.write(os.urandom(4096 * 6))
    q, repaired = _load(db)
    assert repaired is not None
    assert len(q.clusters) > 30, repaired  # forwards to the hole, backwards to it
    q.store.close()


def test_not_a_database_at_all(tmp_path):
    db = tmp_path / "job_queue.db"
    db.write_bytes(b"this is not SQLite" * 100)
    q, repaired = _load(db)
    assert repaired is not None and "file is not a database" in repaired
    assert "0 clusters" in repaired and len(q.clusters) == 0
    # the new queue works
    asyncio.run(q.store.commit(q.add_cluster(q.new_cluster_id(), "bob", {"Cmd": "/bin/true"}, [{"ProcId": 0}])))
    q.store.close()
    again, repaired = _load(db)
    assert repaired is None and [len(c.procs) for c in again.clusters.values()] == [1]
    again.store.close()


def test_a_file_that_cannot_be_read_is_no_reason_to_move_it(tmp_path):
    """Damage only: a file SQLite cannot open (here a directory in its place) stops the
    schedd with a clear error, and nothing is moved."""
    import pytest

    db = tmp_path / "job_queue.db"
    db.mkdir()
    with pytest.raises(salvage.QueueFileError, match="cannot be read"):
        Store(str(db), fsync=False)
    assert db.is_dir() and not [p for p in os.listdir(tmp_path) if ".damaged-" in p]


def test_the_salvaged_queue_is_as_private_as_the_old(tmp_path):
    db = tmp_path / "job_queue.db"
    db.write_bytes(b"this is not SQLite" * 100)
    os.chmod(db, 0o644)
    old = os.umask(0o022)
    try:
        q, repaired = _load(db)
        asyncio.run(q.store.commit(q.add_cluster(q.new_cluster_id(), "bob", {"Cmd": "/bin/true"}, [{"ProcId": 0}])))
        modes = {p.name: os.stat(p).st_mode & 0o777 for p in tmp_path.iterdir()}
        q.store.close()
    finally:
        os.umask(old)
    assert repaired is not None and len(modes) >= 4, modes  # the new file, its WAL and shm, the damaged one
    assert set(modes.values()) == {0o600}, modes
