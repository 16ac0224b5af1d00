"""``roost qedit`` and ``roost prio``: change attributes of queued jobs (condor_qedit, condor_prio).

Both send the schedd's EDIT request, which checks every name and value before it
sets any and refuses the attributes that name a job or its state (``JobStatus``:
use hold/release). ``qedit`` values are ClassAd expressions (``'"text"'`` for a
string); ``prio`` sets ``JobPrio``, to a number or by ``+N``/``-N``.
"""

from __future__ import annotations

import sys
from typing import Any

from roost.api.errors import PoolError
from roost.api.jobids import is_job_id, job_selection
from roost.api.schedd import Schedd
from roost.cli.restrict import error_line

QEDIT_USAGE = """usage: roost qedit [-name SCHEDD] [-pool HOST[:PORT]] [-dry-run]
                   {-constraint EXPR | -owner USER | -jobids ID,... | CLUSTER | CLUSTER.PROC | USER}
                   ATTR VALUE [ATTR VALUE ...]   (or ATTR=VALUE ...)

VALUE is a ClassAd expression: quote strings ('"text"'); an empty VALUE is undefined."""

PRIO_USAGE = """usage: roost prio {-p PRIORITY | +N | -N} [-name SCHEDD] [-pool HOST[:PORT]]
                  {-a | CLUSTER | CLUSTER.PROC | USER} ...

-p sets JobPrio; +N and -N raise or lower it. Higher runs first among one user's jobs."""


class _Usage(Exception):
    pass


def _value_of(argv: list[str], i: int, opt: str) -> str:
    if i >= len(argv):
        raise _Usage(f"{opt} requires an argument")
    return argv[i]


def parse_qedit(argv: list[str]) -> dict[str, Any]:
    """condor_qedit's command line: the selection, the edits (attribute -> expression text
    in the order given) and -name/-pool/-dry-run."""
    got: dict[str, Any] = {"name": None, "pool": None, "constraint": None, "owner": None,
                           "ids": [], "dry_run": False, "edits": {}}
    rest: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        i += 1
        word = a.lstrip("-").lower() if a.startswith("-") and len(a) > 1 and not rest else ""
        if not word:
            rest.append(a)
            continue
        if word in ("h", "help"):
            raise SystemExit(print(QEDIT_USAGE) or 0)
        if word in ("n", "name"):
            got["name"] = _value_of(argv, i, a)
        elif word == "pool":
            got["pool"] = _value_of(argv, i, a)
        elif "constraint".startswith(word) and len(word) >= 2:
            got["constraint"] = _value_of(argv, i, a)
        elif word == "owner":
            got["owner"] = _value_of(argv, i, a)
        elif word == "jobids":
            got["ids"] += [t for t in _value_of(argv, i, a).split(",") if t]
        elif word in ("dry-run", "dryrun"):
            got["dry_run"] = True
            continue
        elif word in ("debug", "forward"):
            continue  # accepted for condor_qedit's sake; nothing to forward to here
        else:
            raise _Usage(f"{a} is not a valid option")
        i += 1
    if not (got["constraint"] or got["owner"] or got["ids"]):
        if not rest:
            raise _Usage("there were no jobs specified: use -constraint, a job id or an owner")
        target = rest.pop(0)
        if is_job_id(target):
            got["ids"].append(target)
        else:
            got["owner"] = target
    bad = [t for t in got["ids"] if not is_job_id(t)]
    if bad:
        raise _Usage(f"not a job id: {bad[0]}")
    edits: dict[str, str] = got["edits"]
    while rest:
        word = rest.pop(0)
        name, eq, value = word.partition("=")
        if eq and name.strip().replace("_", "a").isalnum():
            name = name.strip()
        else:
            name = word
            if not rest:
                raise _Usage(f"expression required after attribute {word}")
            value = rest.pop(0)
        if not name.replace("_", "a").isalnum() or name[:1].isdigit():
            raise _Usage(f'illegal attribute-name specified for attribute "{name}"')
        edits[name] = value.strip() or "undefined"
    if not edits:
        raise _Usage("no attributes specified")
    return got


