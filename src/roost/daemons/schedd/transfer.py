"""Which files a job's sandbox receives and where its output lands (the shadow's half
of HTCondor's file transfer).

Input: the executable (unless ``transfer_executable = false``), the stdin file (unless
``transfer_input = false``) and every ``transfer_input_files`` entry, relative to
Iwd; a directory is sent with its name, ``dir/`` (trailing slash) sends only its
contents, as HTCondor does (with ``preserve_relative_paths`` a relative entry keeps its
directories in the sandbox, and so does a relative output entry on its way back). Output: stdout/stderr go to ``Out``/``Err``, other files
to Iwd (or where ``transfer_output_remaps`` says), each written to a temporary name
and renamed, then given to the job's owner when we run as root.
"""

from __future__ import annotations

import itertools
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from roost.daemons.sandbox_paths import sandbox_relpath
from roost.daemons.schedd.access import may_read, may_write
from roost.daemons.schedd.userlog import user_ids

Getter = Callable[..., Any]
_WRITES = itertools.count()


class TransferError(Exception):
    """A file the job names cannot be sent or written (the job goes on hold)."""


@dataclass
class InputFile:
    name: str  # path in the sandbox
    path: str  # path on the submit host
    size: int
    mode: int
    role: str = ""  # "executable", "stdin" or "" for transfer_input_files

    def entry(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "size": self.size, "mode": self.mode}
        if self.role:
            out["role"] = self.role
        return out


def _iwd(get: Getter) -> str:
    iwd = get("Iwd")
    return iwd if isinstance(iwd, str) and iwd else "/"


def _under(iwd: str, path: str) -> str:
    return path if os.path.isabs(path) else os.path.join(iwd, path)


def split_list(value: Any) -> list[str]:
    """A comma- (or space-) separated file list attribute as a list."""
    if not isinstance(value, str):
        return []
    parts = value.replace("\n", ",").split(",")
    out: list[str] = []
    for p in parts:
        p = p.strip()
        if p:
            out.append(p)
    return out


def _is_false(v: Any) -> bool:
    return v is False or (isinstance(v, str) and v.strip().lower() in ("false", "no"))


def _add_file(out: list[InputFile], name: str, path: str, role: str = "", owner: str = "") -> None:
    try:
        st = os.stat(path)
    except OSError as e:
        raise TransferError(f"cannot send input file {path}: {e.strerror}") from None
    if owner and not may_read(owner, path):
        raise TransferError(f"cannot send input file {path}: {owner} may not read it")
    if stat.S_ISDIR(st.st_mode):
        for root, dirs, files in os.walk(path):
            dirs.sort()
            rel_root = os.path.relpath(root, path)
            for f in sorted(files):
                full = os.path.join(root, f)
                rel = f if rel_root == "." else os.path.join(rel_root, f)
                _add_file(out, os.path.join(name, rel) if name else rel, full, owner=owner)
        return
    if not stat.S_ISREG(st.st_mode):
        raise TransferError(f"cannot send input file {path}: not a regular file")
    out.append(InputFile(name, path, st.st_size, stat.S_IMODE(st.st_mode), role))


def input_files(get: Getter, owner: str = "") -> list[InputFile]:
    """The files a starter should receive for the job whose attributes ``get`` reads
    (checked against what ``owner`` may read)."""
    if str(get("ShouldTransferFiles", "") or "").upper() == "NO":
        return []
    iwd = _iwd(get)
    out: list[InputFile] = []
    cmd = get("Cmd")
    if isinstance(cmd, str) and cmd and not _is_false(get("TransferExecutable", True)):
        path = _under(iwd, cmd)
        if os.path.exists(path):
            _add_file(out, os.path.basename(path), path, "executable", owner)
        elif os.path.isabs(cmd):
            pass  # a path on the execute host (HTCondor refuses; roost lets the starter try)
        else:
            raise TransferError(f"cannot send executable {path}: No such file or directory")
    stdin = get("In")
    if isinstance(stdin, str) and stdin and stdin != "/dev/null" and not _is_false(get("TransferIn", True)):
        path = _under(iwd, stdin)
        _add_file(out, os.path.basename(path), path, "stdin", owner)
    preserve = get("PreserveRelativePaths") is True
    for item in split_list(get("TransferInput")):
        if "://" in item:
            raise TransferError(f"input {item}: URL transfers are not supported")
        path = _under(iwd, item)
        if preserve and not os.path.isabs(item):
            # preserve_relative_paths: lands under its own relative path (a trailing
            # slash means nothing then), as HTCondor does
            _add_file(out, safe_name(item.rstrip("/")), path.rstrip("/"), owner=owner)
        elif item.endswith("/"):
            _add_file(out, "", path.rstrip("/") or "/", owner=owner)
        else:
            _add_file(out, os.path.basename(path.rstrip("/")), path, owner=owner)
    return out


