"""A private Slurm cluster on this host for the grid universe's tests (issue 30).

Debian's ``slurm-wlm`` and ``munge``: a ``munged`` with its own key and socket, a
``slurmctld`` and one ``slurmd`` (a node of ``cpus`` CPUs and ``memory_mb``), all on
loopback ports picked free at start, their state, spool and logs under one temporary
directory; ``SLURM_CONF`` (in :attr:`SlurmCluster.env`) points Slurm's commands at it.
Nothing of the system's own Slurm or munge configuration is read or changed.

Run as a script for the ``make slurm`` target::

    python tests/slurmkit.py start [DIR]    # prints the SLURM_CONF line to export
    python tests/slurmkit.py stop DIR
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

TOOLS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel")


def missing() -> str | None:
    """Why no private Slurm can start here (None when it can)."""
    for tool in TOOLS:
        if shutil.which(tool) is None and not Path("/usr/sbin", tool).exists():
            return f"no `{tool}` (Debian: slurm-wlm, munge; `make test` installs them as root)"
    if os.geteuid() != 0:
        return "slurmd runs jobs as their users: it needs root"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tool(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


class SlurmCluster:
    """Start with ``with SlurmCluster() as slurm:``; ``slurm.env`` runs Slurm's commands
    against it, ``slurm.run("squeue")`` runs one."""

    def __init__(self, directory: str | os.PathLike[str] | None = None, *, cpus: int = 2,
                 memory_mb: int = 2048, partitions: tuple[str, ...] = ("debug",), extra_conf: str = "") -> None:
        self.dir = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="roost-slurm-", dir="/tmp"))
        self.cpus, self.memory_mb, self.partitions = cpus, memory_mb, partitions
        self.extra_conf = extra_conf  # more slurm.conf lines (SlurmdTimeout=... for the fault tests)
        self.node = f"roostnode{os.getpid()}"
        self.conf = self.dir / "slurm.conf"
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))

    # -- start and stop ------------------------------------------------------------------

    def start(self, timeout: float = 30.0) -> SlurmCluster:
        d = self.dir
        for sub in ("state", "spool", "log", "munge", "munge-key"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        d.chmod(0o755)
        (d / "munge").chmod(0o755)  # the socket's directory: every user's sbatch talks to munged
        key = d / "munge-key" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        (d / "munge-key").chmod(0o700)
        ctl, slurmd = _free_port(), _free_port()
        parts = "\n".join(
            f"PartitionName={p} Nodes=ALL Default={'YES' if i == 0 else 'NO'} MaxTime=INFINITE State=UP"
            for i, p in enumerate(self.partitions))
        self.conf.write_text(f"""\
ClusterName=roost{os.getpid()}
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctl}
SlurmdPort={slurmd}
AuthType=auth/munge
AuthInfo=socket={d}/munge/munge.socket
CryptoType=crypto/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/builtin
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
InactiveLimit=0
MinJobAge=600
KillWait=3
{self.extra_conf}
NodeName={self.node} NodeHostname=localhost NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory={self.memory_mb} State=UNKNOWN
{parts}
""")
        subprocess.run([_tool("munged"), f"--key-file={key}", f"--socket={d}/munge/munge.socket",
                        f"--pid-file={d}/munge/munged.pid", f"--log-file={d}/log/munged.log",
                        f"--seed-file={d}/munge/seed", "--force"], check=True, env=self.env)
        subprocess.run([_tool("slurmctld")], check=True, env=self.env)
        subprocess.run([_tool("slurmd"), "-N", self.node], check=True, env=self.env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.run("sinfo", "-h", "-o", "%t", check=False)
            if got.returncode == 0 and got.stdout.strip() in ("idle", "mix", "alloc"):
                return self
            time.sleep(0.2)
        raise RuntimeError(f"Slurm did not come up in {timeout:.0f} s:\n{self.log_tails()}")

    def stop(self) -> None:
        self.kill_node()  # slurmd would leave running jobs' slurmstepds behind
        for name in ("slurmctld", "munge/munged"):
            pidfile = self.dir / f"{name}.pid"
            try:
                pid = int(pidfile.read_text().split()[0])
                os.kill(pid, signal.SIGTERM)
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:
                    os.kill(pid, 0)
                    time.sleep(0.05)
                os.kill(pid, signal.SIGKILL)
            except (OSError, ValueError, IndexError):
                continue

    # -- faults (tests/integration/test_grid_slurm_faults.py) -----------------------------

    def _pid(self, name: str) -> int | None:
        try:
            return int((self.dir / f"{name}.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def stop_controller(self, timeout: float = 15.0) -> None:
        """slurmctld stopped (SIGTERM: it saves its state); slurmd and the jobs run on."""
        pid = self._pid("slurmctld")
        if pid is None:
            return
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
            time.sleep(0.05)

    def start_controller(self, timeout: float = 30.0) -> None:
        """slurmctld started again: it recovers its jobs from StateSaveLocation."""
        subprocess.run([_tool("slurmctld")], check=True, env=self.env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.run("scontrol", "ping", check=False).stdout.count("UP"):
                return
            time.sleep(0.2)
        raise RuntimeError(f"slurmctld did not come back in {timeout:.0f} s:\n{self.log_tails()}")

    def node_pids(self) -> list[int]:
        """This cluster's slurmd and everything under it: its slurmstepds (which Slurm
        re-parents to init, so found by the SLURM_CONF they inherit) and their jobs."""
        mark = f"SLURM_CONF={self.conf}".encode()
        children: dict[int, list[int]] = {}
        roots = [p for p in (self._pid("slurmd"),) if p is not None]
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
                children.setdefault(int(fields[1]), []).append(int(proc.name))
                if (proc / "comm").read_text().startswith("slurmstepd") and mark in (proc / "environ").read_bytes():
                    roots.append(int(proc.name))
            except (OSError, IndexError, ValueError):
                continue
        tree, todo = [], roots
        while todo:
            p = todo.pop()
            if p not in tree:
                tree.append(p)
                todo += children.get(p, [])
        return tree

    def kill_node(self) -> list[int]:
        """The node lost: slurmd, its slurmstepds and the jobs killed with SIGKILL, as a
        machine that loses power; the pids killed."""
        tree = self.node_pids()
        for p in tree:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                continue
        return tree

    def start_node(self) -> None:
        """slurmd started again (the node back: ReturnToService=2 makes it usable)."""
        subprocess.run([_tool("slurmd"), "-N", self.node], check=True, env=self.env)

    def __enter__(self) -> SlurmCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            shutil.rmtree(self.dir, ignore_errors=True)
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- use -----------------------------------------------------------------------------

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([_tool(args[0]), *args[1:]], env=self.env, capture_output=True, text=True,
                              check=check, timeout=60)

    def log_tails(self, lines: int = 20) -> str:
        out = []
        for f in sorted((self.dir / "log").glob("*.log")):
            text = f.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"--- {f.name}\n" + "\n".join(text))
        return "\n".join(out)


def main(argv: list[str]) -> int:
    if len(argv) < 1 or argv[0] not in ("start", "stop"):
        print(__doc__, file=sys.stderr)
        return 2
    if argv[0] == "start":
        why = missing()
        if why:
            print(why, file=sys.stderr)
            return 1
        cluster = SlurmCluster(argv[1] if len(argv) > 1 else "/tmp/roost-slurm").start()
        print(f"export SLURM_CONF={cluster.conf}")
        return 0
    SlurmCluster(argv[1]).stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
