"""The configuration ``roost up`` writes for a personal pool."""

from __future__ import annotations

from pathlib import Path

from roost.config.loader import CONFIG_FILE_NAME

PERSONAL_CONFIG = """\
# roost personal pool: every daemon on this host, reachable over loopback only.
# Written by `roost up`; edit freely, it is not rewritten while it exists.
# `roost config -dump` shows every knob; `roost config -v NAME` where it is set.

use ROLE : Personal
use FEATURE : PartitionableSlot

LOCAL_DIR = {home}
"""


def write_personal_config(home: Path) -> Path:
    """Write ``home/roost_config`` unless it exists; return its path either way."""
    home = Path(home).expanduser()
    path = home / CONFIG_FILE_NAME
    if path.exists():
        return path
    home.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(PERSONAL_CONFIG.format(home=home.resolve()), encoding="utf-8")
    tmp.replace(path)
    return path
