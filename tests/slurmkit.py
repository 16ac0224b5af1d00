"""A private Slurm cluster for the grid universe's tests (issue 30).

Debian's ``slurm-wlm`` and ``munge``: a ``munged`` with its own key and socket, a
``slurmctld`` and its ``slurmd`` nodes, on ports picked free at start, their state,
spool and logs under one temporary directory; ``SLURM_CONF`` (in
:attr:`SlurmCluster.env`) points Slurm's commands at it. Nothing of the system's own
Slurm or munge configuration is read or changed.

Two shapes:

* one host (the default): slurmctld and one slurmd (a node of ``cpus`` CPUs and
  ``memory_mb``) on this host's loopback (tests/integration/test_grid_slurm*.py,
  test_annex_slurm.py, ``make slurm``);
* hosts of a ``tests/system/netns.py`` Network (``controller=`` and ``nodes=``):
  slurmctld listens on the controller host's address (``SlurmctldHost=name(addr)``),
  each node is ``NodeName=<host> NodeAddr=<its address>``, every daemon is started
  with ``Host.argv`` so it lives in its host's namespaces (its hostname too, so a
  job's ``hostname`` is its node's). Spool, pid and log files are per node (``%n``,
  which Slurm 22.05 expands in SlurmdSpoolDir, SlurmdPidFile and SlurmdLogFile).
  munged's socket is a file, which every namespace reaches: one munged, on the
  controller host, serves them all. Slurm's commands (:meth:`SlurmCluster.run`) run on
  the controller host: the only way to its address.

Either way ``batch_sched_delay=0``: Slurm tries to start a batch job as it is submitted
(its default holds each back up to 3 s, 2.5 s on average here, for sites with very
high submit rates).

Run as a script for the ``make slurm`` target::

    python tests/slurmkit.py start [DIR]    # prints the SLURM_CONF line to export
    python tests/slurmkit.py stop DIR
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

TOOLS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel")

#: ``extra_conf`` for tests that lose a node: Slurm's NODE_FAIL some 10 s after, not
#: minutes (SlurmdTimeout is 300 s by default, and a ping of a dead slurmd waits out
#: MessageTimeout, 10 s, twice: 25 s even with a short SlurmdTimeout)
NODE_LOSS_CONF = "SlurmdTimeout=4\nMessageTimeout=3"


class NetHost(Protocol):
    """What the kit needs of a ``netns.Host`` (not imported: the kit also runs alone)."""

    name: str
    address: str

    def argv(self, argv: list[str]) -> list[str]: ...

    def pids(self) -> list[int]: ...


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


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists():
            return True
        time.sleep(0.05)
    return False


def event_codes(log: Path) -> list[str]:
    """The event numbers of a user log, in order (``000``, ``027``, ``001`` ...)."""
    return re.findall(r"^(\d{3}) \(", log.read_text(), re.M)


class SlurmCluster:
    """Start with ``with SlurmCluster() as slurm:``; ``slurm.env`` runs Slurm's commands
    against it, ``slurm.run("squeue")`` runs one."""

    def __init__(self, directory: str | os.PathLike[str] | None = None, *, cpus: int = 2,
                 memory_mb: int = 2048, partitions: tuple[str, ...] = ("debug",), extra_conf: str = "",
                 controller: NetHost | None = None, nodes: Sequence[NetHost] = ()) -> None:
        self.dir = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="roost-slurm-", dir="/tmp"))
        self.cpus, self.memory_mb, self.partitions = cpus, memory_mb, partitions
        self.extra_conf = extra_conf  # more slurm.conf lines (SlurmdTimeout=... for the fault tests)
        assert (controller is None) == (not nodes), "hosts for both the controller and the nodes, or neither"
        self.controller = controller
        #: node name -> its host (None: this host, the one-host shape)
        self.hosts: dict[str, NetHost | None] = {h.name: h for h in nodes} or {f"roostnode{os.getpid()}": None}
        self.node = next(iter(self.hosts))  # the first (in the one-host shape, the only) node
        self.conf = self.dir / "slurm.conf"
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))

    # -- start and stop ------------------------------------------------------------------

    def _on(self, host: NetHost | None, argv: list[str]) -> list[str]:
        return host.argv(argv) if host is not None else argv

    def _conf_text(self) -> str:
        d, c = self.dir, self.controller
        ctl = f"{c.name}({c.address})" if c is not None else "localhost(127.0.0.1)"
        parts = "\n".join(
            f"PartitionName={p} Nodes=ALL Default={'YES' if i == 0 else 'NO'} MaxTime=INFINITE State=UP"
            for i, p in enumerate(self.partitions))
        nodes = "\n".join(
            f"NodeName={name} NodeHostname={h.name if h else 'localhost'} NodeAddr={h.address if h else '127.0.0.1'} "
            f"CPUs={self.cpus} RealMemory={self.memory_mb} State=UNKNOWN" for name, h in self.hosts.items())
        return f"""\
