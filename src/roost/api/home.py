"""Where a pool lives: ROOST_HOME and the address files under its ``run/``.

Deliberately free of ``roost.config`` and ``pathlib``: finding an address must
cost a file read, not a configuration parse, for ``roost q -totals`` to stay
fast. A pool whose ``RUN`` directory is moved elsewhere is reached by setting
ROOST_HOME to the directory holding ``run/``.
"""

from __future__ import annotations

import os

from roost.api.errors import NoPoolError
from roost.net.addresses import read_address  # noqa: F401  (re-exported for roost.api)
from roost.poolhome import pool_home, run_path  # noqa: F401  (re-exported for roost.api)


def no_daemon(home: str | os.PathLike[str], daemon: str) -> NoPoolError:
    home = os.fspath(home)
    if read_address(run_path(home, "master.address")) is None:
        return NoPoolError(f"no pool is running (ROOST_HOME={home}): start one with `roost up`")
    return NoPoolError(f"the {daemon} of the pool at ROOST_HOME={home} is not answering; "
                       f"the master restarts it (see {os.path.join(home, 'log')})")
