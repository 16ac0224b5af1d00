"""roost on the hosts of a :class:`netns.Network`: each host its own ROOST_HOME and
configuration (``use ROLE : ...``, ``CONDOR_HOST`` = the central manager's address,
``NETWORK_INTERFACE`` = its own, one ``UID_DOMAIN``), ``roost`` run inside it, and a
copy of the POOL signing key the central manager made, as an administrator copies it,
or (``take_token``) only a daemon token the central manager minted.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from netns import Host, Network

ROOST = [sys.executable, "-m", "roost.cli.main"]
UID_DOMAIN = "roost.test"

#: knobs that make a test pool quick (as the integration tests' FAST_CONFIG)
FAST_CONFIG = """
NEGOTIATOR_INTERVAL = 2
NEGOTIATOR_MIN_INTERVAL = 0.02
UPDATE_INTERVAL = 2
SCHEDD_INTERVAL = 2
SCHEDD_MIN_INTERVAL = 0.1
PERIODIC_EXPR_INTERVAL = 1
ALIVE_INTERVAL = 1
JOB_LEASE_DURATION = 6
STARTER_UPDATE_INTERVAL = 1
MASTER_BACKOFF_CONSTANT = 0.5
MASTER_BACKOFF_CEILING = 5
MASTER_RECOVER_FACTOR = 10
SHUTDOWN_GRACEFUL_TIMEOUT = 5
"""


class RoostHost:
    """A host of the pool: where its ROOST_HOME is and how to run ``roost`` there."""

    def __init__(self, host: Host, roles: list[str], cm_address: str) -> None:
        self.host = host
        self.name = host.name
        self.address = host.address
        self.home = host.dir / "home"
        self.home.mkdir()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("ROOST_", "_ROOST_"))}
        self.env["ROOST_HOME"] = str(self.home)
        lines = [f"use ROLE : {r}" for r in roles]
        if "Execute" in roles:
            lines += ["use FEATURE : PartitionableSlot", "NUM_CPUS = 2", "MEMORY = 1024"]
        lines += [
            f"LOCAL_DIR = {self.home}",
            f"CONDOR_HOST = {cm_address}",
            f"UID_DOMAIN = {UID_DOMAIN}",
            f"NETWORK_INTERFACE = {host.address}",
        ]
        (self.home / "roost_config").write_text("\n".join(lines) + "\n" + FAST_CONFIG)

    def roost(self, *args: str, timeout: float = 60, cwd: Path | None = None,
              check: bool = True) -> subprocess.CompletedProcess[str]:
        done = self.host.run([*ROOST, *args], env=self.env, cwd=cwd, timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"[{self.name}] roost {' '.join(args)} exited {done.returncode}:\n"
                                 f"{done.stdout}\n{done.stderr}\n{self.log_tails()}")
        return done

    def python(self, code: str, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """Run Python ``code`` (``sys.argv[1:]`` = ``args``) inside this host, roost importable:
        a client of the pool's daemons that is not ``roost`` itself."""
        done = self.host.run([sys.executable, "-c", code, *args], env=self.env, timeout=timeout)
        if done.returncode != 0:
            raise AssertionError(f"[{self.name}] python exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
        return done

    def take_pool_key(self, cm: RoostHost) -> None:
        """Copy the central manager's POOL key here, owner-only, as its admin would."""
        keys = self.home / "passwords.d"
        keys.mkdir(mode=0o700)
        shutil.copyfile(cm.home / "passwords.d" / "POOL", keys / "POOL")
        os.chmod(keys / "POOL", 0o600)

    def take_token(self, cm: RoostHost) -> None:
        """Join the pool as HTCondor's hosts do: a ``condor@UID_DOMAIN`` token, minted on
        the central manager, in this host's token directory; no pool key. Its daemons
        present the token, and check the tokens of others with the central manager."""
        tokens = self.home / "tokens.d"
        tokens.mkdir(mode=0o700)
        cm.roost("token", "create", "-identity", f"condor@{UID_DOMAIN}", "-file", str(tokens / "pool"))

    def log_tails(self, lines: int = 25) -> str:
        out = []
        for f in sorted((self.home / "log").glob("*Log")):
            text = f.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"==== {self.name} {f.name}\n" + "\n".join(text))
        return "\n".join(out)


class MultiHostPool:
    def __init__(self, net: Network) -> None:
        self.net = net
        self.hosts: dict[str, RoostHost] = {}

    def __getitem__(self, name: str) -> RoostHost:
        return self.hosts[name]

    def add(self, name: str, *roles: str) -> RoostHost:
        host = self.net.add_host(name)
        cm = self.hosts.get("cm")
        cm_address = cm.address if cm is not None else host.address
        h = self.hosts[name] = RoostHost(host, list(roles), cm_address)
        return h

    def wait_for_slots(self, machines: set[str], timeout: float = 30) -> None:
        """Until the collector holds slots of every one of ``machines``."""
        deadline = time.monotonic() + timeout
        seen: set[str] = set()
        while time.monotonic() < deadline:
            done = self["cm"].roost("status", "-af", "Machine", check=False)
            seen = set(done.stdout.split())
            if machines <= seen:
                return
            time.sleep(0.2)
        raise AssertionError(f"slots of {sorted(machines - seen)} never reached the collector\n"
                             + self.log_tails())

    def start(self, *names: str) -> None:
        """``roost up`` on each of ``names``, side by side (as an administrator's hosts
        boot): each host's start is mostly its own daemons' start-up, a few seconds under
        load, and none waits on another once the central manager is up."""
        with ThreadPoolExecutor(len(names)) as starting:
            list(starting.map(lambda n: self[n].roost("up", "-timeout", "30", timeout=45), names))

    def log_tails(self) -> str:
        return "\n".join(h.log_tails() for h in self.hosts.values())

    def stop(self) -> None:
        """Every host down: the others side by side, then the central manager (which they
        tell they are leaving)."""
        def down(h: RoostHost) -> None:
            try:
                h.roost("down", "-timeout", "15", timeout=20, check=False)
            except subprocess.TimeoutExpired:
                pass  # Network.close kills what is left

        others = [h for name, h in self.hosts.items() if name != "cm"]
        if others:
            with ThreadPoolExecutor(len(others)) as stopping:
                list(stopping.map(down, others))
        if "cm" in self.hosts:
            down(self.hosts["cm"])


@contextlib.contextmanager
def four_hosts(network: Network, keyed: tuple[str, ...] = ("exec1",),
               execute_config: str = "") -> Iterator[MultiHostPool]:
    """A central manager, a submit host and two execute hosts, started; the hosts in
    ``keyed`` hold a copy of the pool key, the others joined with a daemon token only;
    ``execute_config`` goes into the execute hosts' configuration."""
    pool = MultiHostPool(network)
    try:
        cm = pool.add("cm", "CentralManager")
        cm.roost("up", "-timeout", "30", timeout=45)
        for name, role in (("submit", "Submit"), ("exec1", "Execute"), ("exec2", "Execute")):
            h = pool.add(name, role)
            if name in keyed:
                h.take_pool_key(cm)
            else:
                h.take_token(cm)
            if role == "Execute" and execute_config:
                with open(h.home / "roost_config", "a") as f:
                    f.write(execute_config)
        pool.start("submit", "exec1", "exec2")
        yield pool
    finally:
        pool.stop()
