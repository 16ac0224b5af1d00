"""Argument schemas of every command in docs/protocol.md, checked before a handler runs.

A schema maps an argument name to a type spec; a trailing ``?`` marks it
optional. Specs: ``str``, ``int``, ``number`` (int or float), ``bool``,
``object`` (JSON object), ``list``, ``list[str]``, ``list[object]``, and
``a|b`` for either. Unknown extra arguments are allowed (newer clients may
send more), so only what a handler relies on is listed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roost.net.errors import RequestError

Schema = Mapping[str, str]

AD_TYPES = ("Machine", "Scheduler", "Submitter", "Negotiator", "Master", "Collector")

SCHEMAS: dict[str, Schema] = {
    # collector
    "UPDATE_AD": {"type": "str", "ad": "object", "private": "object?"},
    "UPDATE_ADS": {"type": "str", "ads": "list[object]?", "refresh": "list?"},
    "INVALIDATE_AD": {"type": "str", "name": "str", "schedd_name": "str?"},
    "QUERY": {"type": "str", "constraint": "str?", "projection": "list[str]?", "private": "bool?", "group": "bool?"},
    "TOKEN_CHALLENGE": {"token": "str", "nonce": "str", "binding": "str", "cert": "str?"},
    # negotiator
    "RESCHEDULE": {},
    "CYCLE_STATS": {},
    "USERPRIO": {},
    "SET_FACTOR": {"name": "str", "factor": "number"},
    "SET_PRIORITY": {"name": "str", "priority": "number"},
    "LIMITS": {},
    "FLOCK_STATUS": {},
    "RESET_USAGE": {"name": "str"},
    "SET_FLOOR": {"name": "str", "floor": "number?"},
    "SET_CEILING": {"name": "str", "ceiling": "number?"},
    # schedd
    "NEW_CLUSTER": {},
    "SUBMIT": {"cluster": "int", "cluster_ad": "object", "procs": "list[object]"},
    "SUBMIT_TEXT": {"text": "str", "cwd": "str", "file": "str?", "env": "object?", "overrides": "object?",
                    "append": "list[str]?"},
    "QUERY_JOBS": {
        "constraint": "str?",
        "projection": "list[str]?",
        "owner": "str?",
        "ids": "list[str]?",
        "totals": "bool?",
        "history": "bool?",
        "limit": "int?",
        "batch": "bool?",
    },
    "ACT": {"action": "str", "ids": "list[str]?", "constraint": "str?", "owner": "str?", "reason": "str?"},
    "EDIT": {"attrs": "object", "ids": "list[str]?", "constraint": "str?", "owner": "str?"},
    "RESERVE": {"op": "str", "nodes": "int?", "start": "number?", "duration": "number?", "id": "str?"},
    "WAIT_JOBS": {"ids": "list[str]", "timeout": "number?"},
    "GET_REQUESTS": {"owner": "str", "submitter": "str?"},
    "FLOCK_WHY": {"ids": "list[str]"},
    "MATCHES": {"matches": "list[object]"},
    "JOB_UPDATE": {"claim_id": "str", "job": "str", "state": "str"},
    "GET_FILES": {"job": "str", "claim_id": "str"},
    "PUT_FILES": {"job": "str", "claim_id": "str", "files": "list[object]"},
    "PUT_CHECKPOINT": {"job": "str", "claim_id": "str", "files": "list[object]"},
    "STREAM_OUTPUT": {"job": "str", "claim_id": "str", "files": "list[object]"},
    "CHIRP_ATTR": {"job": "str", "claim_id": "str", "op": "str", "name": "str?", "expr": "str?", "text": "str?",
                   "attrs": "object?"},
    "CHIRP_IO": {"job": "str", "claim_id": "str", "op": "str", "args": "list", "size": "int?"},
    "SPOOL_FILES": {"job": "str", "files": "list[object]"},
    "TRANSFER_DATA": {"job": "str"},
    "TAIL_JOB": {"job": "str", "name": "str?", "stream": "str?", "offset": "int?", "maxbytes": "int?"},
    "SSH_TO_JOB": {"job": "str", "command": "str?", "pty": "bool?", "term": "str?", "rows": "int?", "cols": "int?"},
    "REASSIGN_SLOT": {"now": "str", "vacate": "list"},
    # startd
    "REQUEST_CLAIM": {"claim_id": "str", "job_ad": "object", "schedd_address": "str?", "lease": "number?",
                      "slot_name": "str?"},
    "ACTIVATE_CLAIM": {"claim_id": "str", "job_ad": "object"},
    "KEEPALIVE": {"claim_id": "str"},
    "RECONNECT": {"claim_id": "str", "schedd_address": "str"},
    "DEACTIVATE_CLAIM": {"claim_id": "str", "graceful": "bool?", "why": "str?"},
    "RELEASE_CLAIM": {"claim_id": "str"},
    "SUSPEND_CLAIM": {"claim_id": "str"},
    "CONTINUE_CLAIM": {"claim_id": "str"},
    "DRAIN": {"how": "str?", "reason": "str?"},
    "CANCEL_DRAIN": {},
    "VACATE": {"fast": "bool?"},
    "SET_OFF": {},
    "SET_ON": {},
    "PEEK_JOB": {"claim_id": "str", "job": "str", "name": "str?", "stream": "str?", "offset": "int?",
                 "maxbytes": "int?"},
    "JOB_SHELL": {"claim_id": "str", "job": "str", "command": "str?", "pty": "bool?", "term": "str?",
                  "rows": "int?", "cols": "int?"},
    # master
    "STATUS": {},
    "SHUTDOWN": {"fast": "bool?"},
    "RESTART_DAEMON": {"name": "str"},
    "DAEMON_OFF": {"name": "str", "fast": "bool?"},
    "DAEMON_ON": {"name": "str"},
    # every daemon (the master forwards it to one or all of its daemons)
    "RECONFIG": {"daemon": "str?"},
    # every daemon, the master too
    "CONFIG_VAL": {"names": "list[str]?"},
}


def _is(value: Any, spec: str) -> bool:
    t = type(value)
    if spec == "str":
        return t is str
    if spec == "int":
        return t is int
    if spec == "number":
        return t is int or t is float
    if spec == "bool":
        return t is bool
    if spec == "object":
        return t is dict
    if spec == "list":
        return t is list
    if spec == "list[str]":
        return t is list and all(type(v) is str for v in value)
    if spec == "list[object]":
        return t is list and all(type(v) is dict for v in value)
    if spec == "null":
        return value is None
    raise ValueError(f"unknown type spec {spec!r}")


_WORDS = {
    "str": "a string",
    "int": "an integer",
    "number": "a number",
    "bool": "true or false",
    "object": "a JSON object",
    "list": "a list",
    "list[str]": "a list of strings",
    "list[object]": "a list of JSON objects",
    "null": "null",
}


def validate(cmd: str, req: Mapping[str, Any], schema: Schema) -> None:
    """Raise RequestError(BAD_REQUEST) naming the first missing or mistyped argument."""
    for name, spec in schema.items():
        optional = spec.endswith("?")
        if optional:
            spec = spec[:-1]
        if name not in req or (optional and req[name] is None):
            if optional:
                continue
            raise RequestError("BAD_REQUEST", f"{cmd}: missing argument {name!r}")
        value = req[name]
        alternatives = spec.split("|")
        if not any(_is(value, s) for s in alternatives):
            want = " or ".join(_WORDS.get(s, s) for s in alternatives)
            raise RequestError(
                "BAD_REQUEST", f"{cmd}: argument {name!r} must be {want}, not {type(value).__name__}"
            )
