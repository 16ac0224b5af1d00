"""The Chirp file helper: a job's remote file operations, done as the job's owner.

A Chirp job (``WantIOProxy``) opens, reads and writes files on the submit host
through its starter and the schedd (``CHIRP_IO``, chirp_calls.py). The schedd runs as
root; HTCondor's shadow switches to the job's owner before it touches the owner's
files, and so does this: the schedd starts one helper process per job on the job's
first file operation, with its own interpreter as root (the interpreter may sit where
the owner cannot read it, as the DAG manager's does), and the helper gives up root
for the owner's uid, gid and groups before it reads a single request. From then on
the kernel decides what the job may touch, for every operation alike (open, rename,
chmod, symlink ...): no permission bits checked by hand, no window between a check
and the use. The helper keeps the job's open files between requests (a per-process
fd table, so a job's ``close 3`` never reaches the helper's own socket) and ends with
the job: the schedd ends it, or it sees its socket close.

Why a process and not ``setfsuid`` on a thread of the schedd: glibc applies
``setgroups`` to every thread of a process, a thread's identity leaks into whatever
else runs on it, and a bug there would act as root. A separate process that cannot
get root back costs ~30 ms once per job that uses Chirp file I/O.

Requests on the socket pair: a 4-byte big-endian length, a JSON object ``{"op",
"args", "size"}``, then ``size`` bytes (what a write carries). Answers: the same
framing, ``{"rc", "errno", "text", "size"}`` then ``size`` bytes (what a read got).
``rc`` is the operation's result (>= 0) or -1 with ``errno`` the error's name
(``EACCES``): the starter turns names into Chirp's codes. Only the standard library
is imported here: the helper starts in a few tens of milliseconds.

Run as ``python -I -m roost.daemons.schedd.chirpio FD UID GID GROUPS IWD`` (UID -1:
stay who we are, a schedd that is not root).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import stat
import struct
import sys
from collections.abc import Callable
from typing import Any

HEADER = struct.Struct(">I")
MAX_HEADER = 1 << 20  # a request's JSON: an op, a few words and numbers
IO_MAX = 1 << 20  # the most bytes one request carries or one answer returns
MAX_OPEN = 64  # files one job may hold open at once
FIRST_FD = 3


class _Refused(Exception):
    """An operation refused before the kernel saw it (its errno)."""

    def __init__(self, code: int) -> None:
        super().__init__(os.strerror(code))
        self.code = code


def stat_line(st: os.stat_result) -> str:
    """Chirp's stat answer: 13 numbers, as HTCondor's shadow writes them."""
    fields = (st.st_dev, st.st_ino, st.st_mode, st.st_nlink, st.st_uid, st.st_gid, st.st_rdev, st.st_size,
              st.st_blksize, st.st_blocks, int(st.st_atime), int(st.st_mtime), int(st.st_ctime))
    return " ".join(str(int(f)) for f in fields) + "\n"


def statfs_line(st: os.statvfs_result) -> str:
    """Chirp's statfs answer: type (unknown to statvfs: 0), block size, blocks, free,
    available, files, free files."""
    return f"0 {st.f_frsize or st.f_bsize} {st.f_blocks} {st.f_bfree} {st.f_bavail} {st.f_files} {st.f_ffree}\n"


def _open_flags(text: str) -> int:
    """Chirp's open flags (``rwatcx``) as os.open flags."""
    if "w" in text:
        flags = os.O_RDWR if "r" in text else os.O_WRONLY
    else:
        flags = os.O_RDONLY
    for letter, bit in (("c", os.O_CREAT), ("t", os.O_TRUNC), ("x", os.O_EXCL), ("a", os.O_APPEND)):
        if letter in text:
            flags |= bit
    return flags


