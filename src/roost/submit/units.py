"""Sizes with units (``2GB``, ``512M``, ``100k``) as condor_submit reads them."""

from __future__ import annotations

import math
import re

_SIZE_RE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([KMGTP]?)(?:B|iB)?\s*\Z", re.IGNORECASE)
_MULT = {"": 0, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}


def parse_size(text: str, scale: int) -> int | None:
    """A size in units of ``scale`` bytes, rounded up; None when not a plain size.

    A number without a unit is already in ``scale`` units (MB for
    request_memory, KB for request_disk), exactly as HTCondor does it.
    """
    m = _SIZE_RE.match(text)
    if not m:
        return None
    num = float(m.group(1))
    unit = m.group(2).upper()
    mult = _MULT[unit] or scale
    return int(math.ceil(num * mult / scale - 1e-9))
