"""The job-run machine: one job's life on the execute side, events in, actions out.

The starter (``roost.daemons.startd.starter``) feeds it what happened (the sandbox is
made, the input is in, the process started or ended, the owner policy suspends, the
schedd vacates, the checkpoint is in the spool, the final report is acknowledged) and
performs the actions it returns (transfer input, spawn, signal, kill, upload a
checkpoint, send the outputs and the report, release the slot). It decides everything
that depends on *when* an event comes, so the races between them are decided here,
once, and unit-tested without a process:

- a SUSPEND before the spawn finished (or while a self-checkpointing job is between
  runs) is kept and applied right after the spawn, never lost;
- a vacate during the input transfer stops the start; one during the spawn kills the
  process as soon as it exists;
- an exit during a vacate or a suspension ends the run as a vacate or an exit would;
- a checkpoint asked for while the job is suspended, leaving or between runs is skipped;
- an adopted job that had already ended is not reported running again.

``MOVES`` is the table: which event moves the run from which state to which (several
targets where the event's details choose); ``IGNORED`` lists the events a state drops
on purpose (a SUSPEND of a suspended job, anything after the end). Any other event
raises :class:`IllegalEvent`: a shell that feeds one has a bug.

No I/O, no clock: the shell passes ``now`` in (kept as ``changed_at``, for its log).
"""

from __future__ import annotations

import signal as _signal
from dataclasses import dataclass, field


class RunState:
    """Where the run is. Lower-case words, the starter's own (not slot states)."""

    NEW = "new"
    PREPARING = "preparing"            # the sandbox (and cgroups) being made
    TRANSFERRING_IN = "transferring_in"
    SPAWNING = "spawning"              # the process being started (or started again)
    RUNNING = "running"
    SUSPENDED = "suspended"
    VACATING = "vacating"              # leaving: its kill signal sent (or its start stopped)
    CHECKPOINTING = "checkpointing"    # exited with its checkpoint: the upload, then on
    REPORTING = "reporting"            # no process left: outputs and the final report
    DONE = "done"

    ALL = (NEW, PREPARING, TRANSFERRING_IN, SPAWNING, RUNNING, SUSPENDED, VACATING,
           CHECKPOINTING, REPORTING, DONE)
    #: before the job's process exists
    STARTING = frozenset({NEW, PREPARING, TRANSFERRING_IN, SPAWNING})


class Ev:
    """What can happen to a run (the ``event`` of :meth:`JobRun.handle`)."""

    START = "start"                    # a fresh job: make its sandbox
    ADOPTED = "adopted"                # a job a previous startd started (``alive``: its keeper runs)
    PREPARED = "prepared"              # the sandbox is made
    TRANSFER_IN_DONE = "transfer_in_done"
    TRANSFER_IN_FAILED = "transfer_in_failed"
    SPAWNED = "spawned"
    SPAWN_FAILED = "spawn_failed"      # also: the sandbox could not be made
    START_STOPPED = "start_stopped"    # the start in progress stopped, as CANCEL_START asked
    EXITED = "exited"                  # the process ended (``checkpointed``, ``known``)
    VACATE = "vacate"                  # ``graceful``, ``why``: remove, hold or None
    HOLD = "hold"                      # a vacate because the job is held (hold_kill_sig)
    HARD_KILL = "hard_kill"            # SIGKILL now (JobMaxVacateTime passed, or KILL)
    SUSPEND = "suspend"
    CONTINUE = "continue"
    CHECKPOINT_REQUESTED = "checkpoint_requested"  # the periodic checkpoint signal's tick
    CHECKPOINT_WRITTEN = "checkpoint_written"      # the upload ended (sent or given up)
    OVER_LIMIT = "over_limit"          # over its slot's disk: killed, the schedd holds it
    REPORT_ACKED = "report_acked"      # the schedd took the final report
    REPORT_ABANDONED = "report_abandoned"  # refused, or nobody left to report to
    CLAIM_LOST = "claim_lost"          # lease expired, claim released, startd stopping
    DETACH = "detach"                  # the startd leaves its jobs to the next one

    ALL = (START, ADOPTED, PREPARED, TRANSFER_IN_DONE, TRANSFER_IN_FAILED, SPAWNED, SPAWN_FAILED,
           START_STOPPED, EXITED, VACATE, HOLD, HARD_KILL, SUSPEND, CONTINUE, CHECKPOINT_REQUESTED,
           CHECKPOINT_WRITTEN, OVER_LIMIT, REPORT_ACKED, REPORT_ABANDONED, CLAIM_LOST, DETACH)


