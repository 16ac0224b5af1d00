"""The only part of roost.config that touches the host: files, commands, host facts.

Kept apart so the language itself (parser, macros, Config.from_text)
stays pure and testable from text.  It returns what it read (``Loaded``)
rather than a ``Config``: ``Config.load`` wraps it, so the dependency runs
one way, from ``roost.config.config`` to here.
"""

from __future__ import annotations

import os
import platform
import pwd
import socket
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from roost import poolhome
from roost.config.errors import ConfigError
from roost.config.layers import DEFAULT_LAYER, apply_env_overrides, facts_layer
from roost.config.parser import ParseState, parse_text
from roost.config.table import Entry, find

CONFIG_ENV = "ROOST_CONFIG"
HOME_ENV = "ROOST_HOME"
CONFIG_FILE_NAME = "roost_config"
# ROOST_CONFIG=ONLY_ENV reads no file at all, as CONDOR_CONFIG=ONLY_ENV does.
ONLY_ENV = "ONLY_ENV"
COMMAND_TIMEOUT_S = 60


@dataclass
class Loaded:
    """What reading the configuration produced: the pieces of a ``Config``."""

    table: dict[str, Entry]
    facts: dict[str, Entry]
    env: dict[str, str]
    files: list[str]
    warnings: list[str]


def default_home(env: Mapping[str, str]) -> Path:
    """$ROOST_HOME, else the personal pool, else the system pool (roost.poolhome: the
    same pool every command talks to)."""
    return Path(poolhome.default_home(env))


def config_path(env: Mapping[str, str]) -> tuple[Path, bool]:
    """The main config file and whether it was asked for explicitly ($ROOST_CONFIG)."""
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV]).expanduser(), True
    return default_home(env) / CONFIG_FILE_NAME, False


def read_file(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def run_command(command: str) -> str:
    """Run an ``include : command |`` line; only reached when the caller allowed commands."""
    try:
        done = subprocess.run(
            command, shell=True, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"timed out after {COMMAND_TIMEOUT_S}s") from None
    if done.returncode != 0:
        detail = done.stderr.strip().splitlines()[-1:] or [""]
        raise RuntimeError(f"exit status {done.returncode} {detail[0]}".strip())
    return done.stdout


def _memory_mib() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)
    except (ValueError, OSError, AttributeError):
        return 1024


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _username(env: Mapping[str, str]) -> str:
    """The account this process runs as (its effective uid, not $USER: the security
    policy's defaults name it, so the environment must not choose it)."""
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return env.get("USER") or env.get("LOGNAME") or str(os.geteuid())


def interface_address() -> str | None:
    """The first IPv4 address of a network interface other than loopback (as
    HTCondor picks one when the host name gives none); asked of the kernel
    (SIOCGIFADDR), nothing sent. None when there is none, or not on Linux."""
    try:
        # lazy: fcntl/struct only when the host name does not give an address
        import fcntl
        import struct

        names = [name for _, name in socket.if_nameindex()]
    except (ImportError, OSError, AttributeError):
        return None
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for name in names:
            if name == "lo":
                continue
            try:
                packed = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))  # SIOCGIFADDR
            except OSError:
                continue  # no IPv4 address on it
            ip = socket.inet_ntoa(packed[20:24])
            if not ip.startswith("127."):
                return ip
    return None


def detect_facts(env: Mapping[str, str]) -> dict[str, str]:
    """What HTCondor calls the built-in macros: host name, CPUs, memory, home ..."""
    full = socket.getfqdn() or socket.gethostname()
    try:
        ip = socket.gethostbyname(socket.gethostname())
    except OSError:
        ip = "127.0.0.1"
    if ip.startswith("127."):  # a name that does not resolve, or Debian's 127.0.1.1
        ip = interface_address() or ip
    machine = platform.machine().upper()
    return {
        "FULL_HOSTNAME": full,
        "HOSTNAME": full.split(".")[0],
        "IP_ADDRESS": ip,
        "DETECTED_CPUS": str(_cpus()),
        "DETECTED_MEMORY": str(_memory_mib()),
        "OPSYS": platform.system().upper(),
        "ARCH": {"AMD64": "X86_64"}.get(machine, machine),
        "USERNAME": _username(env),
        "TILDE": env.get("HOME", ""),
        "ROOST_HOME": str(default_home(env)),
    }


def _split_files(value: str) -> list[str]:
    return [p for p in value.replace(",", " ").split() if p]


def _read_into(state: ParseState, path: str, where: tuple[str, int] | None) -> str:
    """Read one file into ``state``; ``where`` is the knob that named it, for errors."""
    path = os.path.normpath(os.path.abspath(path))
    try:
        text = read_file(path)
    except FileNotFoundError:
        raise ConfigError(*(where or (path, 0)), f"config file {path!r} does not exist") from None
    except OSError as e:
        raise ConfigError(*(where or (path, 0)), f"cannot read config file {path!r}: {e.strerror}") from None
    state.include_stack.append(path)
    try:
        parse_text(state, text, path)
    finally:
        state.include_stack.pop()
    return path


def load(
    path: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] = os.environ,
    subsys: str | None = None,
    localname: str | None = None,
    allow_commands: bool = False,
    facts: Mapping[str, str] | None = None,
) -> Loaded:
    """Read the main file, LOCAL_CONFIG_FILE, LOCAL_CONFIG_DIR, then ``_ROOST_*`` overrides.

    A main file named by ``path`` or $ROOST_CONFIG must exist; the implicit
    $ROOST_HOME/roost_config may be missing (defaults only), so commands
    work before ``roost up`` has written one.  ROOST_CONFIG=ONLY_ENV reads
    no main file: defaults, LOCAL_CONFIG_* and the environment only.
    ``facts`` replaces the detected host facts (tests).
    """
    env = dict(env)
    if path is not None:
        main, explicit = Path(path), True
    else:
        main, explicit = config_path(env)
    fact_entries = facts_layer(facts if facts is not None else detect_facts(env))
    state = ParseState(
        table={},
        lower=[DEFAULT_LAYER, fact_entries],
        env=env,
        subsys=subsys,
        localname=localname,
        read_file=read_file,
        run_command=run_command if allow_commands else None,
    )
    files: list[str] = []
    if path is None and str(main) == ONLY_ENV:
        pass
    elif explicit or main.exists():
        files.append(_read_into(state, str(main), None))

    def knob(name: str) -> tuple[list[str], tuple[str, int]]:
        entry = find(name, [state.table, *state.lower], subsys, localname)
        if entry is None:
            return [], ("<default>", 0)
        return _split_files(state.expander().expand_entry(entry)), (entry.file, entry.line)

    local_files, where = knob("LOCAL_CONFIG_FILE")
    for f in local_files:
        files.append(_read_into(state, f, where))
    dirs, where = knob("LOCAL_CONFIG_DIR")
    for d in dirs:
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            full = os.path.join(d, name)
            if name.startswith(".") or name.endswith("~") or not os.path.isfile(full):
                continue
            files.append(_read_into(state, full, where))
    apply_env_overrides(state, env)
    return Loaded(state.table, fact_entries, env, files, state.warnings)