ClusterName=roost{os.getpid()}
SlurmctldHost={ctl}
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
AuthType=auth/munge
AuthInfo=socket={d}/munge/munge.socket
CryptoType=crypto/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool/%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd-%n.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/builtin
SchedulerParameters=batch_sched_delay=0
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
InactiveLimit=0
MinJobAge=600
KillWait=3
{self.extra_conf}
{nodes}
{parts}
"""

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
        self.conf.write_text(self._conf_text())
        subprocess.run(self._on(self.controller, [
            _tool("munged"), f"--key-file={key}", f"--socket={d}/munge/munge.socket",
            f"--pid-file={d}/munge/munged.pid", f"--log-file={d}/log/munged.log",
            f"--seed-file={d}/munge/seed", "--force"]), check=True, env=self.env)
        subprocess.run(self._on(self.controller, [_tool("slurmctld")]), check=True, env=self.env)
        for name in self.hosts:
            self.start_node(name)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if set(self.node_states().values()) <= {"idle", "mix", "alloc"} and self.node_states():
                return self
            time.sleep(0.2)
        raise RuntimeError(f"Slurm did not come up in {timeout:.0f} s:\n{self.log_tails()}")

    def stop(self) -> None:
        for name in self.hosts:
            self.kill_node(name)  # slurmd would leave running jobs' slurmstepds behind
        for pid in (self._pid("slurmctld"), self._pid("munge/munged")):
            if pid is None:
                continue
            try:
                os.kill(pid, signal.SIGTERM)
                if not _wait_gone(pid, 10):
                    os.kill(pid, signal.SIGKILL)
            except OSError:
                continue

    # -- faults (tests/integration/test_grid_slurm_faults.py, tests/system/test_slurm_hosts.py)

    def _pid(self, name: str) -> int | None:
        try:
            return int((self.dir / f"{name}.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def slurmd_pid(self, node: str | None = None) -> int | None:
        """The pid of ``node``'s slurmd (the first node's by default), None when it has none."""
        return self._pid(f"slurmd-{node or self.node}")

    def stop_controller(self, timeout: float = 15.0) -> None:
        """slurmctld stopped (SIGTERM: it saves its state); slurmd and the jobs run on."""
        pid = self._pid("slurmctld")
        if pid is None:
            return
        os.kill(pid, signal.SIGTERM)
        _wait_gone(pid, timeout)

    def start_controller(self, timeout: float = 30.0) -> None:
        """slurmctld started again: it recovers its jobs from StateSaveLocation."""
        subprocess.run(self._on(self.controller, [_tool("slurmctld")]), check=True, env=self.env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.run("scontrol", "ping", check=False).stdout.count("UP"):
                return
            time.sleep(0.2)
        raise RuntimeError(f"slurmctld did not come back in {timeout:.0f} s:\n{self.log_tails()}")

    def node_pids(self, node: str | None = None) -> list[int]:
        """``node``'s slurmd and everything under it: its slurmstepds and their jobs. On a
        host of its own, every process in the host's namespace; on this host, the
        slurmd's tree and the slurmstepds (which Slurm re-parents to init, so found by
        the SLURM_CONF they inherit) and theirs."""
        host = self.hosts[node or self.node]
        if host is not None:
            return host.pids()
        mark = f"SLURM_CONF={self.conf}".encode()
        children: dict[int, list[int]] = {}
        # every slurmd of this directory's (one, but a `slurmkit.py stop` does not know its name)
        roots = [p for p in (self._pid(f.stem) for f in self.dir.glob("slurmd-*.pid")) if p is not None]
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

    def kill_node(self, node: str | None = None) -> list[int]:
        """The node lost (the first node by default): slurmd, its slurmstepds and the jobs
        killed with SIGKILL, as a machine that loses power; the pids killed."""
        tree = self.node_pids(node)
        for p in tree:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                continue
        return tree

    def start_node(self, node: str | None = None) -> None:
        """``node``'s slurmd started (again: ReturnToService=2 makes a node back usable)."""
        name = node or self.node
        (self.dir / "spool" / name).mkdir(parents=True, exist_ok=True)
        subprocess.run(self._on(self.hosts[name], [_tool("slurmd"), "-N", name]), check=True, env=self.env)

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
        """One of Slurm's commands, on the controller's host."""
        return subprocess.run(self._on(self.controller, [_tool(args[0]), *args[1:]]), env=self.env,
                              capture_output=True, text=True, check=check, timeout=60)

    def node_states(self) -> dict[str, str]:
        """Each node's state in sinfo's words (``idle``, ``alloc``, ``down*`` ...); {} when
        slurmctld does not answer."""
        got = self.run("sinfo", "-h", "-N", "-o", "%N %t", check=False)
        if got.returncode != 0:
            return {}
        return dict(line.split(None, 1) for line in got.stdout.splitlines() if len(line.split()) == 2)

    def jobs(self, name_part: str = "") -> list[dict[str, str]]:
        """``scontrol show job`` records whose JobName holds ``name_part``, oldest first."""
        # lazy: roost's parser, only for tests (the kit runs alone for `make slurm`)
        from roost.core.gridbatch import parse_scontrol

        out = self.run("scontrol", "show", "job", "-o", check=False).stdout
        got = [r for r in parse_scontrol(out) if name_part in r.get("JobName", "")]
        return sorted(got, key=lambda r: int(r.get("JobId", "0")))

    def states_for(self, jid: str) -> list[str]:
        """The states of every Slurm job submitted for roost job ``jid``, oldest first."""
        cluster, _, proc = jid.partition(".")
        return [r.get("JobState", "") for r in self.jobs(f".{cluster}.{proc or '0'}.")]

    def state(self, job: str) -> str:
        """Slurm job ``job``'s state, or ``gone``."""
        out = self.run("scontrol", "show", "job", "-o", job, check=False).stdout
        m = re.search(r"JobState=(\S+)", out)
        return m.group(1) if m else "gone"

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
