"""The sending half of ``roost submit``: a parsed description to the pool's schedd.

``submit_cmd`` parses the file (and owns ``-dry-run``); this reserves cluster
ids, expands the description with them and submits, printing what
condor_submit prints ("Submitting job(s)...", a dot per job, then "N job(s)
submitted to cluster C."; with ``-terse`` "C.0 - C.N").
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


def send(desc: Any, *, quiet: bool = False, name: str | None = None, pool: str | None = None,
         terse: bool = False, verbose: bool = False) -> int:
    """Submit ``desc`` (a ``SubmitDescription``) to $ROOST_HOME's schedd (or the one
    ``name``/``pool`` find through a collector); the exit status. ``verbose`` prints each
    job's ad instead of the summary, as condor_submit -verbose (and a submit file ``-``)."""
    result = send_result(desc, quiet=quiet or verbose, name=name, pool=pool, terse=terse)
    if result is None:
        return 1
    if verbose:
        return _print_ads(result, name=name, pool=pool)
    return 0


def _print_ads(result: Any, *, name: str | None, pool: str | None) -> int:
    """``** Proc C.P:`` and the job's ad, for every job submitted."""
    # lazy: only -verbose prints ads
    from roost.cli.adtext import long_text

    schedd = Schedd(name=name, pool=pool)
    try:
        ads = schedd.query_objs(ids=result.job_ids())
    except PoolError as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return 1
    finally:
        schedd.close()
    ads.sort(key=lambda a: (a.get("ClusterId", 0), a.get("ProcId", 0)))
    for ad in ads:
        sys.stdout.write(f"\n** Proc {ad.get('ClusterId')}.{ad.get('ProcId')}:\n" + long_text([ad])[:-1])
    return 0


def report(clusters: list[tuple[int, int]], *, terse: bool, verb: str = "submitted") -> None:
    """condor_submit's closing lines: a dot per job, then ``N job(s) submitted to cluster C.``;
    with ``-terse`` only ``C.0 - C.N`` per cluster."""
    if terse:
        for cluster, n in clusters:
            print(f"{cluster}.0 - {cluster}.{n - 1}")
        return
    print("." * sum(n for _, n in clusters))
    for cluster, n in clusters:
        print(f"{n} job(s) {verb} to cluster {cluster}.")


def send_result(desc: Any, *, quiet: bool = False, name: str | None = None, pool: str | None = None,
                terse: bool = False) -> Any:
    """As :func:`send`, returning the ``SubmitResult`` (None when it failed, said on stderr)."""
    schedd = Schedd(name=name, pool=pool)
    try:
        schedd.connect()
    except PoolError as e:
        if name is None and pool is None and read_address(run_path(schedd.home_dir, "master.address")) is None:
            print(f"ERROR: no roost pool is running to submit to (ROOST_HOME={schedd.home_dir}): "
                  "start one with `roost up`", file=sys.stderr)
        else:
            print(f"ERROR: {e}", file=sys.stderr)
        return None
    if not quiet and not terse:
        print("Submitting job(s)", end="", flush=True)
    try:
        result = submit_description(schedd.call, desc, owner=current_user(), qdate=int(time.time()))
    except SubmitError as e:
        print(("" if quiet or terse else "\n") + f"ERROR: {e}", file=sys.stderr)
        return None
    except PoolError as e:
        lines = str(e).strip().splitlines() or ["submit failed"]
        print(("" if quiet or terse else "\n") + f"ERROR: {lines[0]}", file=sys.stderr)
        return None
    finally:
        schedd.close()
    for w in result.warnings:
        print(w, file=sys.stderr)
    if not quiet:
        report(result.clusters, terse=terse)
    return result
