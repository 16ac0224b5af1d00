"""The job queue's SQLite file and its group committer.

One writer thread owns the connection. Changes are queued as SQL operations
and written in batches: whatever arrives while a batch is being committed goes
into the next one, so 1,000 state changes a second cost a handful of fsyncs,
not a thousand. ``await commit(ops)`` returns only once its operations are
durable (``synchronous=FULL`` in WAL mode), which is the moment a change may be
reported to anyone.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import re
import sqlite3
from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any

from roost.daemons.schedd import salvage
from roost.net.private_files import close_to_others, create_private

log = logging.getLogger(__name__)

#: the queue file's format (SQLite's ``user_version``): 2 has removed procs as ranges
#: (``gone_ranges``), which a roost reading format 0 or 1 would not see: it would bring
#: those jobs back, so a file of a newer format than this roost's is refused
FORMAT = 2


class NewerFormat(Exception):  # noqa: N818 -- says what the file is
    """The queue file was written by a newer roost, in a format this one cannot read."""


def _format_of(path: str) -> int | None:
    """The file's ``user_version``; None where there is no file or it cannot be read
    (then salvage decides)."""
    if not os.path.exists(path):
        return None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return None


SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS clusters (
    cluster INTEGER PRIMARY KEY, owner TEXT NOT NULL, ad TEXT NOT NULL, procs TEXT, layout TEXT);
CREATE TABLE IF NOT EXISTS procs (
    cluster INTEGER NOT NULL, proc INTEGER NOT NULL, status INTEGER NOT NULL,
    diff TEXT, claim TEXT, PRIMARY KEY (cluster, proc)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS gone_ranges (
    cluster INTEGER NOT NULL, lo INTEGER NOT NULL, hi INTEGER NOT NULL, PRIMARY KEY (cluster, lo)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS history (
    cluster INTEGER NOT NULL, proc INTEGER NOT NULL, owner TEXT NOT NULL,
    completion INTEGER NOT NULL, status INTEGER NOT NULL, ad TEXT NOT NULL,
    PRIMARY KEY (cluster, proc));
CREATE TABLE IF NOT EXISTS history_clusters (cluster INTEGER PRIMARY KEY, ad TEXT NOT NULL);
DROP INDEX IF EXISTS history_owner;
DROP INDEX IF EXISTS history_completion;
CREATE INDEX IF NOT EXISTS history_by_owner ON history (owner, completion, cluster, proc);
CREATE INDEX IF NOT EXISTS history_order ON history (completion, cluster, proc);
CREATE TABLE IF NOT EXISTS pending_events (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL, owner TEXT, text TEXT NOT NULL);
"""

# One operation: (sql, params) runs once; (sql, [params, ...], True) runs executemany.
Op = tuple[Any, ...]

_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)
_dumps = _encoder.encode
# JSONEncoder.encode builds its C encoder anew at every call (~2 µs of the ~4 a small
# ad costs); built once here, with the very settings encode would give it
_c_encode = (json.encoder.c_make_encoder(None, _encoder.default, json.encoder.encode_basestring, None, ":", ",",
                                         False, False, True)
             if json.encoder.c_make_encoder is not None else None)


def dumps(obj: Any) -> str:
    """``obj`` as compact JSON text (non-ASCII kept as is)."""
    if _c_encode is None or type(obj) is not dict:
        return _dumps(obj)
    return "".join(_c_encode(obj, 0))


def secure_queue_files(path: str) -> list[str]:
    """Close the queue database, its WAL, shared memory and journal, and the damaged
    copies kept aside, to group and others: they hold every job's ad and each running
    job's ClaimId, which is enough to take over its claim. SQLite opens an existing
    -wal/-shm as it finds them, so a 0644 left by an older roost must be fixed here,
    before the first connection. The files whose mode changed."""
    directory, base = os.path.split(path)
    names = [path + side for side in ("", "-wal", "-shm", "-journal")]
    with contextlib.suppress(FileNotFoundError):
        names += [os.path.join(directory or ".", n) for n in sorted(os.listdir(directory or "."))
                  if n.startswith(base + ".damaged-")]
    return [n for n in names if close_to_others(n)]


#: a batch of at least this many rows is written on the helper thread, not the loop's
BIG_BATCH = 500
#: an INSERT of at least this many rows goes as statements of up to MULTI_ROWS rows (Store._many)
MULTI_ROWS_FROM = 16
MULTI_ROWS = 500
#: INSERT ... VALUES (?, ...) [ON CONFLICT ...]: the statement, its row, what follows it
_INSERT_VALUES = re.compile(r"^(\s*INSERT\b.*?\bVALUES)\s*(\((?:\s*\?\s*,)*\s*\?\s*\))(\s+ON\s+CONFLICT\b.*)?\s*$",
                            re.S | re.I)