class Act:
    """What the shell is to do (the ``kind`` of an :class:`Action`)."""

    PREPARE = "prepare"                # make the sandbox
    TRANSFER_INPUT = "transfer_input"
    SPAWN = "spawn"                    # ``restart``: again in place, after a checkpoint
    WATCH = "watch"                    # an adopted job: wait for its keeper / exit file
    SIGNAL = "signal"                  # ``signal`` to the job's process group
    CHECKPOINT_SIGNAL = "checkpoint_signal"  # ``signal`` to the job's own process only
    STOP = "stop"                      # SIGSTOP the group, freeze its cgroup and container
    CONT = "cont"                      # thaw them, SIGCONT the group (while it lives)
    KILL = "kill"                      # SIGKILL the group and its cgroup
    END_RUN = "end_run"                # SIGKILL what an ended run left in its group (not
                                       # the cgroup: the next run goes there)
    CANCEL_START = "cancel_start"      # stop the transfer or spawn in progress
    UPLOAD_CHECKPOINT = "upload_checkpoint"
    TRANSFER_OUTPUT = "transfer_output"
    REPORT = "report"                  # ``report``: running, suspended, resumed, final
    RELEASE_SLOT = "release_slot"      # the claim may take its next job (on_finished)
    CLEAN = "clean"                    # remove the sandbox, cgroups and record (on_done)
    ABORT = "abort"                    # stop the starter's task, unreported


class Report:
    """What a REPORT action sends."""

    RUNNING = "running"
    SUSPENDED = "suspended"
    RESUMED = "resumed"
    FINAL = "final"


@dataclass(frozen=True, slots=True)
class Action:
    kind: str
    signal: int | None = None
    report: str | None = None
    restart: bool = False


class IllegalEvent(ValueError):
    """An event the run's state cannot take: the shell fed it out of order."""


S, E = RunState, Ev
_ANY_LIVE = tuple(s for s in S.ALL if s != S.DONE)
_STARTING = (S.PREPARING, S.TRANSFERRING_IN, S.SPAWNING)

#: (state, event) -> the states it may move to (the event's details pick one)
MOVES: dict[tuple[str, str], tuple[str, ...]] = {
    (S.NEW, E.START): (S.PREPARING,),
    (S.NEW, E.ADOPTED): (S.RUNNING,),
    (S.PREPARING, E.PREPARED): (S.TRANSFERRING_IN, S.SPAWNING),
    (S.PREPARING, E.SPAWN_FAILED): (S.REPORTING,),
    (S.TRANSFERRING_IN, E.TRANSFER_IN_DONE): (S.SPAWNING,),
    (S.TRANSFERRING_IN, E.TRANSFER_IN_FAILED): (S.REPORTING,),
    (S.SPAWNING, E.SPAWNED): (S.RUNNING, S.SUSPENDED),
    (S.SPAWNING, E.SPAWN_FAILED): (S.REPORTING,),
    (S.RUNNING, E.EXITED): (S.CHECKPOINTING, S.REPORTING),
    (S.SUSPENDED, E.EXITED): (S.CHECKPOINTING, S.REPORTING),
    (S.VACATING, E.EXITED): (S.CHECKPOINTING, S.REPORTING),
    (S.RUNNING, E.SUSPEND): (S.SUSPENDED,),
    (S.SUSPENDED, E.CONTINUE): (S.RUNNING,),
    (S.RUNNING, E.CHECKPOINT_REQUESTED): (S.RUNNING,),
    (S.RUNNING, E.OVER_LIMIT): (S.RUNNING,),   # killed: its exit says why
    (S.CHECKPOINTING, E.CHECKPOINT_WRITTEN): (S.SPAWNING, S.REPORTING),
    (S.REPORTING, E.REPORT_ACKED): (S.DONE,),
    (S.REPORTING, E.REPORT_ABANDONED): (S.DONE,),
    # a vacate stops a start, signals a process, or waits for an upload to end
    **{(s, ev): (S.VACATING,) for s in (*_STARTING, S.RUNNING, S.SUSPENDED)
       for ev in (E.VACATE, E.HOLD, E.HARD_KILL)},
    **{(S.CHECKPOINTING, ev): (S.CHECKPOINTING,) for ev in (E.VACATE, E.HOLD, E.HARD_KILL)},
    (S.VACATING, E.VACATE): (S.VACATING,),     # again: only a hard one does more
    (S.VACATING, E.HOLD): (S.VACATING,),
    (S.VACATING, E.HARD_KILL): (S.VACATING,),
    (S.VACATING, E.SPAWNED): (S.VACATING,),    # started as it was vacated: killed at once
    # the start stopped (or ended) after the vacate: nothing runs, it was vacated
    **{(S.VACATING, ev): (S.REPORTING,) for ev in (
        E.PREPARED, E.TRANSFER_IN_DONE, E.TRANSFER_IN_FAILED, E.SPAWN_FAILED, E.START_STOPPED)},
    # a suspend before the process exists (or between two runs) is kept for the spawn
    **{(s, ev): (s,) for s in (S.NEW, *_STARTING, S.CHECKPOINTING) for ev in (E.SUSPEND, E.CONTINUE)},
    **{(s, E.CLAIM_LOST): (S.DONE,) for s in _ANY_LIVE},
    **{(s, E.DETACH): (s,) for s in _ANY_LIVE},
}

