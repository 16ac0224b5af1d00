"""``roost version`` (condor_version): roost's version and the HTCondor version lines
scripts and tools parse (``$CondorVersion: ...``, ``$CondorPlatform: ...``)."""

from __future__ import annotations

from roost import CONDOR_PLATFORM_LINE, CONDOR_VERSION_LINE


def main(argv: list[str]) -> int:
    print(CONDOR_VERSION_LINE)
    print(CONDOR_PLATFORM_LINE)
    return 0
