"""A child process that removes a cluster's procs a few at a time, one commit each, and
is killed -9 by the test in the middle: what a schedd killed during ``condor_rm`` leaves."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

_CHILD = textwrap.dedent("""
    import asyncio, sys, time
    from roost.core.jobpolicy import REMOVED
    from roost.daemons.schedd.jobqueue import JobQueue
    from roost.daemons.schedd.store import Store
    db, cid, lo, hi, chunk, reason = sys.argv[1], *map(int, sys.argv[2:7])
    q = JobQueue(Store(db, fsync=True))
    q.load()
    attrs = {"RemoveReason": "x"} if reason else {}
    for at in range(lo, hi, chunk):  # condor_rm of procs lo..hi-1, ``chunk`` a commit
        ops = q.finish_many([(q.job(cid, p), dict(attrs)) for p in range(at, min(at + chunk, hi))],
                            REMOVED, 1700000000)
        asyncio.run(q.store.commit(ops))
        print(at, flush=True)
        time.sleep(0.05)  # (the parent's kill -9 comes between two commits or inside one)
""")


def kill_mid_removal(db: Path, cid: int, lo: int, hi: int, chunk: int, *, reason: bool, after: int) -> None:
    """Remove procs ``lo``..``hi - 1`` of cluster ``cid`` in the queue file ``db`` in a
    child, ``chunk`` a commit (each with a RemoveReason when ``reason``), and kill -9 it
    once ``after`` commits have landed."""
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(db), str(cid), str(lo), str(hi), str(chunk),
                              str(int(reason))], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert child.stdout is not None
        for _ in range(after):  # a few commits landed, then kill -9 in the middle of the rest
            assert child.stdout.readline()
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