#: (state, event) pairs dropped on purpose: the event means nothing there
IGNORED: frozenset[tuple[str, str]] = frozenset({
    (S.RUNNING, E.CONTINUE),                     # not suspended
    (S.SUSPENDED, E.SUSPEND),
    (S.SUSPENDED, E.CHECKPOINT_REQUESTED),       # stopped: it cannot write one
    (S.VACATING, E.SUSPEND), (S.VACATING, E.CONTINUE),
    (S.VACATING, E.CHECKPOINT_REQUESTED),        # leaving: its kill signal asks for one
    (S.CHECKPOINTING, E.CHECKPOINT_REQUESTED),   # between runs: its checkpoint is on the way
    *((s, E.CHECKPOINT_REQUESTED) for s in (S.NEW, *_STARTING)),
    # over the disk while not running: stopped, leaving, between runs or ended anyway
    *((s, E.OVER_LIMIT) for s in (S.NEW, *_STARTING, S.SUSPENDED, S.VACATING, S.CHECKPOINTING, S.REPORTING)),
    # the job has ended: a vacate or a signal has nothing left to act on
    *((S.REPORTING, ev) for ev in (E.VACATE, E.HOLD, E.HARD_KILL, E.SUSPEND, E.CONTINUE,
                                    E.CHECKPOINT_REQUESTED)),
    # after the end (or the claim's loss) everything is late
    *((S.DONE, ev) for ev in Ev.ALL),
    # what a start that was told to stop still says while it unwinds
    *((S.REPORTING, ev) for ev in (E.START_STOPPED, E.SPAWN_FAILED, E.TRANSFER_IN_FAILED)),
})


