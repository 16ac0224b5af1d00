"""The sending half of ``roost submit``: a parsed description to the pool's schedd.

``submit_cmd`` parses the file (and owns ``-dry-run``); this reserves cluster
ids, expands the description with them and submits, printing what
condor_submit prints ("N job(s) submitted to cluster C.").
"""

from __future__ import annotations

import sys
import time
from typing import Any

from roost.api.errors import PoolError
from roost.api.home import read_address, run_path
from roost.api.schedd import Schedd, current_user
from roost.api.submitting import submit_description
from roost.submit import SubmitError


def send(desc: Any, *, quiet: bool = False, name: str | None = None, pool: str | None = None) -> int:
    """Submit ``desc`` (a ``SubmitDescription``) to $ROOST_HOME's schedd (or the one
    ``name``/``pool`` find through a collector); the exit status."""
    schedd = Schedd(name=name, pool=pool)
    try:
        schedd.connect()
    except PoolError as e:
        if name is None and pool is None and read_address(run_path(schedd.home_dir, "master.address")) is None:
            print(f"ERROR: no roost pool is running to submit to (ROOST_HOME={schedd.home_dir}): "
                  "start one with `roost up`", file=sys.stderr)
        else:
            print(f"ERROR: {e}", file=sys.stderr)
        return 1
    if not quiet:
        print("Submitting job(s).", flush=True)
    try:
        result = submit_description(schedd.call, desc, owner=current_user(), qdate=int(time.time()))
    except SubmitError as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return 1
    except PoolError as e:
        lines = str(e).strip().splitlines() or ["submit failed"]
        print(f"ERROR: {lines[0]}", file=sys.stderr)
        return 1
    finally:
        schedd.close()
    for w in result.warnings:
        print(w, file=sys.stderr)
    if not quiet:
        for cluster, n in result.clusters:
            print(f"{n} job(s) submitted to cluster {cluster}.")
    return 0
