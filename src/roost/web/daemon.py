"""The dashboard process: ``python -m roost.web``, started by the master for ``WEB``.

Reads its configuration like every daemon (``WEB_HOST``, ``WEB_PORT``,
``WEB_REFRESH_INTERVAL``, ``WEB_ALLOWED_HOSTS``, ``WEB_TRUST_FORWARDED_PROTO``,
``WEB_MAX_CONNECTIONS``, ``WEB_CLIENT_TIMEOUT``), listens, publishes ``host:port`` in
``$(RUN)/web.address`` (written to a temporary name, then renamed, as the
daemons' address files are) and serves until SIGTERM/SIGINT, or SIGUSR2 (its
master died); on the way out the address file is removed if it is still its own.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from pathlib import Path

from roost.config import Config, ConfigError
from roost.web.server import CLIENT_TIMEOUT, MAX_HANDLERS, make_server
from roost.web.snapshot import PoolView

log = logging.getLogger("roost.web")
_WILDCARD = ("0.0.0.0", "::", "")


def write_address(path: Path, address: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.tmp.{os.getpid()}")
    tmp.write_text(address + "\n")
    os.replace(tmp, path)


def remove_address(path: Path, address: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        if path.read_text().strip() == address:
            path.unlink()


def published(config: Config, host: str, port: int) -> str:
    """``host:port`` as others reach it: a wildcard bind is published as the host's
    address (``NETWORK_INTERFACE`` where it names one, else ``IP_ADDRESS``)."""
    if host in _WILDCARD:
        chosen = (config.get("NETWORK_INTERFACE") or "").strip()
        host = chosen if chosen and chosen != "*" and chosen not in _WILDCARD else \
            (config.get("IP_ADDRESS") or "127.0.0.1").strip()
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="%(asctime)s.%(msecs)03d %(levelname)s %(name)s: %(message)s",
                        datefmt="%Y-%m-%d %H:%M:%S")
    try:
        config = Config.load(subsys="WEB")
    except ConfigError as e:
        print(f"roost web: bad configuration: {e}", file=sys.stderr)
        return 1
    home = str(config.get("LOCAL_DIR") or config.get("ROOST_HOME") or ".")
    run_dir = Path(config.get("RUN") or Path(home) / "run")
    host = (config.get("WEB_HOST") or "127.0.0.1").strip()
    port = config.get_int("WEB_PORT", 0) or 0
    refresh = config.get_float("WEB_REFRESH_INTERVAL", 2.0) or 2.0
    view = PoolView(home, refresh_s=refresh)
    allowed = (config.get("WEB_ALLOWED_HOSTS") or "").replace(",", " ").split()
    try:
        server = make_server(view, host, port, allowed_hosts=allowed,
                             trust_forwarded_proto=bool(config.get_bool("WEB_TRUST_FORWARDED_PROTO", False)),
                             max_handlers=max(1, config.get_int("WEB_MAX_CONNECTIONS", MAX_HANDLERS) or MAX_HANDLERS),
                             timeout=config.get_float("WEB_CLIENT_TIMEOUT", CLIENT_TIMEOUT) or CLIENT_TIMEOUT)
    except OSError as e:
        print(f"roost web: cannot listen on {host}:{port}: {e}", file=sys.stderr)
        return 1
    address = published(config, host, server.server_address[1])
    server.allow_host(address)  # a wildcard bind answers to the address it publishes
    addr_path = run_dir / "web.address"

    def stop(signum: int, frame: object) -> None:
        log.info("stopping (%s)", signal.Signals(signum).name)
        threading.Thread(target=server.shutdown, daemon=True).start()

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR2):
        signal.signal(sig, stop)
    write_address(addr_path, address)
    log.info("web dashboard at http://%s/ (pool at %s)", address, home)
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        remove_address(addr_path, address)
        server.server_close()
    return 0