@dataclass(slots=True)
class JobRun:
    """One run's state and what it remembers between events.

    ``transfer``: the job's files move (input in, output back; a checkpoint is only
    possible then); ``kill_sig``, ``remove_kill_sig``, ``hold_kill_sig``: the job's
    signals (remove/hold fall back on kill_sig); ``checkpoint_sig``: its periodic
    checkpoint signal, if any.
    """

    transfer: bool = True
    kill_sig: int = int(_signal.SIGTERM)
    remove_kill_sig: int | None = None
    hold_kill_sig: int | None = None
    checkpoint_sig: int | None = None
    state: str = S.NEW
    suspend_pending: bool = False   # a SUSPEND that came before the process existed
    frozen: bool = False            # STOP sent and no CONT since
    vacating: bool = False
    vacate_why: str | None = None
    hard_killed: bool = False
    detached: bool = False
    claim_lost: bool = False
    adopted: bool = False
    restarts: int = 0               # runs started again in place after a checkpoint
    changed_at: float = 0.0
    history: list[tuple[str, str, str]] = field(default_factory=list)  # (from, event, to), last few

    def handle(self, event: str, now: float, *, graceful: bool = True, why: str | None = None,
               checkpointed: bool = False, evict_files: bool = False, alive: bool = True) -> list[Action]:
        """Take ``event``; return what to do, in order. ``graceful``/``why``: a VACATE's;
        ``checkpointed``: the EXITED job says it wrote a checkpoint; ``evict_files``: a
        vacated job's outputs go to the spool (when_to_transfer_output ON_EXIT_OR_EVICT);
        ``alive``: an ADOPTED job's keeper still runs."""
        key = (self.state, event)
        targets = MOVES.get(key)
        if targets is None:
            if key in IGNORED:
                return []
            if event not in Ev.ALL:
                raise IllegalEvent(f"unknown event {event!r}")
            raise IllegalEvent(f"event {event!r} cannot happen in state {self.state!r}")
        to, acts = self._decide(event, graceful=graceful, why=why, checkpointed=checkpointed,
                                evict_files=evict_files, alive=alive)
        if to not in targets:  # the table and the rules below disagree: a bug here
            raise AssertionError(f"{self.state} --{event}--> {to} is not in MOVES")
        if to != self.state:
            self.history = [*self.history[-7:], (self.state, event, to)]
            self.changed_at = now
        self.state = to
        return acts

    # -- the rules ------------------------------------------------------------------

    def _decide(self, event: str, *, graceful: bool, why: str | None, checkpointed: bool,
                evict_files: bool, alive: bool) -> tuple[str, list[Action]]:
        st = self.state
        if event == E.START:
            return S.PREPARING, [Action(Act.PREPARE)]
        if event == E.ADOPTED:
            self.adopted = True
            # ended while no startd watched: its end is in its file, it is not running
            return S.RUNNING, [Action(Act.WATCH)] + ([Action(Act.REPORT, report=Report.RUNNING)] if alive else [])
        if event == E.DETACH:
            self.detached = True
            return st, []
        if event == E.CLAIM_LOST:
            self.claim_lost = True
            return S.DONE, [Action(Act.KILL), Action(Act.ABORT)]
        if event in (E.SUSPEND, E.CONTINUE):
            return self._pause(event == E.SUSPEND)
        if event in (E.VACATE, E.HOLD, E.HARD_KILL):
            return self._vacate(graceful and event != E.HARD_KILL, "hold" if event == E.HOLD else why)
        if st == S.VACATING and event != E.EXITED:
            return self._while_vacating(event)
        if event == E.PREPARED:
            if self.transfer:
                return S.TRANSFERRING_IN, [Action(Act.TRANSFER_INPUT)]
            return S.SPAWNING, [Action(Act.SPAWN)]
        if event == E.TRANSFER_IN_DONE:
            return S.SPAWNING, [Action(Act.SPAWN, restart=False)]
        if event in (E.TRANSFER_IN_FAILED, E.SPAWN_FAILED):
            return S.REPORTING, self._ended(output=False)
        if event == E.SPAWNED:
            acts = [] if self.restarts else [Action(Act.REPORT, report=Report.RUNNING)]
            if self.suspend_pending:  # it came while the process was being started
                self.suspend_pending = False
                self.frozen = True
                return S.SUSPENDED, [*acts, Action(Act.STOP), Action(Act.REPORT, report=Report.SUSPENDED)]
            return S.RUNNING, acts
        if event == E.EXITED:
            thaw = [Action(Act.CONT)] if self.frozen else []  # what it left is frozen: thawed to die
            self.frozen = False
            if self.vacating:
                if self.exit_saves(checkpointed, evict_files):  # to the spool, then vacated
                    return S.CHECKPOINTING, [*thaw, Action(Act.KILL), Action(Act.UPLOAD_CHECKPOINT)]
                return S.REPORTING, [*thaw, *self._ended(output=False)]
            if checkpointed and self.transfer:
                # its checkpoint to the schedd, then it runs again in place; what the run
                # left behind dies first (its group id is surely still its own)
                return S.CHECKPOINTING, [*thaw, Action(Act.END_RUN), Action(Act.UPLOAD_CHECKPOINT)]
            return S.REPORTING, [*thaw, *self._ended(output=self.transfer)]
        if event == E.OVER_LIMIT:
            return st, [Action(Act.KILL)]
        if event == E.CHECKPOINT_REQUESTED:
            if self.checkpoint_sig is None:
                return st, []
            return st, [Action(Act.CHECKPOINT_SIGNAL, signal=self.checkpoint_sig)]
        if event == E.CHECKPOINT_WRITTEN:
            if self.vacating:
                return S.REPORTING, self._ended(output=False)
            self.restarts += 1
            return S.SPAWNING, [Action(Act.SPAWN, restart=True)]
        if event in (E.REPORT_ACKED, E.REPORT_ABANDONED):
            return S.DONE, [Action(Act.CLEAN)]
        raise IllegalEvent(f"event {event!r} cannot happen in state {st!r}")  # pragma: no cover

    def _pause(self, suspend: bool) -> tuple[str, list[Action]]:
        st = self.state
        if st == S.RUNNING:  # (CONTINUE in RUNNING is IGNORED)
            self.frozen = True
            return S.SUSPENDED, [Action(Act.STOP), Action(Act.REPORT, report=Report.SUSPENDED)]
        if st == S.SUSPENDED:
            self.frozen = False
            return S.RUNNING, [Action(Act.CONT), Action(Act.REPORT, report=Report.RESUMED)]
        # no process yet, or between two runs: remembered for the spawn
        self.suspend_pending = suspend
        return st, []

    def _vacate(self, graceful: bool, why: str | None) -> tuple[str, list[Action]]:
        st = self.state
        first = not self.vacating
        self.vacating = True
        self.suspend_pending = False
        if first:
            self.vacate_why = why
        if st in S.STARTING:
            return S.VACATING, [Action(Act.CANCEL_START)]
        if st == S.CHECKPOINTING:  # no process: the upload ends, then it is vacated
            return st, []
        if not graceful:
            self.hard_killed = True
            return S.VACATING, [Action(Act.KILL)]
        if st == S.VACATING:
            return st, []  # its signal went already: JobMaxVacateTime runs
        sig = {"remove": self.remove_kill_sig, "hold": self.hold_kill_sig}.get(why or "") or self.kill_sig
        acts = [Action(Act.SIGNAL, signal=sig)]
        if st == S.SUSPENDED:  # a stopped job must run to see its signal
            self.frozen = False
            acts += [Action(Act.CONT), Action(Act.REPORT, report=Report.RESUMED)]
        return S.VACATING, acts

    def _while_vacating(self, event: str) -> tuple[str, list[Action]]:
        if event == E.SPAWNED:  # it was being started as the vacate came
            return S.VACATING, [] if self.detached else [Action(Act.KILL)]
        return S.REPORTING, self._ended(output=False)  # the start stopped: nothing ran

    def exit_saves(self, checkpointed: bool, evict_files: bool) -> bool:
        """A vacated job's end sends files to the spool: the checkpoint it wrote on its
        kill signal, or its outputs (ON_EXIT_OR_EVICT; never a removed job's)."""
        if not self.transfer:
            return False
        return checkpointed or (evict_files and self.vacate_why != "remove")

    def _ended(self, output: bool) -> list[Action]:
        """The run is over: what is left of it dies, the slot may take its next job,
        the outputs (an ended job's) and the final report go."""
        acts = [Action(Act.KILL), Action(Act.RELEASE_SLOT)]
        if output and not self.vacating:
            acts.append(Action(Act.TRANSFER_OUTPUT))
        return [*acts, Action(Act.REPORT, report=Report.FINAL)]

    @property
    def starting(self) -> bool:
        """No process yet."""
        return self.state in S.STARTING

    def phase(self) -> str:
        """The starter's coarse state, as the startd reads it: starting (no process yet),
        running (a process, or one between runs), exited (final report pending), done."""
        st = self.state
        if st in S.STARTING:
            return "starting"
        if st == S.REPORTING:
            return "exited"
        if st == S.DONE:
            return "done"
        return "running"


__all__ = ["MOVES", "IGNORED", "Act", "Action", "Ev", "IllegalEvent", "JobRun", "Report", "RunState"]