#: each operation's argument kinds: s a path or word, d an integer
ARGS: dict[str, str] = {
    "open": "ssd", "close": "d", "read": "dd", "pread": "ddd", "sread": "ddddd",
    "write": "d", "pwrite": "dd", "swrite": "dddd", "lseek": "ddd", "fsync": "d",
    "fstat": "d", "fstatfs": "d", "fchown": "ddd", "fchmod": "dd", "ftruncate": "dd",
    "unlink": "s", "rename": "ss", "mkdir": "sd", "rmdir": "s", "rmall": "s",
    "stat": "s", "lstat": "s", "statfs": "s", "access": "sd", "chmod": "sd",
    "chown": "sdd", "lchown": "sdd", "truncate": "sd", "utime": "sdd",
    "link": "ss", "symlink": "ss", "readlink": "sd", "getdir": "s", "getlongdir": "s",
    "lookup": "s",
}

Answer = tuple[int, str, bytes]  # rc, a text line, data


def _failed(code: int) -> dict[str, Any]:
    return {"rc": -1, "errno": errno.errorcode.get(code, "EIO"), "size": 0}


class Files:
    """One job's operations on the submit host, relative paths under its Iwd."""

    def __init__(self, iwd: str) -> None:
        self.iwd = iwd
        self.fds: dict[int, int] = {}  # the job's fd -> ours

    def close_all(self) -> None:
        for fd in self.fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds.clear()

    # -- the request ----------------------------------------------------------------------

    def handle(self, op: str, args: Any, payload: bytes = b"") -> tuple[dict[str, Any], bytes]:
        """One request: the answer's header and its data."""
        kinds = ARGS.get(op)
        try:
            if kinds is None or not isinstance(args, list) or len(args) != len(kinds):
                raise _Refused(errno.EINVAL)
            for kind, value in zip(kinds, args, strict=True):
                if kind == "d" and type(value) is not int:
                    raise _Refused(errno.EINVAL)
                if kind == "s" and (not isinstance(value, str) or "\0" in value):
                    raise _Refused(errno.EINVAL)
            method: Callable[..., Answer] = getattr(self, "op_" + op)
            rc, text, data = method(*args, payload) if op in ("write", "pwrite", "swrite") else method(*args)
        except _Refused as e:
            return _failed(e.code), b""
        except OSError as e:
            return _failed(e.errno or errno.EIO), b""
        except (ValueError, OverflowError, TypeError):
            return _failed(errno.EINVAL), b""
        head: dict[str, Any] = {"rc": rc, "size": len(data)}
        if text:
            head["text"] = text
        return head, data

    def _path(self, path: str) -> str:
        if not path:
            raise _Refused(errno.ENOENT)
        return path if os.path.isabs(path) else os.path.join(self.iwd, path)

    def _fd(self, fd: int) -> int:
        got = self.fds.get(fd)
        if got is None:
            raise _Refused(errno.EBADF)
        return got

    @staticmethod
    def _length(n: int) -> int:
        if n < 0:
            raise _Refused(errno.EINVAL)
        return min(n, IO_MAX)

    # -- open files -----------------------------------------------------------------------

    def op_open(self, path: str, flags: str, mode: int) -> Answer:
        if len(self.fds) >= MAX_OPEN:
            raise _Refused(errno.EMFILE)
        # O_NONBLOCK: opening a FIFO must not hang the helper; cleared once open
        fd = os.open(self._path(path), _open_flags(flags) | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK,
                     mode & 0o1777)
        try:
            os.set_blocking(fd, True)
            line = stat_line(os.fstat(fd))
        except OSError:
            os.close(fd)
            raise
        ours = FIRST_FD
        while ours in self.fds:
            ours += 1
        self.fds[ours] = fd
        return ours, line, b""

    def op_close(self, fd: int) -> Answer:
        real = self._fd(fd)
        del self.fds[fd]
        os.close(real)
        return 0, "", b""

    def op_read(self, fd: int, n: int) -> Answer:
        data = os.read(self._fd(fd), self._length(n))
        return len(data), "", data

    def op_pread(self, fd: int, n: int, offset: int) -> Answer:
        data = os.pread(self._fd(fd), self._length(n), offset)
        return len(data), "", data

    def op_sread(self, fd: int, n: int, offset: int, stride: int, skip: int) -> Answer:
        """``n`` bytes in pieces of ``stride``, each ``skip`` bytes after the last one's start."""
        real, n = self._fd(fd), self._length(n)
        if stride <= 0 or skip < 0 or offset < 0:
            raise _Refused(errno.EINVAL)
        parts, total = [], 0
        while total < n:
            piece = os.pread(real, min(stride, n - total), offset)
            if not piece:
                break
            parts.append(piece)
            total += len(piece)
            offset += skip
        data = b"".join(parts)
        return len(data), "", data

    def op_write(self, fd: int, payload: bytes) -> Answer:
        real, view = self._fd(fd), memoryview(payload)
        while view:
            view = view[os.write(real, view):]
        return len(payload), "", b""

    def op_pwrite(self, fd: int, offset: int, payload: bytes) -> Answer:
        real, view = self._fd(fd), memoryview(payload)
        while view:
            n = os.pwrite(real, view, offset)
            view, offset = view[n:], offset + n
        return len(payload), "", b""

    def op_swrite(self, fd: int, offset: int, stride: int, skip: int, payload: bytes) -> Answer:
        real, view = self._fd(fd), memoryview(payload)
        if stride <= 0 or skip < 0 or offset < 0:
            raise _Refused(errno.EINVAL)
        while view:
            piece = view[:stride]
            at = offset
            while piece:
                n = os.pwrite(real, piece, at)
                piece, at = piece[n:], at + n
            view, offset = view[stride:], offset + skip
        return len(payload), "", b""

    def op_lseek(self, fd: int, offset: int, whence: int) -> Answer:
        if whence not in (os.SEEK_SET, os.SEEK_CUR, os.SEEK_END):
            raise _Refused(errno.EINVAL)
        return os.lseek(self._fd(fd), offset, whence), "", b""

    def op_fsync(self, fd: int) -> Answer:
        os.fsync(self._fd(fd))
        return 0, "", b""

    def op_fstat(self, fd: int) -> Answer:
        return 0, stat_line(os.fstat(self._fd(fd))), b""

    def op_fstatfs(self, fd: int) -> Answer:
        return 0, statfs_line(os.fstatvfs(self._fd(fd))), b""

    def op_fchown(self, fd: int, uid: int, gid: int) -> Answer:
        os.fchown(self._fd(fd), uid, gid)
        return 0, "", b""

    def op_fchmod(self, fd: int, mode: int) -> Answer:
        os.fchmod(self._fd(fd), mode & 0o1777)
        return 0, "", b""

    def op_ftruncate(self, fd: int, length: int) -> Answer:
        os.ftruncate(self._fd(fd), length)
        return 0, "", b""

    # -- paths ----------------------------------------------------------------------------

    def op_unlink(self, path: str) -> Answer:
        os.unlink(self._path(path))
        return 0, "", b""

    def op_rename(self, old: str, new: str) -> Answer:
        os.rename(self._path(old), self._path(new))
        return 0, "", b""

    def op_mkdir(self, path: str, mode: int) -> Answer:
        os.mkdir(self._path(path), mode & 0o1777)
        return 0, "", b""

    def op_rmdir(self, path: str) -> Answer:
        os.rmdir(self._path(path))
        return 0, "", b""

    def op_rmall(self, path: str) -> Answer:
        """A directory and everything in it (links are removed, never followed)."""
        full = self._path(path)
        if not stat.S_ISDIR(os.lstat(full).st_mode):
            raise _Refused(errno.ENOTDIR)
        shutil.rmtree(full)
        return 0, "", b""

    def op_stat(self, path: str) -> Answer:
        return 0, stat_line(os.stat(self._path(path))), b""

    def op_lstat(self, path: str) -> Answer:
        return 0, stat_line(os.lstat(self._path(path))), b""

    def op_statfs(self, path: str) -> Answer:
        return 0, statfs_line(os.statvfs(self._path(path))), b""

    def op_access(self, path: str, mode: int) -> Answer:
        full = self._path(path)
        os.stat(full)  # missing: ENOENT, not EACCES
        if not os.access(full, mode & 0o7):
            raise _Refused(errno.EACCES)
        return 0, "", b""

    def op_chmod(self, path: str, mode: int) -> Answer:
        os.chmod(self._path(path), mode & 0o1777)
        return 0, "", b""

    def op_chown(self, path: str, uid: int, gid: int) -> Answer:
        os.chown(self._path(path), uid, gid)
        return 0, "", b""

    def op_lchown(self, path: str, uid: int, gid: int) -> Answer:
        os.chown(self._path(path), uid, gid, follow_symlinks=False)
        return 0, "", b""

    def op_truncate(self, path: str, length: int) -> Answer:
        os.truncate(self._path(path), length)
        return 0, "", b""

    def op_utime(self, path: str, atime: int, mtime: int) -> Answer:
        os.utime(self._path(path), (atime, mtime))
        return 0, "", b""

    def op_link(self, old: str, new: str) -> Answer:
        os.link(self._path(old), self._path(new))
        return 0, "", b""

    def op_symlink(self, target: str, new: str) -> Answer:
        if not target:
            raise _Refused(errno.ENOENT)
        os.symlink(target, self._path(new))  # the link's text is kept as the job wrote it
        return 0, "", b""

    def op_readlink(self, path: str, n: int) -> Answer:
        data = os.fsencode(os.readlink(self._path(path)))[: self._length(n)]
        return len(data), "", data

    def _listing(self, path: str, long: bool) -> Answer:
        full = self._path(path)
        out: list[str] = []
        size = 0
        for name in sorted(os.listdir(full)):
            out.append(name + "\n")
            size += len(name) + 1
            if long:
                entry = os.path.join(full, name)
                try:
                    st = os.stat(entry)
                except OSError:
                    st = os.lstat(entry)  # a dangling link: itself
                out.append(stat_line(st))
                size += len(out[-1])
            if size > IO_MAX:
                raise _Refused(errno.EFBIG)
        out.append("\n")  # the end of the listing, as HTCondor marks it
        data = "".join(out).encode("utf-8", "surrogateescape")
        return len(data), "", data

    def op_getdir(self, path: str) -> Answer:
        return self._listing(path, False)

    def op_getlongdir(self, path: str) -> Answer:
        return self._listing(path, True)

    def op_lookup(self, path: str) -> Answer:
        """Where a name is on the submit host (HTCondor's URL, now a plain path)."""
        data = os.fsencode(self._path(path))
        return len(data), "", data


