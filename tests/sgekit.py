"""A private Grid Engine cell on this host for the grid universe's tests (issue 30).

Debian's Son of Grid Engine 8.1.9 (``gridengine-master``, ``-exec``, ``-client``): an
``SGE_ROOT`` of its own under one temporary directory (the package's binaries linked
in), cell ``roost`` with classic (flat file) spooling, an ``sge_qmaster`` and one
``sge_execd`` on loopback ports picked free at start, one queue ``roost.q`` of
``slots`` slots and a parallel environment ``smp`` (all slots on one host, what
``request_cpus`` asks for). :attr:`SgeCell.env` points Grid Engine's commands at it
(``SGE_ROOT``, ``SGE_CELL``, ``SGE_QMASTER_PORT``, ``SGE_EXECD_PORT``). Nothing of the
package's own cell (/var/lib/gridengine/default) is read or changed, and no debconf
answer is needed: the cell is made here with the package's ``spoolinit`` and
``spooldefaults``, as its ``init_cluster`` script does.

Grid Engine insists that a host's name and the name its address resolves back to are
one: where they differ (``vm`` whose 127.0.0.1 reads back as ``localhost``) the cell's
``host_aliases`` says they are the same host.

Run as a script to try jobs by hand::

    python tests/sgekit.py start [DIR]    # prints the lines to export
    python tests/sgekit.py stop DIR
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PACKAGE_ROOT = Path("/var/lib/gridengine")
LIBEXEC = Path("/usr/lib/gridengine")
SHARE = Path("/usr/share/gridengine")
DAEMONS = ("sge_qmaster", "sge_execd")
COMMANDS = ("qsub", "qstat", "qdel", "qacct", "qconf")
CELL = "roost"


def missing() -> str | None:
    """Why no private Grid Engine can start here (None when it can)."""
    for d in DAEMONS:
        if not Path("/usr/sbin", d).exists():
            return f"no `{d}` (Debian: gridengine-master gridengine-exec gridengine-client; `make test` installs them)"
    for c in COMMANDS:
        if shutil.which(c) is None:
            return f"no `{c}` (Debian: gridengine-client)"
    for p in (LIBEXEC / "spoolinit", LIBEXEC / "spooldefaults", SHARE / "default-configuration"):
        if not p.exists():
            return f"no {p} (Debian's gridengine-common/-master)"
    if os.geteuid() != 0:
        return "sge_execd runs jobs as their users: it needs root"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def host_names() -> tuple[str, str]:
    """(the name Grid Engine knows this host by: its address resolved back, its own name)."""
    own = socket.gethostname()
    try:
        back = socket.gethostbyaddr(socket.gethostbyname(own))[0]
    except OSError:
        back = own
    return back, own


_QUEUE = """qname                 roost.q
hostlist              {host}
seq_no                0
load_thresholds       NONE
suspend_thresholds    NONE
nsuspend              1
suspend_interval      00:05:00
priority              0
min_cpu_interval      00:05:00
processors            UNDEFINED
qtype                 BATCH INTERACTIVE
ckpt_list             NONE
pe_list               smp
rerun                 FALSE
slots                 {slots}
tmpdir                /tmp
shell                 /bin/sh
prolog                NONE
epilog                NONE
shell_start_mode      posix_compliant
starter_method        NONE
suspend_method        NONE
resume_method         NONE
terminate_method      NONE
notify                00:00:60
owner_list            NONE
user_lists            NONE
xuser_lists           NONE
subordinate_list      NONE
complex_values        NONE
projects              NONE
xprojects             NONE
calendar              NONE
initial_state         default
"""
_LIMITS = ("rt", "cpu", "fsize", "data", "stack", "core", "rss", "vmem")

_PE = """pe_name            smp
slots              999
user_lists         NONE
xuser_lists        NONE
start_proc_args    NONE
stop_proc_args     NONE
allocation_rule    $pe_slots
control_slaves     FALSE
job_is_first_task  TRUE
urgency_slots      min
accounting_summary FALSE
qsort_args         NONE
"""


class SgeCell:
    """Start with ``with SgeCell() as sge:``; ``sge.env`` runs Grid Engine's commands
    against it, ``sge.run("qstat")`` runs one."""

    def __init__(self, directory: str | os.PathLike[str] | None = None, *, slots: int = 2) -> None:
        self.dir = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="roost-sge-", dir="/tmp"))
        self.slots = slots
        self.host, self.own_name = host_names()
        ports = self.dir / "ports"  # a cell started by `sgekit.py start` keeps its ports for `stop`
        if ports.exists():
            self.qmaster_port, self.execd_port = (int(p) for p in ports.read_text().split())
        else:
            self.qmaster_port, self.execd_port = _free_port(), _free_port()
        self.common = self.dir / CELL / "common"
        self.spool = self.dir / "spool"
        self.env = dict(os.environ, SGE_ROOT=str(self.dir), SGE_CELL=CELL,
                        SGE_QMASTER_PORT=str(self.qmaster_port), SGE_EXECD_PORT=str(self.execd_port))

    # -- start and stop ------------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> SgeCell:
        d = self.dir
        d.mkdir(parents=True, exist_ok=True)
        d.chmod(0o755)  # every user's qsub reads the cell's common files
        for sub in ("bin", "lib", "util", "utilbin"):
            link = d / sub
            if not link.exists():
                link.symlink_to(PACKAGE_ROOT / sub)
        for sub in (self.common, self.spool / "qmaster", self.spool / "execd"):
            sub.mkdir(parents=True, exist_ok=True)
            sub.chmod(0o755)
        (d / "ports").write_text(f"{self.qmaster_port} {self.execd_port}\n")
        params = f"{self.common};{self.spool / 'qmaster'}"
        (self.common / "bootstrap").write_text(f"""\