_forms: dict[str, tuple[str, str, str, int] | None] = {}


def _multi_form(sql: str) -> tuple[str, str, str, int] | None:
    """(head, one row's placeholders, tail, its width) of an INSERT whose rows may go
    several to a statement; None for any other statement."""
    if sql not in _forms:
        m = _INSERT_VALUES.match(sql)
        if m is not None and "?" in (m.group(1) + (m.group(3) or "")):
            m = None  # a parameter outside the row (an upsert's SET x = ?) cannot repeat per row
        _forms[sql] = (m.group(1), m.group(2), m.group(3) or "", m.group(2).count("?")) if m else None
    return _forms[sql]


def _rows(ops: Sequence[Op]) -> int:
    """Rows a batch touches, about: one per statement, or per parameter set of an executemany."""
    return sum(len(op[1]) if len(op) == 3 and op[2] else 1 for op in ops)


class Store:
    """The SQLite file under ``spool/job_queue.db`` and the batching writer.

    Transactions run on the event loop's thread (a small commit costs ~20 µs with
    ``synchronous=NORMAL``); durability comes from fsyncing the WAL file afterwards in
    a helper thread, once for every batch. SQLite's WAL frames are checksummed and
    written before the commit returns, so once the WAL is fsynced the transaction
    survives kill -9 and power loss alike, and the loop never blocks on the disk.
    A batch of ``BIG_BATCH`` rows or more (condor_rm of a big queue) is written on the
    helper thread instead, so the loop answers meanwhile; batches stay one at a time.
    """

    def __init__(self, path: str, *, fsync: bool = True) -> None:
        self.path = path
        self.fsync = fsync
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        #: the files an older roost left open to others, now closed (the schedd logs them)
        self.closed_files = secure_queue_files(path)
        version = _format_of(path)
        if version is not None and version > FORMAT:
            raise NewerFormat(f"{path} was written by a newer roost (queue format {version}; this roost reads "
                              f"up to {FORMAT}): run that roost, or move the file aside to start empty")
        why = salvage.damage(path)
        #: what was done about a damaged file (the schedd logs it), else None
        self.repaired = salvage.salvage(path, why, SCHEMA) if why is not None else None
        create_private(path)
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.executescript(SCHEMA)
        self._add_layout_column()
        self.conn.execute(f"PRAGMA user_version = {FORMAT}")
        #: how many parameters one statement may have (SQLite's limit: 999 before 3.32)
        self._max_vars = self.conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        self._wal_fd: int | None = None
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="jobqueue-fsync")
        self._reader = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="jobqueue-read")
        self._reader_conn: sqlite3.Connection | None = None
        self._pending: list[Op] = []
        self._waiters: list[asyncio.Future[None]] = []
        self._flusher: asyncio.Task[None] | None = None
        self.batches = 0
        self.ops_written = 0
        if fsync:
            self._sync_dir()

    def _sync_dir(self) -> None:
        """Make the database and WAL files' directory entries durable (once)."""
        fd = os.open(os.path.dirname(os.path.abspath(self.path)), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _add_layout_column(self) -> None:
        """A file from before sparse clusters (jobqueue's docstring) gains their column;
        its clusters keep NULL there, which means a procs row per proc."""
        columns = {row[1] for row in self.conn.execute("PRAGMA table_info(clusters)")}
        if "layout" not in columns:
            self.conn.execute("ALTER TABLE clusters ADD COLUMN layout TEXT")

    # -- reading (at start-up, before the event loop serves anyone) ------------------
    def meta(self, key: str, default: str | None = None) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def load_clusters(self) -> Iterable[tuple[int, str, str, str | None, str | None]]:
        """(cluster, owner, cluster ad, the procs' differences as submitted: {ProcId: diff},
        the layout of a sparse cluster: {"ranges": [[first, end], ...], "gjid": [prefix, suffix]})."""
        return self.conn.execute("SELECT cluster, owner, ad, procs, layout FROM clusters ORDER BY cluster")

    def load_procs(self) -> Iterable[tuple[int, int, int, str | None, str | None]]:
        return self.conn.execute("SELECT cluster, proc, status, diff, claim FROM procs ORDER BY cluster, proc")

    def load_gone(self) -> Iterable[tuple[int, int, int]]:
        """(cluster, lo, hi): a sparse cluster's procs ``lo`` to ``hi - 1`` have left the
        queue (a bulk removal's; queuefinish.py), whatever procs rows say of them."""
        return self.conn.execute("SELECT cluster, lo, hi FROM gone_ranges ORDER BY cluster, lo")

    def pending_events(self) -> list[tuple[int, str, str | None, str]]:
        """(id, log path, owner, event text) of events committed with a job's end and
        perhaps never written (the schedd died in between)."""
        return self.conn.execute("SELECT id, path, owner, text FROM pending_events ORDER BY id").fetchall()

    def history_counts(self) -> Iterable[tuple[int, int]]:
        """(cluster, finished procs) for clusters that still have procs in the queue."""
        # driven from the clusters, counted on the history's (cluster, proc) key: a join
        # SQLite may start from the history reads every row's page (200,000 finished
        # jobs: 0.4 s at every start)
        rows = self.conn.execute(
            "SELECT c.cluster, (SELECT COUNT(*) FROM history h WHERE h.cluster = c.cluster) FROM clusters c"
        )
        return [(cid, n) for cid, n in rows if n]

    async def history(
        self, owner: str | None = None, clusters: Sequence[int] | None = None, limit: int | None = None,
        offset: int = 0,
    ) -> list[tuple[int, int, dict[str, Any]]]:
        """``history_rows`` on a reader thread with its own connection (WAL readers never
        block the writer, and a long history query never blocks the event loop)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._reader, self._read_history, owner, clusters, limit, offset)

    def _read_history(
        self, owner: str | None, clusters: Sequence[int] | None, limit: int | None, offset: int
    ) -> list[tuple[int, int, dict[str, Any]]]:
        if self._reader_conn is None:
            self._reader_conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        return self.history_rows(owner, clusters, limit, conn=self._reader_conn, offset=offset)

    def history_rows(
        self,
        owner: str | None = None,
        clusters: Sequence[int] | None = None,
        limit: int | None = None,
        conn: sqlite3.Connection | None = None,
        offset: int = 0,
    ) -> list[tuple[int, int, dict[str, Any]]]:
        """(cluster, proc, ad) of finished jobs, newest first (``limit`` of them from
        ``offset``). A row holds what is the
        proc's own; its cluster's ad (history_clusters) is under it. Rows written before
        history_clusters existed hold the whole ad, which the merge leaves as it is."""
        sql = ("SELECT h.cluster, h.proc, h.ad, c.ad FROM history h"
               " LEFT JOIN history_clusters c ON c.cluster = h.cluster")
        where: list[str] = []
        args: list[Any] = []
        if owner is not None:
            where.append("h.owner = ?")
            args.append(owner)
        if clusters is not None:
            where.append(f"h.cluster IN ({','.join('?' * len(clusters))})")
            args.extend(clusters)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY h.completion DESC, h.cluster DESC, h.proc DESC"
        if limit is not None and limit >= 0:
            sql += f" LIMIT {int(limit)} OFFSET {max(0, int(offset))}"
        loads = json.loads
        bases: dict[int, dict[str, Any]] = {}
        out: list[tuple[int, int, dict[str, Any]]] = []
        for cid, proc, own, base_text in (conn or self.conn).execute(sql, args):
            ad = loads(own)
            if base_text is not None:
                base = bases.get(cid)
                if base is None:
                    base = bases[cid] = loads(base_text)
                ad = {**base, **ad}
            out.append((cid, proc, ad))
        return out

    # -- writing ------------------------------------------------------------------------
    async def commit(self, ops: Sequence[Op]) -> None:
        """Queue ``ops`` and return once they are durable (in one transaction with others)."""
        await self.submit(ops)

    def submit(self, ops: Sequence[Op]) -> asyncio.Future[None]:
        """Queue ``ops`` now; the future resolves once they are durable. Batches commit
        in order, so anything queued before is durable by then too."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._pending.extend(ops)
        self._waiters.append(fut)
        if self._flusher is None or self._flusher.done():
            self._flusher = loop.create_task(self._flush_loop())
        return fut

    async def barrier(self) -> None:
        """Wait until every change queued so far is durable (no-op when none is)."""
        if self._pending or self._waiters or (self._flusher is not None and not self._flusher.done()):
            await self.submit([])

    def queue(self, ops: Sequence[Op]) -> None:
        """Queue ``ops`` without waiting (they ride with the next batch)."""
        self._pending.extend(ops)

    async def _flush_loop(self) -> None:
        loop = asyncio.get_running_loop()
        await asyncio.sleep(0)  # let everything ready in this loop turn join the batch
        while self._pending or self._waiters:
            ops, self._pending = self._pending, []
            waiters, self._waiters = self._waiters, []
            try:
                if _rows(ops) >= BIG_BATCH:
                    # condor_rm of 100,000 jobs: SQLite works in the helper thread (it lets go of
                    # the GIL), the loop goes on answering and preparing the next batch
                    await loop.run_in_executor(self._executor, self._write_and_sync, ops)
                else:
                    self._write(ops)
                    if self.fsync and ops:
                        await loop.run_in_executor(self._executor, self._sync_wal)
            except Exception as e:  # a failed batch fails every waiter; the daemon reports it
                log.exception("job queue commit failed")
                for w in waiters:
                    if not w.done():
                        w.set_exception(e)
                continue
            for w in waiters:
                if not w.done():
                    w.set_result(None)

    def _write_and_sync(self, ops: list[Op]) -> None:
        self._write(ops)
        if self.fsync:
            self._sync_wal()

    def _sync_wal(self) -> None:
        if self._wal_fd is None:
            try:
                self._wal_fd = os.open(self.path + "-wal", os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:  # checkpointed away: the main file holds everything
                fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
                return
            self._sync_dir()
        os.fsync(self._wal_fd)

    def _write(self, ops: list[Op]) -> None:
        if not ops:
            return
        c = self.conn
        c.execute("BEGIN")
        try:
            for op in ops:
                if len(op) == 3 and op[2]:
                    self._many(op[0], op[1])
                else:
                    c.execute(op[0], op[1])
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise
        self.batches += 1
        self.ops_written += len(ops)

    def _many(self, sql: str, rows: Sequence[Any]) -> None:
        """``executemany(sql, rows)``; an INSERT of many rows as statements of a few
        hundred rows each (``VALUES (...), (...), ...``). executemany steps SQLite once
        per row, letting go of the GIL and taking it back each time: on the helper
        thread, while the loop's thread runs Python, every take waited for the loop's
        switch interval, so the two took turns (100,000 history rows: 0.3 s alone,
        9.6 s beside a busy loop). One statement binds its rows at once and steps
        once (~half the CPU, and the loop runs meanwhile). Same rows, same order, one
        transaction: what the statements do is what executemany did."""
        if not isinstance(rows, list | tuple):
            rows = list(rows)
        form = (_multi_form(sql) if len(rows) >= MULTI_ROWS_FROM and isinstance(rows[0], tuple | list)
                else None)
        if form is None:
            self.conn.executemany(sql, rows)
            return
        head, one, tail, width = form
        per = max(1, min(MULTI_ROWS, self._max_vars // width))
        full = ""
        for i in range(0, len(rows), per):
            part = rows[i : i + per]
            if len(part) == per:
                text = full = full or f"{head} {','.join([one] * per)}{tail}"
            else:
                text = f"{head} {','.join([one] * len(part))}{tail}"
            self.conn.execute(text, list(chain.from_iterable(part)))

    def trim_history_ops(self, max_rows: int) -> list[Op]:
        """Operations that drop the oldest finished jobs beyond ``max_rows`` (MAX_HISTORY_ROWS)."""
        (n,) = self.conn.execute("SELECT COUNT(*) FROM history").fetchone()
        if n <= max_rows:
            return []
        return [
            ("DELETE FROM history WHERE rowid IN (SELECT rowid FROM history ORDER BY completion, cluster, proc LIMIT ?)",
             (n - max_rows,)),
            # cluster ads no history row stands on any more (a cluster still in the queue keeps its own)
            ("DELETE FROM history_clusters WHERE NOT EXISTS (SELECT 1 FROM history h WHERE h.cluster ="
             " history_clusters.cluster) AND cluster NOT IN (SELECT cluster FROM clusters)", ()),
        ]

    def write_now(self, ops: list[Op]) -> None:
        """Write synchronously (start-up repairs, before serving)."""
        self._write(ops)

    def close(self) -> None:
        self._executor.shutdown(wait=True)
        if self._reader_conn is not None:
            self._reader.submit(self._reader_conn.close).result()
        self._reader.shutdown(wait=True)
        if self._wal_fd is not None:
            os.close(self._wal_fd)
            self._wal_fd = None
        self.conn.close()