# -- the process ----------------------------------------------------------------------------


def _read_exactly(f: Any, n: int) -> bytes | None:
    data = f.read(n)
    if len(data) < n:
        return None
    return bytes(data)


def serve(sock: socket.socket, files: Files) -> None:
    """Requests until the schedd closes the socket (or breaks the framing)."""
    rfile = sock.makefile("rb")
    try:
        while True:
            header = _read_exactly(rfile, HEADER.size)
            if header is None:
                return
            (n,) = HEADER.unpack(header)
            if n > MAX_HEADER:
                return
            body = _read_exactly(rfile, n)
            if body is None:
                return
            try:
                req = json.loads(body)
                size = req.get("size", 0) if isinstance(req, dict) else -1
            except ValueError:
                return
            if type(size) is not int or not 0 <= size <= IO_MAX:
                return
            payload = _read_exactly(rfile, size) if size else b""
            if payload is None:
                return
            head, data = files.handle(str(req.get("op")), req.get("args"), payload)
            out = json.dumps(head).encode()
            sock.sendall(HEADER.pack(len(out)) + out + data)
    finally:
        files.close_all()


def become(uid: int, gid: int, groups: list[int]) -> None:
    """Give up root for the owner for good (the saved ids too)."""
    if uid < 0 or os.geteuid() != 0:
        return
    if uid == 0:
        raise SystemExit("roost chirpio: refusing to serve a job's files as root")
    os.setgroups(groups)
    os.setgid(gid)
    os.setuid(uid)
    if os.getuid() == 0 or os.geteuid() == 0 or os.getresuid()[2] == 0:
        raise SystemExit("roost chirpio: could not give up root")


def main(argv: list[str]) -> int:
    fd, uid, gid = int(argv[0]), int(argv[1]), int(argv[2])
    groups = [int(g) for g in argv[3].split(",") if g]
    iwd = argv[4]
    sock = socket.socket(fileno=fd)
    become(uid, gid, groups)
    os.umask(0o022)
    os.chdir("/")
    serve(sock, Files(iwd))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