admin_user              none
default_domain          none
ignore_fqdn             true
spooling_method         classic
spooling_lib            libspoolc
spooling_params         {params}
binary_path             /usr/sbin
qmaster_spool_dir       {self.spool / 'qmaster'}
security_mode           none
listener_threads        2
worker_threads          2
scheduler_threads       1
""")
        if self.own_name != self.host:
            (self.common / "host_aliases").write_text(f"{self.host} {self.own_name}\n")
        (self.common / "act_qmaster").write_text(f"{self.host}\n")
        conf = self.dir / "global-configuration"
        lines = []
        for line in (SHARE / "default-configuration").read_text().splitlines():
            key = line.split()[0] if line.split() else ""
            if key == "execd_spool_dir":
                line = f"execd_spool_dir        {self.spool / 'execd'}"
            elif key == "reporting_params":  # accounting within a second of a job's end
                line = "reporting_params       accounting=true reporting=false flush_time=00:00:01 joblog=false " \
                       "sharelog=00:00:00"
            elif key == "load_report_time":
                line = "load_report_time       00:00:05"
            elif key == "mailer":
                line = "mailer                 /bin/true"
            lines.append(line)
        conf.write_text("\n".join(lines) + "\n")
        self._tool(str(LIBEXEC / "spoolinit"), "classic", "libspoolc", params, "init")
        self._tool(str(LIBEXEC / "spooldefaults"), "configuration", str(conf))
        self._tool(str(LIBEXEC / "spooldefaults"), "complexes", str(SHARE / "util/resources/centry"))
        self._tool(str(LIBEXEC / "spooldefaults"), "usersets", str(SHARE / "util/resources/usersets"))
        self._tool(str(LIBEXEC / "spooldefaults"), "managers", "root")
        self._tool(str(LIBEXEC / "spooldefaults"), "adminhosts", self.host)
        self._tool("/usr/sbin/sge_qmaster")
        deadline = time.monotonic() + timeout
        self._until(deadline, lambda: self.run("qconf", "-sh", check=False).returncode == 0, "sge_qmaster answers")
        self.run("qconf", "-as", self.host)
        sconf = self.run("qconf", "-ssconf").stdout
        sched = []
        for line in sconf.splitlines():
            key = line.split()[0] if line.split() else ""
            if key == "schedule_interval":
                line = "schedule_interval                 0:0:1"
            elif key in ("flush_submit_sec", "flush_finish_sec"):
                line = f"{key}                  1"
            sched.append(line)
        self._file_cmd("-Msconf", "sched", "\n".join(sched) + "\n")
        self._tool("/usr/sbin/sge_execd")
        self._file_cmd("-Ap", "pe", _PE)
        queue = _QUEUE.format(host=self.host, slots=self.slots) + "".join(
            f"{p}_{lim:<19} INFINITY\n" for lim in _LIMITS for p in "sh")
        self._file_cmd("-Aq", "queue", queue)

        def ready() -> bool:  # the execd reported in: the queue instance has no 'u' (unknown) state
            out = self.run("qstat", "-f", "-q", "roost.q", check=False).stdout
            rows = [r.split() for r in out.splitlines() if r.startswith("roost.q@")]
            return bool(rows) and len(rows[0]) >= 5 and rows[0][4] == "lx-amd64" and len(rows[0]) == 5

        self._until(deadline, ready, "sge_execd reports in and roost.q is up")
        return self

    def stop_qmaster(self) -> None:
        """Only the qmaster: the execd keeps running its jobs and reports them when it is back."""
        pidfile = self.spool / "qmaster" / "qmaster.pid"
        pid = int(pidfile.read_text().split()[0])
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except OSError:
                return
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)

    def start_qmaster(self, timeout: float = 60.0) -> None:
        self._tool("/usr/sbin/sge_qmaster")
        self._until(time.monotonic() + timeout, lambda: self.run("qstat", "-u", "*", check=False).returncode == 0,
                    "sge_qmaster answers again")

    def _tool(self, *argv: str) -> None:
        done = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stdout}{done.stderr}\n"
                               f"{self.log_tails()}")

    def _file_cmd(self, option: str, name: str, text: str) -> None:
        path = self.dir / f"{name}.conf"
        path.write_text(text)
        self.run("qconf", option, str(path))

    def _until(self, deadline: float, ok: object, what: str) -> None:
        while time.monotonic() < deadline:
            if ok():  # type: ignore[operator]
                return
            time.sleep(0.3)
        raise RuntimeError(f"Grid Engine: no {what} in time:\n{self.log_tails()}")

    def pids(self) -> list[int]:
        out = []
        for pidfile in (self.spool / "execd" / self.host / "execd.pid", self.spool / "qmaster" / "qmaster.pid"):
            try:
                out.append(int(pidfile.read_text().split()[0]))
            except (OSError, ValueError, IndexError):
                continue
        return out

    def stop(self) -> None:
        # the execd and its jobs first (qconf -kej), then the qmaster; signals where it does not answer
        self.run("qconf", "-kej", self.host, check=False)
        self.run("qconf", "-km", check=False)
        for pid in self.pids():
            try:
                # 2 s, not 10: after -km the qmaster lingers 10 s (a SIGTERM does not
                # shorten it) and the cell is removed next: nothing is lost to the SIGKILL
                deadline = time.monotonic() + 2
                while time.monotonic() < deadline:
                    os.kill(pid, 0)
                    time.sleep(0.1)
                os.kill(pid, signal.SIGKILL)
            except OSError:
                continue

    def __enter__(self) -> SgeCell:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- use -----------------------------------------------------------------------------

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([shutil.which(args[0]) or args[0], *args[1:]], env=self.env, capture_output=True,
                              text=True, check=check, timeout=60)

    def config_lines(self) -> str:
        """What a roost pool's configuration says to use this cell."""
        return "".join(f"{k} = {self.env[k]}\n" for k in ("SGE_ROOT", "SGE_CELL", "SGE_QMASTER_PORT", "SGE_EXECD_PORT"))

    def log_tails(self, lines: int = 20) -> str:
        out = []
        for f in (self.spool / "qmaster" / "messages", self.spool / "execd" / self.host / "messages"):
            if f.exists():
                text = f.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {f}\n" + "\n".join(text))
        return "\n".join(out)


def main(argv: list[str]) -> int:
    if len(argv) < 1 or argv[0] not in ("start", "stop"):
        print(__doc__, file=sys.stderr)
        return 2
    directory = argv[1] if len(argv) > 1 else "/tmp/roost-sge"
    if argv[0] == "start":
        why = missing()
        if why:
            print(why, file=sys.stderr)
            return 1
        cell = SgeCell(directory).start()
        for k in ("SGE_ROOT", "SGE_CELL", "SGE_QMASTER_PORT", "SGE_EXECD_PORT"):
            print(f"export {k}={cell.env[k]}")
        return 0
    SgeCell(directory).stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