def parse_remaps(value: Any) -> dict[str, str]:
    """``"a=x/a;b=/tmp/b"`` as {name: destination}."""
    out: dict[str, str] = {}
    if not isinstance(value, str):
        return out
    for part in value.split(";"):
        name, sep, dest = part.partition("=")
        if sep and name.strip():
            out[name.strip()] = dest.strip()
    return out


def safe_name(name: str) -> str:
    """A sandbox-relative output name, refused if it would escape (absolute or ``..``)."""
    return sandbox_relpath(name, TransferError, "output file")


def output_destination(get: Getter, entry: dict[str, Any]) -> str:
    """Where one output file from the sandbox is written on the submit host."""
    iwd = _iwd(get)
    role = entry.get("role") or ""
    if role in ("stdout", "stderr"):
        attr = "Out" if role == "stdout" else "Err"
        path = get(attr)
        if not isinstance(path, str) or not path or path == "/dev/null":
            return os.devnull
        return _under(iwd, path)
    name = safe_name(entry.get("name", ""))
    for attr in ("Out", "Err"):  # the starter sends stdout/stderr under their base names
        path = get(attr)
        if isinstance(path, str) and path and path != "/dev/null" and name == os.path.basename(path):
            return _under(iwd, path)
    remaps = parse_remaps(get("TransferOutputRemaps"))
    dest = remaps.get(name) or remaps.get(os.path.basename(name))
    if dest:
        return _under(iwd, dest)
    return os.path.join(iwd, name)


def _make_dirs_for(path: str, owner: str | None) -> None:
    """``os.makedirs`` as the owner would have it: each directory made here (an output's
    relative path kept, preserve_relative_paths) is the owner's, not root's."""
    missing = []
    d = path
    while d and not os.path.isdir(d):
        missing.append(d)
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    ids = user_ids(owner) if owner and os.geteuid() == 0 else None
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o755)
        except FileExistsError:
            continue  # made meanwhile (another output of the same job)
        if ids is not None:
            os.chown(d, ids[0], ids[1], follow_symlinks=False)


class OutputWriter:
    """Writes one received file: temp name, then rename; chowned to the owner as root."""

    def __init__(self, dest: str, mode: int, owner: str | None) -> None:
        self.dest = dest
        self.discard = dest == os.devnull
        # unique per write: jobs of one cluster may send a same-named output at once
        self.tmp = f"{dest}.roost-tmp.{os.getpid()}.{next(_WRITES)}"
        self.fd: int | None = None
        if not self.discard and owner and not may_write(owner, dest):
            raise TransferError(f"cannot write output file {dest}: {owner} may not write there")
        if not self.discard:
            parent = os.path.dirname(dest)
            try:
                if parent:
                    _make_dirs_for(parent, owner)
                self.fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            except OSError as e:
                raise TransferError(f"cannot write output file {dest}: {e.strerror}") from None
        self.mode = (mode & 0o777) if isinstance(mode, int) else 0o644
        self.owner = owner

    def write(self, data: bytes) -> None:
        if self.fd is None:
            return
        view = memoryview(data)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]

    def finish(self) -> None:
        if self.fd is None:
            return
        os.close(self.fd)
        self.fd = None
        os.chmod(self.tmp, self.mode)
        if self.owner and os.geteuid() == 0:
            ids = user_ids(self.owner)
            if ids is not None:
                os.chown(self.tmp, ids[0], ids[1])
        os.replace(self.tmp, self.dest)

    def abort(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
            try:
                os.unlink(self.tmp)
            except OSError:
                pass
