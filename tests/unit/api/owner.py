"""The token ``roost up`` gives the pool's owner, for pools a test starts without a master."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

from daemons.daemon_procs import pool_token, user_identity

from roost.api.connection import pool_token as presented_token
from roost.net.token_store import write_token_file


def owner_token(home: Path) -> Path:
    """Give the user running the tests a token of the pool at ``home`` unless one is
    there (what the master does at ``roost up``); the pool key is made here if no
    daemon has made it yet, so call this before starting daemons that take tokens."""
    path = home / "tokens.d" / pwd.getpwuid(os.geteuid()).pw_name
    if presented_token(str(home)) is None:
        write_token_file(path, pool_token(home, user_identity(home, path.name)))
    return path
