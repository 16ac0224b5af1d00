"""The startd (``python -m roost.daemons.startd``): slots, claims and starters.

- ``daemon``: the daemon shell (configuration, the slot table, advertising, wiring);
- ``claims``: the claim protocol, preempting claims and leases;
- ``policy_runner``: the owner policy (``roost.core.ownerpolicy``) at work, and the owner's commands (drain, vacate, off, on);
- ``owner``: measuring the owner's use of the machine (idle times, loads);
- ``starter``: one asyncio task per running job (sandbox, files, process);
- ``peers``: the connections to schedds that every starter shares;
- ``leftovers``: killing and removing what a previous startd left behind;
- ``jobspec``: what a starter reads from a job ad, and who a job runs as;
- ``launch``, ``cgroups``, ``procstat``: starting job processes, their cgroups, /proc;
- ``resources``: what this machine has (CPUs, memory, disk, GPUs, platform).

Slot decisions are pure and live in ``roost.core.slots``.
"""
