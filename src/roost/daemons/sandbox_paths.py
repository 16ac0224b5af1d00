"""The one check both ends of a file transfer make on a name before touching disk."""

from __future__ import annotations

import os
from typing import Any


def sandbox_relpath(name: Any, error: type[Exception], what: str = "file") -> str:
    """``name`` normalised relative to a sandbox; ``error`` if it is not a non-empty
    string without NUL, or if it could leave the sandbox (absolute, ``..``, ``.``)."""
    if not isinstance(name, str) or not name or "\x00" in name:
        raise error(f"bad {what} name {name!r}")
    norm = os.path.normpath(name)
    if os.path.isabs(norm) or norm == ".." or norm.startswith("../") or norm == ".":
        raise error(f"{what} name {name!r} leaves the sandbox")
    return norm
