"""Daemon addresses: the ``host:port`` / ``unix:/path`` forms and the address files
under ``$ROOST_HOME/run/`` that daemons publish them in.

Imports only ``os`` and ``time``: the command-line tools read these.
"""

from __future__ import annotations

import os
import time

#: set by a schedd for its scheduler-universe jobs: the fd of their channel to it
INHERITED_FD_ENV = "ROOST_SCHEDD_FD"


def parse_address(address: str) -> tuple[str, str | tuple[str, int]]:
    """``("unix", path)`` or ``("tcp", (host, port))``; ValueError for anything else.

    ``host:port`` may be ``[v6addr]:port``; a leading ``<`` and trailing ``>``
    (HTCondor's sinful-string brackets) are tolerated.
    """
    a = address.strip()
    if a.startswith("<") and a.endswith(">"):
        a = a[1:-1].split("?", 1)[0]
    if a.startswith("unix:"):
        path = a[5:]
        if not path:
            raise ValueError(f"address {address!r} names no socket path")
        return "unix", path
    host, sep, port = a.rpartition(":")
    if not sep or not host:
        raise ValueError(f"address {address!r} is not host:port or unix:/path")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        p = int(port)
    except ValueError:
        raise ValueError(f"address {address!r} has a port that is not a number") from None
    if not 0 < p < 65536:
        raise ValueError(f"address {address!r} has port {p} out of range")
    return "tcp", (host, p)


def collector_address(collector_host: str, collector_port: int) -> str | None:
    """Where ``COLLECTOR_HOST`` says the collector is: ``host:port`` and ``unix:``
    addresses as they are, a bare host on ``collector_port`` (``COLLECTOR_PORT``).
    None for an empty value and for ``host:0``, which mean "the address the
    collector of this ``ROOST_HOME`` published" (a personal pool's)."""
    host = collector_host.strip()
    if not host:
        return None
    if host.startswith("unix:"):
        return host
    _, sep, port = host.rpartition(":")
    if not sep or not port.isdigit() or host.endswith("]"):
        return f"{host}:{collector_port}"
    return None if int(port) == 0 else host


#: hosts a server listens on that name no one place: what it advertises must not be these
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", "[::]", ""})


def advertised(address: str, host: str | None) -> str:
    """The address to publish for a server that listens on ``address``.

    A server bound to every interface (``0.0.0.0:port``, ``[::]:port``) names no
    host another machine can reach: ``host`` (the one this host advertises, from
    ``NETWORK_INTERFACE`` or ``IP_ADDRESS``) takes the wildcard's place. Any other
    address, and ``unix:`` ones, are returned as they are.
    """
    if not host or address.startswith("unix:"):
        return address
    bound, sep, port = address.rpartition(":")
    if not sep or bound not in WILDCARD_HOSTS:
        return address
    host = host.strip()
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def write_address(path: str | os.PathLike[str], address: str) -> None:
    """Publish an address: written to a temp file, then renamed, so readers never see
    half of one."""
    path = os.fspath(path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(address + "\n")
    os.replace(tmp, path)


def read_address(path: str | os.PathLike[str]) -> str | None:
    """The address in a file, or None if there is none (yet)."""
    try:
        with open(path) as f:
            text = f.read().strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    return text or None


def remove_address(path: str | os.PathLike[str], address: str | None = None) -> None:
    """Remove an address file; with ``address``, only if it still holds that address
    (a restarted daemon may already have written its new one)."""
    if address is not None and read_address(path) != address:
        return
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def wait_address(
    path: str | os.PathLike[str], timeout: float = 10.0, interval: float = 0.01
) -> str:
    """Wait until an address file appears; TimeoutError naming the file if it does not."""
    deadline = time.monotonic() + timeout
    while True:
        address = read_address(path)
        if address is not None:
            return address
        if time.monotonic() >= deadline:
            raise TimeoutError(f"no address in {os.fspath(path)} after {timeout:g} s")
        time.sleep(interval)


def is_loopback(host: str) -> bool:
    """``host`` (an IP or ``unix``) is this machine's own: 127.0.0.0/8, ::1, localhost.
    Here (no ``ipaddress``, no ``ssl``) because tools ask it before every TCP connection."""
    h = host.strip("[]").lower()
    return h in ("unix", "localhost", "::1", "0:0:0:0:0:0:0:1") or h.startswith("127.") or h.startswith("::ffff:127.")