def main_qedit(argv: list[str]) -> int:
    try:
        got = parse_qedit(argv)
    except _Usage as e:
        print(f"roost qedit: {e}\n{QEDIT_USAGE}", file=sys.stderr)
        return 1
    edits: dict[str, str] = got["edits"]
    if got["dry_run"]:
        # lazy: only -dry-run checks the expressions here (the schedd checks them anyway)
        from roost.classad import ExprTree

        for name, text in edits.items():
            try:
                ExprTree(text)
            except Exception as e:
                print(f"roost qedit: {name} = {text}: {e}", file=sys.stderr)
                return 1
            print(f'Can Set attribute "{name}".')
        return 0
    try:
        schedd = Schedd(name=got["name"], pool=got["pool"])
        done = schedd.call("EDIT", attrs=edits, **job_selection(got["ids"], got["constraint"], got["owner"]))
    except PoolError as e:
        print(error_line("roost qedit", e), file=sys.stderr)
        print("Queue transaction failed.  No attributes were set.", file=sys.stderr)
        return 1
    count = int(done.get("count", 0))
    if count == 0:
        what = ", ".join(got["ids"]) or got["constraint"] or f"owner {got['owner']}"
        denied = done.get("denied") or []
        if denied:  # the schedd lets each user edit only their own jobs
            print(f"roost qedit: permission denied to edit job(s) {', '.join(denied)}: "
                  "not yours (only their owner or a queue super user may edit them)", file=sys.stderr)
        else:
            print(f"roost qedit: no jobs matched ({what})", file=sys.stderr)
        print("Queue transaction failed.  No attributes were set.", file=sys.stderr)
        return 1
    for name in edits:
        print(f'Set attribute "{name}" for {count} matching jobs.')
    return 0


def parse_prio(argv: list[str]) -> dict[str, Any]:
    """condor_prio's command line: ``set`` (a number) or ``change`` (+N/-N), the targets."""
    got: dict[str, Any] = {"set": None, "change": None, "all": False, "targets": [], "name": None, "pool": None}
    i = 0
    while i < len(argv):
        a = argv[i]
        i += 1
        if len(a) > 1 and a[0] in "+-" and a[1:].isdigit():
            got["change"] = int(a)
            continue
        if not a.startswith("-") or len(a) == 1:
            got["targets"].append(a)
            continue
        word = a.lstrip("-")
        if word in ("h", "help"):
            raise SystemExit(print(PRIO_USAGE) or 0)
        if word == "a" or word == "all":
            got["all"] = True
            continue
        value = _value_of(argv, i, a)
        i += 1
        if word == "p":
            try:
                got["set"] = int(value)
            except ValueError:
                raise _Usage(f"-p needs an integer priority, not {value!r}") from None
        elif word in ("n", "name"):
            got["name"] = value
        elif word == "pool":
            got["pool"] = value
        else:
            raise _Usage(f"unknown option {a}")
    if got["set"] is None and got["change"] is None:
        raise _Usage("give a new priority with -p PRIORITY, or +N / -N")
    if not got["targets"] and not got["all"]:
        raise _Usage("name jobs: CLUSTER, CLUSTER.PROC, USER or -a")
    return got


def main_prio(argv: list[str]) -> int:
    try:
        got = parse_prio(argv)
    except _Usage as e:
        print(f"roost prio: {e}\n{PRIO_USAGE}", file=sys.stderr)
        return 1
    selections: list[dict[str, Any]] = []
    if got["all"]:
        selections.append({"constraint": "true"})
    for t in got["targets"]:
        selections.append({"ids": [t]} if is_job_id(t) else {"owner": t})
    rc = 0
    try:
        schedd = Schedd(name=got["name"], pool=got["pool"])
        for sel in selections:
            if got["set"] is not None:
                done = schedd.call("EDIT", attrs={"JobPrio": str(got["set"])}, **sel)
                if not int(done.get("count", 0)):
                    rc = _not_found(sel)
                continue
            # +N/-N: each job's own priority moves; jobs sharing one move together
            jobs = schedd.query_objs(sel.get("constraint"), ["JobPrio"], owner=sel.get("owner"),
                                     ids=sel.get("ids"))
            if not jobs:
                rc = _not_found(sel)
                continue
            by_new: dict[int, list[str]] = {}
            for j in jobs:
                old = j.get("JobPrio")
                old = old if type(old) is int else 0
                by_new.setdefault(old + got["change"], []).append(f"{j['ClusterId']}.{j['ProcId']}")
            for prio, ids in by_new.items():
                schedd.call("EDIT", attrs={"JobPrio": str(prio)}, ids=ids)
    except PoolError as e:
        print(error_line("roost prio", e), file=sys.stderr)
        return 1
    return rc


def _not_found(sel: dict[str, Any]) -> int:
    what = sel["ids"][0] if "ids" in sel else sel.get("owner") or "any job"
    print(f"Couldn't set new priority for {what}: no such job", file=sys.stderr)
    return 1


main = main_qedit
