"""A damaged job queue file: found at start, moved aside, every readable job kept.

SQLite's WAL already makes a torn write harmless (frames after the last valid
checksum are ignored: only unacknowledged changes go). What it cannot survive is
damage to the file itself: a disk that lost blocks, a file truncated by a full
disk or a careless copy, bytes overwritten. Then SQLite answers "database disk
image is malformed" at some read, long after start. So before the schedd loads
its queue, ``damage`` runs SQLite's ``quick_check`` over the queue's own tables (not
the history: 200,000 finished jobs took 7 s to check at every start, and a damaged
history is found by the history query that reads it); on any complaint it moves the
file (with its WAL) aside as ``job_queue.db.damaged-<time>``, reads what rows it
still can from that copy (each table scanned forwards until the first unreadable
page, then backwards from its end to the same place) and writes them into a new
file. One line in the schedd's log names the file, the damage, where the copy
went and what was kept.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import struct
import time
from bisect import bisect_right
from collections.abc import Callable, Iterator
from typing import Any

from roost.daemons.schedd.plainprocs import ranges_less, runs
from roost.net.private_files import create_private

# table -> (columns, key columns, a check of each row beyond being readable)
_TABLES: dict[str, tuple[str, str, Callable[[tuple[Any, ...]], bool]]] = {
    "meta": ("key, value", "key", lambda r: isinstance(r[0], str) and isinstance(r[1], str)),
    "clusters": ("cluster, owner, ad, procs, layout", "cluster",
                 lambda r: type(r[0]) is int and _is_json_object(r[2]) and (r[3] is None or _is_json_object(r[3]))
                 and (r[4] is None or _is_json_object(r[4]))),
    "procs": ("cluster, proc, status, diff, claim", "cluster, proc",
              lambda r: type(r[0]) is int and type(r[1]) is int and type(r[2]) is int
              and (r[3] is None or _is_json_object(r[3])) and (r[4] is None or _is_json_object(r[4]))),
    "gone_ranges": ("cluster, lo, hi", "cluster, lo",
                    lambda r: type(r[0]) is int and type(r[1]) is int and type(r[2]) is int and r[1] < r[2]),
    "history": ("cluster, proc, owner, completion, status, ad", "cluster, proc",
                lambda r: type(r[0]) is int and type(r[1]) is int and _is_json_object(r[5])),
    "history_clusters": ("cluster, ad", "cluster", lambda r: type(r[0]) is int and _is_json_object(r[1])),
    "pending_events": ("id, path, owner, text", "id",
                       lambda r: type(r[0]) is int and isinstance(r[1], str) and isinstance(r[3], str)),
}
#: the tables checked at every start: the queue's (what the schedd loads), not the history
_CHECKED = ("meta", "clusters", "procs", "gone_ranges", "pending_events")
#: what SQLite says of a damaged file (anything else, "database is locked" or an I/O
#: error, is no reason to move a queue aside)
_DAMAGED = ("malformed", "not a database", "corrupt", "encrypted")


class QueueFileError(Exception):
    """The queue file cannot be opened or read for a reason other than damage."""
_SIDE_FILES = ("-wal", "-shm")


def _is_json_object(text: Any) -> bool:
    if not isinstance(text, str):
        return False
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def damage(path: str) -> str | None:
    """What is wrong with the queue file at ``path`` (None: nothing, or no file yet)."""
    if not os.path.exists(path):
        return None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as e:
        return _judge(path, e)
    try:
        present = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        rows = []
        for table in _CHECKED:
            if table in present:
                rows += [r for r in conn.execute(f"PRAGMA quick_check({table})").fetchall() if r != ("ok",)]
        if not rows:
            rows = [("ok",)]
    except sqlite3.Error as e:
        return _judge(path, e)
    finally:
        conn.close()
    if rows == [("ok",)]:
        return None
    first = str(rows[0][0]) if rows and rows[0] else "quick_check failed"
    return first if len(rows) == 1 else f"{first} (and {len(rows) - 1} more problems)"


def _judge(path: str, e: sqlite3.Error) -> str:
    """Damage (its words), or QueueFileError for anything else (locked, unreadable)."""
    text = str(e)
    if any(word in text.lower() for word in _DAMAGED):
        return text
    raise QueueFileError(f"job queue {path} cannot be read: {text} (nothing was moved; fix it and start again)")


def _scan(conn: sqlite3.Connection, table: str, columns: str, key: str, order: str) -> Iterator[tuple[Any, ...]]:
    """Rows in key order (``ASC``/``DESC``) until the first that cannot be read."""
    cur = conn.execute(f"SELECT {columns} FROM {table} ORDER BY {key.replace(',', f' {order},')} {order}")
    while True:
        try:
            row = cur.fetchone()  # one at a time: a failing batch would lose the rows before
        except sqlite3.Error:
            return
        if row is None:
            return
        yield row


def _readable_rows(conn: sqlite3.Connection, table: str) -> tuple[list[tuple[Any, ...]], int]:
    """What can be read of ``table``: (good rows, rows read but refused)."""
    columns, key, good = _TABLES[table]
    # a column a file from an older roost lacks (clusters.layout) reads as NULL
    have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
    columns = ", ".join(c if c in have else "NULL" for c in (c.strip() for c in columns.split(",")))
    nkey = key.count(",") + 1
    got: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    with contextlib.suppress(sqlite3.Error):
        for row in _scan(conn, table, columns, key, "ASC"):
            got[row[:nkey]] = row
    with contextlib.suppress(sqlite3.Error):
        for row in _scan(conn, table, columns, key, "DESC"):
            if row[:nkey] in got:
                break  # met the forward scan: the rest was read already
            got[row[:nkey]] = row
    kept = [r for r in got.values() if good(r)]
    return kept, len(got) - len(kept)


def _submitted(clusters: list[tuple[Any, ...]]) -> dict[int, list[tuple[int, int]]]:
    """A sparse cluster's submitted ProcId ranges (its layout), by cluster."""
    out: dict[int, list[tuple[int, int]]] = {}
    for row in clusters:
        if row[4] is not None:
            with contextlib.suppress(ValueError, TypeError, AttributeError):
                out[row[0]] = [(int(lo), int(hi)) for lo, hi in json.loads(row[4]).get("ranges") or ()]
    return out


