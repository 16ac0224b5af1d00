"""Pools of a flock in network namespaces, for the flocking system tests (issue 29,
docs/flocking.md): each pool its own central manager, UID_DOMAIN (``<pool>.test``),
TRUST_DOMAIN and signing key, and the tokens the admins exchanged as docs/flocking.md
says. One builder for every topology, so each test module only says which pools,
hosts and agreements it needs.

Token exchange, for each pool X that sends jobs to a pool Y (``sends_to``): Y's central
manager mints ``condor@x.test`` for X's submit hosts (they advertise to Y's collector
and claim Y's slots), X's central manager mints ``condor@y.test`` for Y's central
manager and execute hosts (Y's negotiator asks X's schedds, Y's starters call them
back). Besides that, each host has its own pool's credential: the pool key copied by
the admin (``keyed``), or a ``condor@x.test`` daemon token. Keys are made (``roost
token create`` makes the POOL key if missing) and every token minted before any
daemon starts: the tokens a daemon presents are read at its start.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from hostpool import UID_DOMAIN, RoostHost
from netns import Network

from roost.vocabulary import JobStatus

IDLE, RUNNING, DONE = str(JobStatus.IDLE), str(JobStatus.RUNNING), str(JobStatus.COMPLETED)

JOB = """#!/bin/sh
sleep $1
echo "$(hostname) $(id -un)" > result.txt
"""

FLOCK_FAST = "FLOCK_AFTER = 1\nFLOCK_INTERVAL = 1\n"


@dataclass
class PoolSpec:
    """One pool: ``name`` (its UID_DOMAIN is ``<name>.test``), its central manager's
    host name and roles, its other hosts (name -> roles, and ``keyed``: the hosts that
    join with a copy of the pool key, the others with a daemon token only), and its
    flocking configuration as a function of every pool's central manager address."""

    name: str
    cm: str
    cm_roles: list[str]
    hosts: dict[str, list[str]] = field(default_factory=dict)
    keyed: tuple[str, ...] = ()
    conf: Callable[[dict[str, str]], str] = lambda cms: ""
    sends_to: tuple[str, ...] = ()

    @property
    def domain(self) -> str:
        return f"{self.name}.test"

    def with_role(self, role: str) -> list[str]:
        """The hosts of this pool with ``role``, the central manager first."""
        return ([self.cm] if role in self.cm_roles else []) + [n for n, r in self.hosts.items() if role in r]


def _configured(h: RoostHost, domain: str, extra: str) -> RoostHost:
    """``h`` in its pool's UID_DOMAIN, with the flocking knobs."""
    cfg = h.home / "roost_config"
    cfg.write_text(cfg.read_text().replace(f"UID_DOMAIN = {UID_DOMAIN}", f"UID_DOMAIN = {domain}")
                   + FLOCK_FAST + extra)
    return h


class Pools:
    """The hosts of every pool by name, and which pool each is in."""

    def __init__(self, net: Network) -> None:
        self.net = net
        self.hosts: dict[str, RoostHost] = {}
        self.pool_of: dict[str, str] = {}
        self.cms: set[str] = set()  # the central managers' host names

    def __getitem__(self, name: str) -> RoostHost:
        return self.hosts[name]

    def log_tails(self) -> str:
        return "\n".join(h.log_tails() for h in self.hosts.values())

    def stop(self) -> None:
        """Every host down, side by side: first the hosts that are no central manager,
        then the central managers (which the others tell they are leaving)."""
        def down(h: RoostHost) -> None:
            with contextlib.suppress(Exception):
                h.roost("down", "-timeout", "10", timeout=15, check=False)

        for group in ([h for n, h in self.hosts.items() if n not in self.cms],
                      [h for n, h in self.hosts.items() if n in self.cms]):
            if group:
                with ThreadPoolExecutor(len(group)) as stopping:
                    list(stopping.map(down, group))


