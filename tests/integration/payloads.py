"""An attacker's payloads for the job-environment tests: a shared library that, wherever
the dynamic loader runs it (LD_PRELOAD, LD_AUDIT), appends who it ran as to a log, and a
Python ``sitecustomize`` that does the same (PYTHONPATH, PYTHONSTARTUP, PYTHONHOME).

A test gives these to jobs through every channel a submitter has and then reads the log:
each line must name the job's user, never root. The log lives in a directory anyone may
write (sticky, as /tmp), so a payload run as the job's user can say so too: a test that
expects the payload to run somewhere proves it did, not only that root stayed clean.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

_LIBRARY = r"""
#define _GNU_SOURCE
#include <stdio.h>
#include <unistd.h>

static void note(const char *how) {
    char exe[512] = {0};
    if (readlink("/proc/self/exe", exe, sizeof exe - 1) < 0) exe[0] = '?';
    FILE *f = fopen(LOG, "a");
    if (f != NULL) {
        fprintf(f, "%s uid=%d euid=%d exe=%s\n", how, (int)getuid(), (int)geteuid(), exe);
        fclose(f);
    }
}

__attribute__((constructor)) static void loaded(void) { note("so"); }

/* LD_AUDIT: the loader calls this first; any version it knows keeps the library loaded */
unsigned int la_version(unsigned int version) { note("audit"); return version; }
"""

_PYTHON = """
import os
try:
    with open({log!r}, "a") as f:
        f.write("py uid=%d euid=%d exe=%s\\n" % (os.getuid(), os.geteuid(), os.path.realpath("/proc/self/exe")))
except OSError:
    pass
"""


@dataclass(frozen=True)
class Payloads:
    """Where the payloads and their log are."""

    dir: Path
    library: Path  # evil.so
    python_dir: Path  # sitecustomize.py, usercustomize.py, startup.py: for PYTHONPATH & co
    log: Path

    def lines(self) -> list[str]:
        try:
            return self.log.read_text().splitlines()
        except FileNotFoundError:
            return []

    def as_root(self) -> list[str]:
        """Each logged run whose real or effective uid was root."""
        return [ln for ln in self.lines() if " uid=0 " in ln or " euid=0 " in ln]

    def uids(self) -> set[int]:
        return {int(ln.split(" uid=", 1)[1].split()[0]) for ln in self.lines()}

    def clear(self) -> None:
        self.log.write_text("")
        self.log.chmod(0o666)


def build(where: Path) -> Payloads | None:
    """Compile the library into ``where`` (made world-readable and -writable, sticky);
    None without a C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    where.mkdir(parents=True, exist_ok=True)
    where.chmod(0o1777)
    log = where / "payload.log"
    src = where / "evil.c"
    src.write_text(_LIBRARY)
    lib = where / "evil.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", f'-DLOG="{log}"', "-o", str(lib), str(src)],
                   check=True, capture_output=True, timeout=60)
    lib.chmod(0o755)
    py = where / "py"
    py.mkdir(exist_ok=True)
    py.chmod(0o755)
    for name in ("sitecustomize.py", "startup.py", "usercustomize.py"):
        (py / name).write_text(_PYTHON.format(log=str(log)))
        (py / name).chmod(0o644)
    payloads = Payloads(where, lib, py, log)
    payloads.clear()
    return payloads


def path_is_reachable_by_all(path: Path) -> bool:
    """Whether every directory above ``path`` lets others search it (a library under a
    0700 home cannot be loaded by the job's user at all)."""
    p = path.resolve()
    for parent in [p, *p.parents]:
        if parent.is_dir() and not os.stat(parent).st_mode & 0o001:
            return False
    return True