def _gone_by_cluster(rows: list[tuple[Any, ...]]) -> dict[int, list[tuple[int, int]]]:
    out: dict[int, list[tuple[int, int]]] = {}
    for cid, lo, hi in rows:
        out.setdefault(cid, []).append((lo, hi))
    return out


def _jobs_kept(clusters: list[tuple[Any, ...]], procs: list[tuple[Any, ...]], gone: list[tuple[Any, ...]]) -> int:
    """Jobs in the queue: a sparse cluster's (jobqueue's docstring) are its submitted
    ProcId ranges less its gone ranges and GONE rows; an older cluster's are its procs rows."""
    gone_of = _gone_by_cluster(gone)
    left = {cid: ranges_less(ranges, gone_of.get(cid, []), 0)[0] for cid, ranges in _submitted(clusters).items()}
    n = sum(hi - lo for ranges in left.values() for lo, hi in ranges)
    for row in procs:
        if row[0] not in left:
            n += 1
        elif row[2] == -1 and _within(left[row[0]], row[1]):  # jobqueue.GONE
            n -= 1
    return n


def _within(ranges: list[tuple[int, int]], proc: int) -> bool:
    i = bisect_right(ranges, (proc, float("inf"))) - 1
    return i >= 0 and ranges[i][0] <= proc < ranges[i][1]


def _history_is_gone(kept: dict[str, list[tuple[Any, ...]]]) -> None:
    """A job with a history row has left the queue: whatever the damage took of the
    queue's own marks (a page of GONE rows or gone ranges), it must not come back. Its
    sparse cluster gains a gone range, an older cluster's procs row goes."""
    submitted = _submitted(kept.get("clusters", []))
    finished: dict[int, list[int]] = {}
    for row in kept.get("history", []):
        finished.setdefault(row[0], []).append(row[1])
    gone = _gone_by_cluster(kept.get("gone_ranges", []))
    out: list[tuple[Any, ...]] = []  # (those of a cluster lost, or not sparse, are dropped)
    emptied: set[int] = set()
    for cid, sub in submitted.items():
        ranges = gone.get(cid, []) + runs(finished.get(cid, []))
        merged: list[tuple[int, int]] = []
        for lo, hi in sorted(ranges):  # disjoint again: rows keyed by (cluster, lo) must not replace each other
            if merged and lo <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
            else:
                merged.append((lo, hi))
        if sub and not ranges_less(sub, merged, 0)[0]:
            emptied.add(cid)  # every job of it left: the cluster went with the last one
            continue
        out += [(cid, lo, hi) for lo, hi in merged]
    kept["gone_ranges"] = out
    if emptied:
        kept["clusters"] = [r for r in kept.get("clusters", []) if r[0] not in emptied]
        kept["procs"] = [r for r in kept.get("procs", []) if r[0] not in emptied]
    done = {(cid, p) for cid, procs in finished.items() if cid not in submitted for p in procs}
    if "procs" in kept and done:
        kept["procs"] = [r for r in kept["procs"] if r[0] in submitted or (r[0], r[1]) not in done]


