"""The startd (``python -m roost.daemons.startd``): slots, claims and starters.

- ``daemon``: the daemon shell (claim protocol, leases, advertising);
- ``starter``: one asyncio task per running job (sandbox, files, process);
- ``jobspec``: what a starter reads from a job ad, and who a job runs as;
- ``resources``: what this machine has (CPUs, memory, disk, GPUs, platform).

Slot decisions are pure and live in ``roost.core.slots``.
"""
