"""``roost transfer_data`` (condor_transfer_data): a spooled job's output back home.

Targets as condor_transfer_data takes them: job ids (``12.3``), clusters (``12``),
user names, ``-constraint EXPR`` or ``-all``; the schedd by ``-name``/``-pool`` or ``-addr``. Each completed job among them that was
submitted with ``-spool`` has the output it left in its spool directory written where
it was submitted from (``SUBMIT_Iwd``, its ``output``/``error`` and remaps), then
leaves the queue. Jobs not completed yet are named and left alone; the exit status
is 1 if any target matched no spooled job or any fetch failed.
"""

from __future__ import annotations

import argparse
import os
import sys

from roost.api.errors import PoolError
from roost.api.jobids import is_job_id
from roost.api.schedd import Schedd, current_user
from roost.api.spooling import ATTRS, fetch_job
from roost.classad.unparse import quote
from roost.cli.options import add_pool_args
from roost.cli.restrict import error_line
from roost.core import jobpolicy as jp


def _constraint(ns: argparse.Namespace) -> str:
    parts = []
    for t in ns.targets:
        if is_job_id(t):
            c, _, p = t.partition(".")
            parts.append(f"(ClusterId == {int(c)} && ProcId == {int(p)})" if p else f"ClusterId == {int(c)}")
        else:
            parts.append(f"Owner == {quote(t)}")
    if ns.constraint:
        parts.append(f"({ns.constraint})")
    if ns.all:
        parts.append("true" if os.geteuid() == 0 else f"Owner == {quote(current_user())}")
    return " || ".join(parts)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="roost transfer_data", add_help=False,
                                description="Fetch the output of completed jobs submitted with -spool.")
    p.add_argument("-h", "-help", "--help", action="help", help="show this help and exit")
    p.add_argument("targets", nargs="*", metavar="ID|CLUSTER|USER")
    p.add_argument("-constraint", "--constraint", default=None, metavar="EXPR")
    p.add_argument("-all", "--all", action="store_true", help="every job (every job of yours unless root)")
    p.add_argument("-addr", "--addr", default=None, metavar="<HOST:PORT>", help="the schedd at this address")
    add_pool_args(p)
    ns = p.parse_args(argv)
    if not ns.targets and not ns.constraint and not ns.all:
        print("roost transfer_data: name jobs (ids, clusters or users), -constraint EXPR or -all", file=sys.stderr)
        return 1
    rc = 0
    address = ns.addr.strip().strip("<>").split("?", 1)[0] if ns.addr else None  # "<ip:port?...>" as HTCondor's
    schedd = Schedd(name=ns.name, pool=ns.pool, address=address)
    try:
        ads = [a for a in schedd.query_objs(_constraint(ns), ATTRS) if a.get("StageInFinish") is not None]
        ads.sort(key=lambda a: (a.get("ClusterId", 0), a.get("ProcId", 0)))
        if not ads:
            print("roost transfer_data: no job submitted with -spool matches", file=sys.stderr)
            return 1
        print("Fetching data files...")
        me = current_user()
        for ad in ads:
            job = f"{ad['ClusterId']}.{ad['ProcId']}"
            if ad.get("Owner") != me:
                # the files go where the job's ad says, written with this process's rights:
                # root (or a queue super user) fetching bob's job would write where bob chose
                print(f"roost transfer_data: job {job} is {ad.get('Owner')}'s: fetch its output as "
                      f"{ad.get('Owner')} (this tool writes where the job's ad says, with your rights)",
                      file=sys.stderr)
                rc = 1
                continue
            if ad.get("JobStatus") != jp.COMPLETED:
                state = jp.STATUS_NAMES.get(ad.get("JobStatus"), ad.get("JobStatus"))
                print(f"Job {job} has not completed ({state}): its output is not fetched yet", file=sys.stderr)
                continue
            try:
                fetch_job(schedd, ad)
            except PoolError as e:
                print(error_line("roost transfer_data", e), file=sys.stderr)
                rc = 1
    except PoolError as e:
        print(error_line("roost transfer_data", e), file=sys.stderr)
        return 1
    finally:
        schedd.close()
    return rc
