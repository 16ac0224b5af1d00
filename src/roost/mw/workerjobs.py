"""Keeping a master's worker jobs in the pool: what a worker job is, and how many to
submit again.

A worker job is one vanilla-universe job that runs ``python -B roost_mw_worker.py
HOST PORT JOB`` with the worker, its protocol and the secret transferred into its
sandbox (the secret as a file: see worker.py). Every worker job carries
``RoostMWMaster = "<tag>"``, so ``roost q -constraint 'RoostMWMaster =?= "<tag>"'``
shows one master's workers and removes them if the master died without cleaning up.

Replacement follows what the pool does by itself:
- an evicted or vacated job goes back to Idle and runs again: it is still in the
  queue, so it is not replaced (its worker joins again as a new worker);
- a job a user held stays counted: whoever held it decides (``roost release`` brings it
  back);
- a job held for any other reason (its process could not start, a transfer failed, a
  policy) would wait for ever: the master removes it and submits another;
- a job that left the queue (completed, removed) is replaced by a new one.

A job that leaves without a worker ever having joined from it failed to start (no
Python on the execute host, the master unreachable from there ...). After
``max_failed_starts`` of those in a row the master stops submitting and says why:
resubmitting would only repeat the failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from roost.core import jobpolicy as jp

TAG_ATTR = "RoostMWMaster"
#: states in which a job is still the pool's business: it runs, or will run again
ALIVE = frozenset({jp.IDLE, jp.RUNNING, jp.HELD, jp.TRANSFERRING_OUTPUT, jp.SUSPENDED})


def is_alive(ad: dict[str, Any]) -> bool:
    """Whether a worker job in the queue counts: held only by a user's hold."""
    status = int(ad.get("JobStatus", 0))
    if status == jp.HELD:
        return int(ad.get("HoldReasonCode") or 0) == jp.HOLD_USER
    return status in ALIVE


def worker_description(*, python: str, host: str, port: int, directory: str, files: list[str],
                       tag: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The submit commands of the worker jobs; ``extra`` adds to or overrides them
    (``requirements``, ``request_memory``, ``error`` for the workers' stderr ...)."""
    desc = {
        "universe": "vanilla",
        "executable": python,
        "transfer_executable": "false",
        "arguments": f'"-B roost_mw_worker.py {host} {port} $(Cluster).$(Process)"',
        "should_transfer_files": "YES",
        "when_to_transfer_output": "ON_EXIT",
        "transfer_input_files": ", ".join(files),
        "initialdir": directory,
        "request_cpus": "1",
        f"+{TAG_ATTR}": f'"{tag}"',
    }
    desc.update(extra or {})
    return desc


@dataclass
class Census:
    """One look at the queue: the worker jobs alive, and those that ended since the last."""

    alive: set[str] = field(default_factory=set)
    ended: list[str] = field(default_factory=list)
    failed_starts: list[str] = field(default_factory=list)


def census(known: set[str], alive: set[str], joined: set[str]) -> Census:
    """``known``: the jobs alive at the last look (and those submitted since);
    ``alive``: those the queue shows alive now; ``joined``: every job a worker ever
    joined from."""
    out = Census(alive=set(alive))
    for job in sorted(known - out.alive, key=_job_key):
        out.ended.append(job)
        if job not in joined:
            out.failed_starts.append(job)
    return out


def _job_key(job: str) -> tuple[int, ...]:
    return tuple(int(p) for p in job.split(".") if p.isdigit())


class WorkerJobs:
    """A master's worker jobs in one schedd (used from one thread at a time)."""

    def __init__(self, schedd: Any, description: dict[str, str], wanted: int, tag: str,
                 max_failed_starts: int) -> None:
        self.schedd = schedd
        self.description = description
        self.wanted = wanted
        self.tag = tag
        self.max_failed_starts = max_failed_starts
        self.known: set[str] = set()
        self.failed_in_a_row = 0
        self.last_failed: str | None = None
        self.submitted = 0
        self.replaced = 0
        self._joined_seen: set[str] = set()
        self.hold_reasons: dict[str, str] = {}

    @property
    def constraint(self) -> str:
        return f'{TAG_ATTR} =?= "{self.tag}"'

    def submit(self, count: int) -> list[str]:
        result = self.schedd.submit(self.description, count=count)
        jobs: list[str] = result.job_ids()
        self.known.update(jobs)
        self.submitted += len(jobs)
        return jobs

    def keep(self, joined: set[str]) -> list[str]:
        """Look at the queue and submit what is missing; the jobs submitted."""
        ads = self.schedd.query_objs(self.constraint, ["JobStatus", "HoldReasonCode", "HoldReason"])
        alive = {f"{a['ClusterId']}.{a['ProcId']}" for a in ads if is_alive(a)}
        stuck = {f"{a['ClusterId']}.{a['ProcId']}": str(a.get("HoldReason") or "") for a in ads
                 if int(a.get("JobStatus", 0)) == jp.HELD and not is_alive(a)}
        if stuck:
            self.hold_reasons.update(stuck)
            self.schedd.act("remove", sorted(stuck), reason="held: the master-worker master replaces it")
        seen = census(self.known, alive, joined)
        if joined - self._joined_seen:  # a worker started since: starting works
            self.failed_in_a_row = 0
            self._joined_seen = set(joined)
        for job in seen.ended:
            if job in seen.failed_starts:
                self.failed_in_a_row += 1
                self.last_failed = job
        self.known = set(seen.alive)
        missing = self.wanted - len(seen.alive)
        if missing <= 0 or self.giving_up:
            return []
        jobs = self.submit(missing)
        self.replaced += len(jobs)
        return jobs

    @property
    def giving_up(self) -> bool:
        return self.failed_in_a_row >= self.max_failed_starts

    def why_failed(self) -> str:
        """What the last job that failed to start left in the history, in words."""
        job = self.last_failed
        if job is None:
            return ""
        if job in self.hold_reasons:
            return f"job {job} held: {self.hold_reasons[job]}"
        try:
            ads = self.schedd.history(ids=[job], projection=["ExitCode", "ExitBySignal", "ExitSignal",
                                                             "HoldReason", "RemoveReason"])
        except Exception as e:  # a message for an error already being raised: best effort
            return f"job {job} (its history: {e})"
        if not ads:
            return f"job {job}"
        ad = ads[0]
        if ad.get("ExitBySignal"):
            return f"job {job} killed by signal {ad.get('ExitSignal')}"
        if ad.get("RemoveReason"):
            return f"job {job} removed: {ad['RemoveReason']}"
        return f"job {job} exited with code {ad.get('ExitCode')}"

    def remove_all(self) -> None:
        self.schedd.act("remove", constraint=self.constraint, reason="the master-worker master closed")
