"""Files of a job's sandbox, handled as root without trusting the job: links are never
followed, removal is cheap in the common case. Shared by the starter and its record."""

from __future__ import annotations

import os
import shutil
import stat

_DEVNULL: dict[int, int] = {}


def disk_kib(path: str, limit: int = 100_000) -> int:
    """What a sandbox holds on disk, KiB (allocated blocks; links not followed, hard
    links counted once, at most ``limit`` entries looked at: a job cannot make this
    walk costly). Off the event loop: it reads the directory tree."""
    total = 0
    seen: set[tuple[int, int]] = set()
    stack = [path]
    looked = 0
    while stack and looked < limit:
        try:
            with os.scandir(stack.pop()) as it:
                for entry in it:
                    looked += 1
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if st.st_nlink > 1:
                        if (st.st_dev, st.st_ino) in seen:
                            continue
                        seen.add((st.st_dev, st.st_ino))
                    total += st.st_blocks * 512
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(entry.path)
        except OSError:
            continue
    return -(-total // 1024)


def remove_tree(path: str) -> None:
    """``shutil.rmtree(path, ignore_errors=True)`` for a sandbox, cheaply in the usual case.

    A finished sandbox is a handful of plain files: unlinking them by name and
    removing the directory costs a few system calls, where rmtree's fd-based walk
    (open, fstat, scandir, lstat per entry) costs ~3 times the CPU. Anything else
    (a subdirectory, an odd entry, an error) falls back to rmtree. ``unlink`` never
    follows a symbolic link, so a job's link cannot make us remove something outside.
    """
    try:
        names = os.listdir(path)
    except FileNotFoundError:
        return
    except OSError:
        shutil.rmtree(path, ignore_errors=True)
        return
    for name in names:
        try:
            os.unlink(os.path.join(path, name))
        except FileNotFoundError:
            pass
        except OSError:  # a directory (EISDIR) or anything unusual
            shutil.rmtree(path, ignore_errors=True)
            return
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError:
        shutil.rmtree(path, ignore_errors=True)


def is_plain_file(path: str) -> bool:
    """A regular file, not a symlink: outputs are read as root, so a link the job
    planted (to /etc/shadow, say) must never be followed."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def devnull(flags: int) -> int:
    """One /dev/null descriptor per mode, opened once and shared by every job."""
    fd = _DEVNULL.get(flags)
    if fd is None:
        fd = _DEVNULL[flags] = os.open(os.devnull, flags | os.O_CLOEXEC)
    return fd


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]
