"""Where a pool lives: ROOST_HOME and the files under its ``run/``.

Only ``os``: ``roost submit`` finds the schedd's socket through this before
anything else is imported, and its whole run is timed.
"""

from __future__ import annotations

import os


def pool_home(home: str | os.PathLike[str] | None = None) -> str:
    """``home``, else $ROOST_HOME, else ~/.local/share/roost (as a path string)."""
    if home is not None:
        return os.path.expanduser(os.fspath(home))
    env = os.environ.get("ROOST_HOME")
    if env:
        return os.path.expanduser(env)
    return os.path.join(os.environ.get("HOME") or os.path.expanduser("~"), ".local", "share", "roost")


def run_path(home: str, name: str) -> str:
    return os.path.join(home, "run", name)
