"""Hosts in network namespaces, for tests of a pool of several machines on one.

A :class:`Network` is one test's private LAN: a *switch* namespace holding a
bridge, and for each host a namespace (``roost-<run>-<host>``) joined to the
bridge by a veth pair, with its own address in ``10.213.X.0/24`` (X chosen per
run), its loopback up, no route anywhere else. Each host also has its own UTS
namespace, kept by a bind mount, so its hostname (and so its daemons' and slots'
names) is its own, as on a real machine.

Commands run in a host with ``nsenter --net=... --uts=...``, not ``ip netns
exec``: that one remounts ``/sys`` and so hides the cgroup file system the
startd puts jobs in. Nothing is sent outside the namespaces made here.

:meth:`Network.close` always leaves nothing behind: every process still in one
of its namespaces (``ip netns pids``: only processes this network's commands
started can be there) is killed by its id, the UTS bind mounts are undone, the
namespaces deleted (the veths go with them).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

#: what any command run by the harness may take at most
COMMAND_TIMEOUT = 30.0


def unavailable() -> str | None:
    """Why network namespaces cannot be made here (a skip reason), or None."""
    if os.geteuid() != 0:
        return "creating network namespaces needs root"
    for tool in ("ip", "nsenter", "unshare"):
        if shutil.which(tool) is None:
            return f"no `{tool}` command (iproute2 / util-linux)"
    name = f"roost-{secrets.token_hex(4)}-probe"
    made = _ip("netns", "add", name, check=False)
    if made.returncode != 0:
        return f"`ip netns add` fails here: {made.stderr.strip()}"
    try:
        veth = _ip("-n", name, "link", "add", "p0", "type", "veth", "peer", "name", "p1", check=False)
        if veth.returncode != 0:
            return f"cannot make veth pairs in a namespace: {veth.stderr.strip()}"
    finally:
        _ip("netns", "del", name, check=False)
    return None


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed: {done.stderr.strip()}")
    return done


class Host:
    """One machine: its namespaces, address, hostname and a directory of its own."""

    def __init__(self, net: Network, name: str, address: str) -> None:
        self.net = net
        self.name = name
        self.address = address
        self.netns = f"{net.prefix}-{name}"
        self.dir = net.dir / name
        self.dir.mkdir()
        self.uts = net.dir / f".uts-{name}"

    def argv(self, argv: list[str]) -> list[str]:
        """``argv`` as run inside this host."""
        return ["nsenter", f"--net=/run/netns/{self.netns}", f"--uts={self.uts}", *argv]

    def run(self, argv: list[str], *, env: dict[str, str] | None = None,
            cwd: str | os.PathLike[str] | None = None,
            timeout: float = COMMAND_TIMEOUT) -> subprocess.CompletedProcess[str]:
        """Run a command in this host, wait for it (at most ``timeout`` seconds)."""
        return subprocess.run(self.argv(argv), env=env, cwd=cwd, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def pids(self) -> list[int]:
        """Every process in this host's network namespace."""
        done = _ip("netns", "pids", self.netns, check=False)
        return [int(p) for p in done.stdout.split() if p.isdigit()]


class Network:
    """One test's LAN of hosts; a context manager that always tears it all down."""

    def __init__(self) -> None:
        run = secrets.token_hex(3)
        self.prefix = f"roost-{run}"
        self.subnet = f"10.213.{secrets.randbelow(254) + 1}"
        self.dir = Path(tempfile.mkdtemp(prefix=f"roost-sys-{run}-", dir="/tmp"))
        self.dir.chmod(0o755)  # jobs run as another user reach their sandboxes through it
        self.switch = f"{self.prefix}-sw"
        self.hosts: dict[str, Host] = {}
        self._made: list[str] = []  # namespaces, in the order made
        self._mounted: list[Path] = []

    def __enter__(self) -> Network:
        try:
            _ip("netns", "add", self.switch)
            self._made.append(self.switch)
            _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.switch, "link", "set", "br0", "up")
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add_host(self, name: str) -> Host:
        """A new host on the LAN, its address the next in the subnet (.1 first)."""
        assert len(name) <= 12 and name not in self.hosts, name
        host = Host(self, name, f"{self.subnet}.{len(self.hosts) + 1}")
        self.hosts[name] = host
        _ip("netns", "add", host.netns)
        self._made.append(host.netns)
        port = f"v-{name}"
        _ip("link", "add", port, "netns", self.switch, "type", "veth",
            "peer", "name", "eth0", "netns", host.netns)
        _ip("-n", self.switch, "link", "set", port, "master", "br0", "up")
        _ip("-n", host.netns, "link", "set", "lo", "up")
        _ip("-n", host.netns, "addr", "add", f"{host.address}/24", "dev", "eth0")
        _ip("-n", host.netns, "link", "set", "eth0", "up")
        host.uts.touch()
        subprocess.run(["unshare", f"--uts={host.uts}", "hostname", name], check=True,
                       capture_output=True, timeout=COMMAND_TIMEOUT)
        self._mounted.append(host.uts)
        return host

    def cut(self, name: str) -> None:
        """Unplug a host: its port on the switch goes down (a partition; nothing
        reaches it or leaves it, its processes run on)."""
        _ip("-n", self.switch, "link", "set", f"v-{name}", "down")

    def mend(self, name: str) -> None:
        """Plug a cut host back in."""
        _ip("-n", self.switch, "link", "set", f"v-{name}", "up")

    def close(self) -> None:
        """Kill every process left in this network's hosts, by id; remove the rest."""
        hosts = list(self.hosts.values())
        for sig in (signal.SIGTERM, signal.SIGKILL):
            pids = [p for h in hosts for p in h.pids()]
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + 5.0
            while pids and time.monotonic() < deadline:
                pids = [p for h in hosts for p in h.pids()]
                time.sleep(0.05)
            if not pids:
                break
        for path in self._mounted:
            subprocess.run(["umount", str(path)], capture_output=True, timeout=COMMAND_TIMEOUT)
        self._mounted.clear()
        for ns in reversed(self._made):
            _ip("netns", "del", ns, check=False)
        self._made.clear()
        shutil.rmtree(self.dir, ignore_errors=True)
