"""Start real daemon processes in a temporary ROOST_HOME and stop them by pid."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from roost.config import write_personal_config
from roost.net.addresses import wait_address


def make_home(tmp_path: Path, extra_config: str = "") -> Path:
    home = tmp_path / "home"
    path = write_personal_config(home)
    if extra_config:
        with open(path, "a") as f:
            f.write(extra_config)
    return home


def start_daemon(name: str, home: Path, env: dict[str, str] | None = None,
                 timeout: float = 15.0) -> tuple[subprocess.Popen, str]:
    """Run ``python -m roost.daemons.<name>``; return the process and its published address."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("_ROOST_")}
    full_env.pop("ROOST_CONFIG", None)
    full_env["ROOST_HOME"] = str(home)
    full_env.update(env or {})
    address_file = home / "run" / f"{name}.address"
    if address_file.exists():
        address_file.unlink()
    proc = subprocess.Popen([sys.executable, "-m", f"roost.daemons.{name}"], env=full_env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        address = wait_address(address_file, timeout=timeout)
    except TimeoutError:
        stop_daemon(proc)
        err = proc.stderr.read().decode() if proc.stderr else ""
        raise RuntimeError(f"{name} did not start: {err}") from None
    return proc, address


def stop_daemon(proc: subprocess.Popen, timeout: float = 10.0) -> int:
    """SIGTERM, wait, SIGKILL if it will not go; the exit status."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stderr:
        proc.stderr.close()
    return proc.returncode


def pool_token(home: Path, identity: str | None = None, **kw: object) -> str:
    """A token of the pool at ``home`` for ``identity`` (default: the daemons' own,
    ``condor@UID_DOMAIN``), signed with its POOL key (made here when no daemon has yet):
    what a test that stands in for a daemon or a user presents on TCP."""
    import time

    from roost.config import Config
    from roost.daemons.security import DAEMON_USER, uid_domain
    from roost.net.signing_key import ensure_key_file
    from roost.net.token_store import TokenSettings
    from roost.net.tokens import create_token

    cfg = Config.load(str(home / "roost_config"), env={"ROOST_HOME": str(home)})
    settings = TokenSettings.from_config(cfg)
    key = ensure_key_file(settings.pool_key_file)
    who = identity or f"{DAEMON_USER}@{uid_domain(cfg)}"
    return create_token(key, "POOL", settings.trust_domain, who, now=time.time(), **kw)  # type: ignore[arg-type]


def user_identity(home: Path, user: str) -> str:
    """``user@UID_DOMAIN`` of the pool at ``home``."""
    from roost.config import Config
    from roost.daemons.security import uid_domain

    return f"{user}@{uid_domain(Config.load(str(home / 'roost_config'), env={'ROOST_HOME': str(home)}))}"
