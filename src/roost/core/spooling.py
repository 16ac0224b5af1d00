"""condor_submit -spool and condor_transfer_data, the pure part: which of a job's files
travel to the schedd's spool, how its ad then points there, and where spooled output
goes back to.

Both ends use this: the tool to read what it sends and to place what it fetches, the
schedd to rewrite the ad of a job whose input it received. A name in the spool is
relative to the job's spool directory and checked by :func:`spool_name` on both ends
(no ``..``, nothing absolute, no empty or ``.`` component): a hostile peer on either
side cannot reach outside that directory, or outside the submit directory on the way
back.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Getter = Callable[..., Any]

#: HTCondor's: the job waits held until its input is in (JobStatus 5, HoldReasonCode 16)
SPOOLING_HOLD_CODE = 16
SPOOLING_HOLD_REASON = "Spooling input data files"
#: the release reason once the input is in (HTCondor's words)
SPOOLED_REASON = "Data files spooled"
#: condor_submit -spool's leave_in_queue: a completed job stays (10 days at most) until its
#: output is fetched; roost also lets it go once condor_transfer_data has (StageOutFinish)
LEAVE_IN_QUEUE = ("JobStatus == 4 && StageOutFinish =?= undefined && (CompletionDate =?= undefined || "
                  "CompletionDate == 0 || ((time() - CompletionDate) < 864000))")
#: the submit lines -spool adds just before the queue statement (they win)
HOLD_LINES = ["hold = true", f'+HoldReason = "{SPOOLING_HOLD_REASON}"', f"+HoldReasonCode = {SPOOLING_HOLD_CODE}"]
#: and its default leave_in_queue: the submit file's own, if it has one, wins (as condor_submit's)
SUBMIT_LINES = [*HOLD_LINES, f"leave_in_queue = {LEAVE_IN_QUEUE}"]

MAX_NAME = 4096
MAX_COMPONENT = 255


class SpoolError(Exception):
    """A name or plan that cannot be spooled (the message says which and why)."""


def job_spool_dir(root: str, cluster: int, proc: int) -> str:
    """HTCondor's layout: ``$(SPOOL)/<cluster % 10000>/<proc>/cluster<C>.proc<P>.subproc0``."""
    return os.path.join(root, str(cluster % 10000), str(proc), f"cluster{cluster}.proc{proc}.subproc0")


def spool_name(name: Any) -> str:
    """``name`` if it names a path inside a job's spool directory, else SpoolError.
    Not normalised away: ``a/../b`` is refused, not read as ``b``."""
    if not isinstance(name, str) or not name or len(name) > MAX_NAME or "\x00" in name:
        raise SpoolError(f"bad spool file name {str(name)[:80]!r}")
    if name.startswith("/"):
        raise SpoolError(f"spool file name {name[:80]!r} is absolute")
    for part in name.split("/"):
        if part in ("", ".", ".."):
            raise SpoolError(f"spool file name {name[:80]!r} leaves its directory or has an empty part")
        if len(part) > MAX_COMPONENT:
            raise SpoolError(f"spool file name {name[:80]!r} has a part over {MAX_COMPONENT} bytes")
    return name


@dataclass(frozen=True)
class SpoolItem:
    """One entry the tool sends: ``src`` on the submit host (a file or a directory),
    ``name`` its top-level name in the spool directory."""

    src: str
    name: str
    role: str = ""  # "executable", "stdin" or "" (transfer_input_files)


def _false(v: Any) -> bool:
    return v is False or (isinstance(v, str) and v.strip().lower() in ("false", "no"))


def _str(get: Getter, attr: str) -> str:
    v = get(attr)
    return v if isinstance(v, str) else ""


def file_items(value: object) -> list[str]:
    """The names of a file-list attribute (TransferInput, TransferOutput): commas or
    newlines between them; anything not a string names no file."""
    if not isinstance(value, str):
        return []
    return [p.strip() for p in value.replace("\n", ",").split(",") if p.strip()]


def under_iwd(iwd: str, path: str) -> str:
    """``path`` as the job sees it: relative names are under its Iwd."""
    return path if os.path.isabs(path) else os.path.join(iwd, path)


def _iwd(get: Getter) -> str:
    return _str(get, "Iwd") or "/"


def _sends_cmd(get: Getter, exists: Callable[[str], bool]) -> bool:
    cmd = _str(get, "Cmd")
    return bool(cmd) and not _false(get("TransferExecutable", True)) and exists(under_iwd(_iwd(get), cmd))


def _sends_stdin(get: Getter) -> bool:
    stdin = _str(get, "In")
    return bool(stdin) and stdin != "/dev/null" and not _false(get("TransferIn", True))


