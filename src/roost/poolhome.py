"""Where a pool lives: ROOST_HOME and the files under its ``run/``.

Which pool a command talks to, as HTCondor's tools find /etc/condor/condor_config
with nothing set: $ROOST_HOME when set; else the user's own personal pool
(~/.local/share/roost) when one lives there; else the host's system pool
(/var/lib/roost, where contrib/systemd's unit keeps it) when one lives there; else
the personal home (where ``roost up`` makes one). So every local account of a
submit host reaches the pool it sits at with no set-up, and someone running their
own personal pool keeps using it.

Only ``os``: ``roost submit`` finds the schedd's socket through this before
anything else is imported, and its whole run is timed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

#: the system pool's home (contrib/systemd/roost-master@.service's ROOST_HOME)
SYSTEM_HOME = "/var/lib/roost"


def personal_home(env: Mapping[str, str] | None = None) -> str:
    """The user's own pool home: ~/.local/share/roost."""
    env = os.environ if env is None else env
    return os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local", "share", "roost")


def lives_at(home: str) -> bool:
    """Whether a pool lives at ``home``: ``roost up`` wrote its ``roost_config`` there,
    or a master made its ``run/`` there (a system pool configured by $ROOST_CONFIG)."""
    return os.path.isfile(os.path.join(home, "roost_config")) or os.path.isdir(os.path.join(home, "run"))


def default_home(env: Mapping[str, str] | None = None, system: str | None = None) -> str:
    """$ROOST_HOME, else the personal pool if one lives there, else the system pool
    (``system``, default SYSTEM_HOME) if one lives there, else the personal home."""
    env = os.environ if env is None else env
    if env.get("ROOST_HOME"):
        return os.path.expanduser(env["ROOST_HOME"])
    own = personal_home(env)
    system = SYSTEM_HOME if system is None else system
    if not lives_at(own) and lives_at(system):
        return system
    return own


def pool_home(home: str | os.PathLike[str] | None = None) -> str:
    """``home``, else :func:`default_home` (as a path string)."""
    if home is not None:
        return os.path.expanduser(os.fspath(home))
    return default_home()


def run_path(home: str, name: str) -> str:
    return os.path.join(home, "run", name)