def _fit_header(path: str) -> None:
    """A truncated file still claims its old page count in its header (offset 28), and
    SQLite then refuses to read even its schema: make the header say what is there."""
    with open(path, "r+b") as f:
        head = f.read(100)
        if len(head) < 100 or not head.startswith(b"SQLite format 3\0"):
            return
        page = struct.unpack(">H", head[16:18])[0]
        page = 65536 if page == 1 else page
        have = os.fstat(f.fileno()).st_size // page if page else 0
        if 0 < have < struct.unpack(">I", head[28:32])[0]:
            f.seek(28)
            f.write(struct.pack(">I", have))


def salvage(path: str, why: str, schema: str) -> str:
    """Move the damaged file aside and write a new one with every readable row; the
    line for the log."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    aside = f"{path}.damaged-{stamp}"
    os.replace(path, aside)
    for side in _SIDE_FILES:  # the WAL belongs to the file: it moves with it
        with contextlib.suppress(FileNotFoundError):
            os.replace(path + side, aside + side)
    kept: dict[str, list[tuple[Any, ...]]] = {}
    refused = 0
    scratch = aside + ".reading"  # read from a copy: the damaged file stays as it was found
    try:
        for side in ("", *_SIDE_FILES):
            if os.path.exists(aside + side):
                create_private(scratch + side)  # a copy of the queue: as private as it
                shutil.copyfile(aside + side, scratch + side)
        _fit_header(scratch)
        old = sqlite3.connect(scratch)
        try:
            for table in _TABLES:
                try:
                    kept[table], bad = _readable_rows(old, table)
                except sqlite3.Error:
                    kept[table], bad = [], 0
                refused += bad
        finally:
            old.close()
    except (sqlite3.Error, OSError):
        kept = {}
    finally:
        for side in ("", *_SIDE_FILES):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(scratch + side)
    _history_is_gone(kept)
    clusters_kept = {r[0] for r in kept.get("clusters", [])}
    procs = kept.get("procs", [])
    orphans = [r for r in procs if r[0] not in clusters_kept]  # a job is nothing without its cluster's ad
    if orphans:
        kept["procs"] = [r for r in procs if r[0] in clusters_kept]
        refused += len(orphans)
    create_private(path)
    new = sqlite3.connect(path, isolation_level=None)
    try:
        new.executescript(schema)
        new.execute("BEGIN")
        for table, rows in kept.items():
            if rows:
                marks = ", ".join("?" * len(rows[0]))
                new.executemany(f"INSERT OR REPLACE INTO {table} ({_TABLES[table][0]}) VALUES ({marks})", rows)
        # New clusters must not take the numbers of lost ones still named in the history
        # (or in users' logs): numbering goes on after the highest seen anywhere.
        seen = [r[0] for r in kept.get("clusters", []) + kept.get("history", [])]
        recorded = [int(r[1]) for r in kept.get("meta", []) if r[0] == "next_cluster" and r[1].isdigit()]
        nxt = max([*recorded, *(c + 1 for c in seen), 1])
        new.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('next_cluster', ?)", (str(nxt),))
        new.execute("COMMIT")
    finally:
        new.close()
    jobs = _jobs_kept(kept.get("clusters", []), kept.get("procs", []), kept.get("gone_ranges", []))
    clusters = len(kept.get("clusters", []))
    history = len(kept.get("history", []))
    line = (f"job queue {path} is damaged ({why}): moved to {aside}; kept what could be read: "
            f"{clusters} clusters, {jobs} jobs in the queue, {history} in the history")
    if refused:
        line += f"; {refused} rows were unreadable"
    return line + ". Jobs that were lost must be submitted again; the damaged copy is kept for inspection."