def input_plan(get: Getter, exists: Callable[[str], bool] = os.path.exists) -> list[SpoolItem]:
    """What the tool sends for the job whose submitted attributes ``get`` reads: its
    executable (unless not transferred, or not a file here: a path on the execute
    host), its stdin and each ``transfer_input_files`` entry (a URL stays a URL; ``dir/``
    is kept as a directory of its own, ``_spool<i>``, its contents sent as before)."""
    iwd = _iwd(get)
    out: list[SpoolItem] = []
    if _sends_cmd(get, exists):
        cmd = _str(get, "Cmd")
        out.append(SpoolItem(under_iwd(iwd, cmd), os.path.basename(cmd.rstrip("/")), "executable"))
    if _sends_stdin(get):
        stdin = _str(get, "In")
        out.append(SpoolItem(under_iwd(iwd, stdin), os.path.basename(stdin.rstrip("/")), "stdin"))
    for i, item in enumerate(file_items(get("TransferInput"))):
        if "://" in item:
            continue
        path = under_iwd(iwd, item)
        if item.endswith("/"):
            out.append(SpoolItem(path.rstrip("/") or "/", f"_spool{i}"))
        else:
            out.append(SpoolItem(path, os.path.basename(path.rstrip("/"))))
    for it in out:
        spool_name(it.name)
    return out


def spool_edits(get: Getter, dest: str, received: set[str]) -> dict[str, Any]:
    """The attributes of a job whose input is now in ``dest`` (``received``: the
    top-level names that came): ``Iwd`` and the input paths point there, the submitted
    values kept as ``SUBMIT_<attr>`` (as HTCondor keeps ``SUBMIT_Iwd``, ``SUBMIT_Cmd``
    ...); absolute ``output``/``error`` files and the output remaps, which name places
    on the submit host, land in ``dest`` and go back to those places at
    condor_transfer_data."""
    iwd = _iwd(get)
    edits: dict[str, Any] = {"Iwd": dest, "SUBMIT_Iwd": iwd}
    cmd = _str(get, "Cmd")
    if cmd and os.path.basename(cmd.rstrip("/")) in received and not _false(get("TransferExecutable", True)):
        edits.update(Cmd=os.path.join(dest, os.path.basename(cmd.rstrip("/"))), SUBMIT_Cmd=cmd)
    elif cmd and not os.path.isabs(cmd):
        edits.update(Cmd=os.path.join(iwd, cmd), SUBMIT_Cmd=cmd)  # not spooled: where it was
    if _sends_stdin(get):
        stdin = _str(get, "In")
        edits.update(In=os.path.basename(stdin.rstrip("/")), SUBMIT_In=stdin)
    items = file_items(get("TransferInput"))
    if items:
        names = []
        for i, item in enumerate(items):
            if "://" in item:
                names.append(item)
            elif item.endswith("/"):
                names.append(f"_spool{i}/")
            else:
                names.append(os.path.basename(item.rstrip("/")))
        edits.update(TransferInput=",".join(names), SUBMIT_TransferInput=get("TransferInput"))
    for attr in ("Out", "Err"):
        path = _str(get, attr)
        if path and path != "/dev/null" and (os.path.isabs(path) or "/" in path):
            edits[attr] = os.path.basename(path)
            edits[f"SUBMIT_{attr}"] = path
    remaps = get("TransferOutputRemaps")
    if isinstance(remaps, str) and remaps.strip():
        edits.update(TransferOutputRemaps="", SUBMIT_TransferOutputRemaps=remaps)
    return edits


def input_names(get: Getter) -> set[str]:
    """Top-level names in a spooled job's directory that hold its input (not sent back)."""
    names: set[str] = set()
    iwd = _str(get, "Iwd")
    cmd = _str(get, "Cmd")
    if cmd and iwd and os.path.dirname(cmd) == iwd:
        names.add(os.path.basename(cmd))
    stdin = _str(get, "In")
    if stdin and stdin != "/dev/null" and "/" not in stdin:
        names.add(stdin)
    for item in file_items(get("TransferInput")):
        if "://" not in item:
            names.add(item.rstrip("/"))
    return names


def _remaps(value: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    if isinstance(value, str):
        for part in value.split(";"):
            name, sep, dest = part.partition("=")
            if sep and name.strip():
                out[name.strip()] = dest.strip()
    return out


def fetch_destination(get: Getter, name: str) -> str:
    """Where condor_transfer_data writes spooled output ``name`` on the submit host:
    stdout/stderr to the submitted ``output``/``error``, a remapped file where its remap
    said, any other under the submit directory (``SUBMIT_Iwd``)."""
    name = spool_name(name)
    home = _str(get, "SUBMIT_Iwd") or _iwd(get)
    for attr in ("Out", "Err"):
        now = _str(get, attr)
        if now and now != "/dev/null" and name == os.path.basename(now):
            return under_iwd(home, _str(get, f"SUBMIT_{attr}") or now)
    remaps = _remaps(get("SUBMIT_TransferOutputRemaps") or get("TransferOutputRemaps"))
    dest = remaps.get(name) or remaps.get(os.path.basename(name))
    if dest:
        return under_iwd(home, dest)
    return os.path.join(home, name)


__all__ = [
    "HOLD_LINES", "LEAVE_IN_QUEUE", "SPOOLED_REASON", "SPOOLING_HOLD_CODE", "SPOOLING_HOLD_REASON", "SUBMIT_LINES",
    "SpoolError", "SpoolItem", "fetch_destination", "input_names", "input_plan", "job_spool_dir",
    "spool_edits", "spool_name",
]