@contextlib.contextmanager
def flock(net: Network, specs: list[PoolSpec]) -> Iterator[Pools]:
    """Every pool of ``specs`` built, credentials exchanged, started (central managers
    first), each pool's execute hosts' slots seen by its collector; all stopped after.
    One pool alone is a plain pool (a reference for benches); its keyed hosts copy a
    key its token-joined hosts' tokens made, so it needs one of those."""
    p = Pools(net)
    try:
        cms = {s.name: net.add_host(s.cm) for s in specs}
        addresses = {name: h.address for name, h in cms.items()}
        for s in specs:
            conf = s.conf(addresses)
            cm = p.hosts[s.cm] = _configured(RoostHost(cms[s.name], s.cm_roles, cms[s.name].address), s.domain, conf)
            p.pool_of[s.cm] = s.name
            p.cms.add(s.cm)
            for name, roles in s.hosts.items():
                p.hosts[name] = _configured(RoostHost(net.add_host(name), roles, cm.address), s.domain, conf)
                p.pool_of[name] = s.name
        by_name = {s.name: s for s in specs}
        for h in p.hosts.values():
            (h.home / "tokens.d").mkdir(mode=0o700)

        def mint(issuer: PoolSpec, domain: str, host: str) -> None:
            # (the first token a central manager mints makes its key)
            token = p.hosts[host].home / "tokens.d" / f"pool-{issuer.name}"
            if not token.exists():
                p.hosts[issuer.cm].roost("token", "create", "-identity", f"condor@{domain}", "-file", str(token))

        for x in specs:  # the exchange, per pair of pools that send jobs one way
            for y in (by_name[n] for n in x.sends_to):
                for host in x.with_role("Submit"):
                    mint(y, x.domain, host)
                for host in [y.cm, *y.with_role("Execute")]:
                    mint(x, y.domain, host)
        for s in specs:  # each pool's own credential: a daemon token, or the key copied
            cm = p.hosts[s.cm]
            for name in sorted(s.hosts, key=lambda n: n in s.keyed):  # (a token made makes the key)
                if name in s.keyed:
                    p.hosts[name].take_pool_key(cm)
                else:
                    cm.roost("token", "create", "-identity", f"condor@{s.domain}",
                             "-file", str(p.hosts[name].home / "tokens.d" / "pool"))
        # central managers first, then the other hosts; each group started side by side
        for group in ([s.cm for s in specs], [n for s in specs for n in s.hosts]):
            with ThreadPoolExecutor(len(group)) as starting:
                list(starting.map(lambda n: p.hosts[n].roost("up", "-timeout", "30", timeout=45), group))
        for s in specs:
            execute = {n for n, roles in s.hosts.items() if "Execute" in roles}
            if "Execute" in s.cm_roles:
                execute.add(s.cm)
            wait_slots(p.hosts[s.cm], execute)
        yield p
    finally:
        p.stop()


def wait_slots(cm: RoostHost, machines: set[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    seen: set[str] = set()
    while time.monotonic() < deadline:
        seen = set(cm.roost("status", "-af", "Machine", check=False).stdout.split())
        if machines <= seen:
            return
        time.sleep(0.3)
    raise AssertionError(f"{cm.name}: slots of {sorted(machines - seen)} never arrived\n{cm.log_tails()}")


def work(h: RoostHost, name: str) -> Path:
    """A job directory on ``h`` anyone may write (jobs of another domain run as nobody)."""
    d = h.host.dir / name
    d.mkdir()
    d.chmod(0o777)
    (d / "job.sh").write_text(JOB)
    (d / "job.sh").chmod(0o755)
    return d


def submit(h: RoostHost, where: Path, secs: float, n: int = 1, extra: str = "", name: str = "job") -> str:
    (where / f"{name}.sub").write_text(
        f"executable = job.sh\narguments = {secs}\nshould_transfer_files = YES\n"
        f"transfer_output_files = result.txt\n"
        f'transfer_output_remaps = "result.txt = {name}.$(Cluster).$(Process).txt"\n'
        f"log = {name}.log\nrequest_memory = 64\n{extra}queue {n}\n")
    done = h.roost("submit", f"{name}.sub", cwd=where)
    m = re.search(r"submitted to cluster (\d+)", done.stdout)
    assert m, done.stdout
    return m.group(1)


def ads(h: RoostHost, cluster: str, *attrs: str) -> list[list[str]]:
    done = h.roost("q", cluster, "-af", *attrs, check=False)
    if not done.stdout.strip():
        done = h.roost("history", cluster, "-af", *attrs, check=False)
    return [line.split() for line in done.stdout.splitlines() if line.strip()]


def until(what: str, check, timeout: float = 60, pools: Pools | None = None):  # noqa: ANN001, ANN202
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"never: {what}\n" + (pools.log_tails() if pools else ""))
        time.sleep(0.3)


def running_on(h: RoostHost, cluster: str) -> list[str]:
    """The hosts the cluster's running jobs run on (empty until all of them run)."""
    rows = ads(h, cluster, "JobStatus", "RemoteHost")
    if not rows or any(r[0] != RUNNING or len(r) < 2 for r in rows):
        return []
    return [r[1].rpartition("@")[2].split(".")[0] for r in rows]


def ran_on(where: Path, name: str, cluster: str, n: int) -> list[str]:
    """The hosts the cluster's jobs ran on, from the output each brought home."""
    return [(where / f"{name}.{cluster}.{proc}.txt").read_text().split()[0] for proc in range(n)]


def foreign_running(cm: RoostHost, domain: str) -> int:
    """How many of ``cm``'s pool's slots run jobs of another pool's ``domain`` now."""
    users = cm.roost("status", "-af", "RemoteUser", check=False).stdout.split()
    return sum(1 for u in users if u.endswith("@" + domain))
