"""The startd: offers this machine's slots, grants claims, runs jobs through starters.

Decisions (carving, returning, slot ads, START) live in ``roost.core.slots``.
This module is the wiring: ``Startd`` reads the configuration, holds the slot
table (slots, machine, START/RANK policy) and advertises it, and routes commands
to the parts that own the rest, each seeing the startd only through a narrow
``Host`` protocol of its own:

- ``claims.Claims``: the claim protocol of docs/protocol.md (REQUEST_CLAIM,
  ACTIVATE_CLAIM, ..., preempting claims), leases, and the starters (starter.py);
- ``owner_policy.OwnerPolicy``: the owner policy and the owner's commands
  (DRAIN, CANCEL_DRAIN, VACATE, SET_OFF, SET_ON).

The ads stay here because they are what the startd is to the pool (the daemon's
``ads`` hook) and both parts write to them. Ads go to the collector in one round
per batch of state changes (and every UPDATE_INTERVAL); the negotiator is poked
only when a slot became free for new matches.

Knobs beyond HTCondor's usual ones: ``SLOT_USER`` (default ``nobody``),
who jobs run as when the startd is root and the job's Owner is not a usable
local user (or ``STARTER_ALLOW_RUNAS_OWNER`` is false);
``STARTD_DETECT_GPUS`` (default true) to skip running nvidia-smi;
``STARTD_ACTIVITY_UPDATE_DELAY`` (default 1 s), how long a Busy/Idle change
on a claim may wait before its ad goes to the collector.

The owner policy (``roost.core.ownerpolicy``: START, IS_OWNER, SUSPEND,
CONTINUE, PREEMPT, KILL, WANT_SUSPEND, WANT_VACATE, MaxJobRetirementTime) is
evaluated every POLLING_INTERVAL seconds and after every claim or job event;
keyboard/console idle times and loads come from ``owner.OwnerMonitor``
(knobs ``STARTD_ACTIVITY_FILE``, ``STARTD_OWNER_DEVICES``). Suspending is
SIGSTOP/SIGCONT to the job's process group plus its cgroup's freezer; vacating is the starter's
SIGTERM-then-SIGKILL, reported to the schedd as ``vacated``.
"""
from __future__ import annotations

import asyncio
import copy
import itertools
import os
import secrets
import time
from dataclasses import replace
from typing import Any

from roost.classad import ClassAd, ExprTree
from roost.classad.jsonform import ad_to_obj
from roost.config import Config
from roost.core import ownerpolicy as op
from roost.core import slots as core
from roost.core.slots import Slot, SlotConfigError
from roost.daemons.base import AdvertisedAd, CannotStart, Daemon, run
from roost.daemons.profiling import Profiled
from roost.daemons.startd import criu, jobcommand, launch, resources, slotconfig
from roost.daemons.startd.cgroups import JobCgroups
from roost.daemons.startd.claims import Claims
from roost.daemons.startd.cpushare import CpuShares
from roost.daemons.startd.glidein import Glidein
from roost.daemons.startd.jobcommand import Universes
from roost.daemons.startd.jobshell import ShellCalls
from roost.daemons.startd.leftovers import (
    JOBS_DIR,
    Record,
    read_records,
    remove_sandboxes,
    remove_strays,
)
from roost.daemons.startd.memlimit import MemoryLimits
from roost.daemons.startd.peek import PeekCalls
from roost.daemons.startd.peers import Peers
from roost.daemons.startd.policy_runner import OwnerPolicy
from roost.net.client import AsyncClient
from roost.net.errors import RequestError
from roost.net.server import Handler

#: ROOST_STARTD_PROFILE names a file: the startd runs under cProfile and writes its
#: statistics there every 15 s and when it stops (bench/running_bench.py --profile: where
#: the startd's CPU per job start goes)
PROFILE_ENV = "ROOST_STARTD_PROFILE"
_profiled = Profiled(PROFILE_ENV, 15.0)
# HTCondor's Requirements written by condor_submit test split(TARGET.CondorVersion)[1].
CONDOR_VERSION = "$CondorVersion: 25.12.0 2026-01-01 BuildID: roost $"
_GONE = object()  # not in the last ad


class Startd(Daemon):
    """The execute-side daemon."""

    max_frame = 16 << 20  # ACTIVATE_CLAIM carries a job ad; file bytes follow frames, not in them
    sticky_port = True  # the schedds of jobs it adopts after a restart reach their claims again

    ad_type = None  # it advertises slot ads only (see ``ads``)

    def __init__(self, config: Config | None = None) -> None:
        super().__init__("startd", "STARTD", config=config)
        cfg = self.config
        self.execute_dir = str(cfg.get("EXECUTE") or self.home / "execute")
        self._launcher_build: asyncio.Future[str | None] | None = None
        self.has_criu = False  # `criu check` passed here (HasCRIU)
        self.universes = Universes(execute_dir=os.path.realpath(self.execute_dir))  # JVM, container runtime
        self.slots: dict[str, Slot] = {}
        self.machine: core.Machine | None = None
        self.policy = core.Policy()
        self.peers = Peers(credentials=lambda: self.security.client_args())
        self.cgroups = JobCgroups(None)
        self.memory = MemoryLimits(None, 0, "none")
        self.cpu = CpuShares(None, 0)
        self._ads: dict[str, ClassAd] = {}
        #: per slot: [the Slot it was built for, the ad-wide inputs, the ad, the owner
        #: attributes set on it, the core attributes it was made of, its CurrentRank] (build_ad)
        self._built: dict[str, list[Any]] = {}
        self._dirty: set[str] = set()
        self._gone: set[str] = set()
        #: slots whose whole ad at the collector is current but for owner attributes (idle
        #: times, loads) and the clock: the periodic round refreshes those, not the whole ad
        self._current: set[str] = set()
        self._batch = True  # the collector takes UPDATE_ADS (cleared by one that does not)
        self._flushing = False
        self._urgent = False
        self._delayed: asyncio.TimerHandle | None = None
        self.activity_delay = cfg.get_float("STARTD_ACTIVITY_UPDATE_DELAY", 1.0) or 0.0
        self.want_reschedule = False
        self._negotiator: AsyncClient | None = None
        self._claim_numbers = itertools.count(1)
        self._birth = int(time.time())
        # The parts call each other: the owner policy acts on claims, and claim and job
        # events step the policy (claims.PolicyHooks).
        self.owner_policy = OwnerPolicy(self)
        self.claims = Claims(self, self.owner_policy)
        self.owner_policy.claims = self.claims
        # roost tail / ssh_to_job: a running job's files and a shell beside it (peek.py, jobshell.py)
        self.peek = PeekCalls(self.claims)
        self.shells = ShellCalls(self.claims, lambda: self.config.get_bool("ENABLE_SSH_TO_JOB", True) is not False)
        # a glide-in's end of life (roost annex), or STARTD_NOCLAIM_SHUTDOWN (glidein.py)
        self.glidein = Glidein(self, cfg)

    # -- start and stop ----------------------------------------------------------------

    async def start(self) -> None:
        os.makedirs(self.execute_dir, exist_ok=True)
        os.chmod(self.execute_dir, 0o755)  # job users must reach their sandboxes
        self._open_path_to_execute()
        jobs = os.path.join(self.execute_dir, JOBS_DIR)
        os.makedirs(jobs, exist_ok=True)
        os.chmod(jobs, 0o700)
        # Jobs a previous startd left running under their keepers are adopted (below, once
        # the slots exist); everything else it left is killed and removed.
        adopt: list[Record] = []
        remove_strays(self.execute_dir)
        for rec in read_records(self.execute_dir):
            if rec.adoptable():
                adopt.append(rec)
            else:
                for line in rec.kill():
                    self.log.info("leftover from a previous startd: %s", line)
        kept = {rec.name for rec in adopt}
        self.cgroups = JobCgroups.detect(self.execute_dir, bool(self.config.get_bool("STARTD_USE_CGROUPS", True)))
        for name in self.cgroups.leftovers():
            if name not in kept:
                self.cgroups.remove(name)
                self.log.info("leftover from a previous startd: killed and removed cgroup %s", name)
        self.memory = MemoryLimits.detect(self.execute_dir, self.cgroups.base,
                                          self.config.get("STARTD_MEMORY_LIMIT") or "hard",
                                          self.config.get_float("STARTD_MEMORY_MOVE_DELAY", 0.05) or 0.0)
        in_use = frozenset(str(rec.data["slot"].get("name")) for rec in adopt) | kept
        for name in self.memory.sweep(in_use):
            self.log.info("leftover from a previous startd: removed memory cgroup %s", name)
        self.cpu = CpuShares.detect(self.execute_dir, self.cgroups.base,
                                    bool(self.config.get_bool("STARTD_CPU_SHARES", True)),
                                    self.config.get_float("STARTD_MEMORY_MOVE_DELAY", 0.05) or 0.0)
        self.cpu.sweep(in_use)
        self.log.info("memory: %s; cpu: %s; disk: %s", self.memory.mechanism, self.cpu.mechanism,
                      self._disk_mechanism())
        for line in remove_sandboxes(self.execute_dir, kept):
            self.log.info("leftover from a previous startd: %s", line)
        if os.geteuid() == 0 and self.config.get_bool("STARTD_BUILD_LAUNCHER", True):
            # Spawns wait for the helper while it is built (see launch.spawn).
            self._launcher_build = asyncio.get_running_loop().run_in_executor(
                None, launch.build_launcher, os.path.join(self.execute_dir, ".launcher"))
            self._launcher_build.add_done_callback(self._launcher_built)
            launch.building(self._launcher_build)
        if self.config.get_bool("STARTD_DETECT_CRIU", True):
            self.spawn(self._detect_criu(), "criu check")
        for what, check in jobcommand.detect_all(self):  # each universe's runtime: a container's, a JVM
            self.spawn(check, what)
        self.machine = resources.detect(self.config, self.execute_dir)
        self.policy = slotconfig.read_policy(self.config)
        self.owner_policy.load_policy()
        now = time.time()
        try:
            self.slots = core.layout(slotconfig.slot_types(self.config), self.machine, self._claim_ids(), now)
        except SlotConfigError as e:  # the same layout would fail on every restart
            raise CannotStart(f"the slot layout does not fit this machine: {e}") from None
        self.claims.by_claim = {s.claim_id: s.name for s in self.slots.values()}
        for line in self.claims.adopt(adopt):
            self.log.info("from a previous startd: %s", line)
        t = self.machine.total
        self.log.info(
            "machine %s: %d cpus, %d MiB, %d KiB disk, %d gpus; slots: %s",
            self.machine.name, t.cpus, t.memory, t.disk, len(t.gpus),
            ", ".join(f"{s.name} ({s.kind}, {s.total.cpus} cpus)" for s in self.slots.values()),
        )

    def _launcher_built(self, built: asyncio.Future[str | None]) -> None:
        """Say when jobs start through the helper (what tests of jobs outliving their
        startd wait for: before it, a job dies with its startd)."""
        if built.cancelled():  # the startd is stopping
            return
        path = None if built.exception() is not None else built.result()
        if path:
            self.log.info("job launcher ready: %s", path)
        else:
            self.log.warning("job launcher not built: jobs start without it")

    async def _detect_criu(self) -> None:
        """HasCRIU once ``criu check`` passes; otherwise the log says why not."""
        ok, why = await asyncio.get_running_loop().run_in_executor(
            None, criu.probe, self.config.get("CRIU") or "criu")
        if ok:
            self.has_criu = True
            self.log.info("CRIU: %s; advertising HasCRIU", why)
            self.changed(*self.slots)
        else:
            self.log.info("CRIU: not advertised (jobs with checkpoint_method = criu will not match): %s", why)

    def _disk_mechanism(self) -> str:
        every = f"{self.claims.update_interval:g} s"
        if self.claims.disk_policy == "hold":
            return f"sandbox measured every {every}; a job over its slot's Disk is killed and held (34/104)"
        return f"sandbox measured every {every}, not limited"

    def _open_path_to_execute(self) -> None:
        """Jobs run as other users must be able to walk to their sandbox: give o+x
        (search, not read) to our own directories between EXECUTE and LOCAL_DIR, and
        warn about any other ancestor that blocks the way."""
        if os.geteuid() != 0:
            return
        home = os.path.realpath(self.home)
        path = os.path.realpath(self.execute_dir)
        while True:
            path = os.path.dirname(path)
            st = os.stat(path)
            if not st.st_mode & 0o001:
                inside = path == home or path.startswith(home + os.sep)
                if inside and st.st_uid == os.geteuid():
                    os.chmod(path, (st.st_mode & 0o7777) | 0o001)
                    self.log.info("made %s searchable so job users reach EXECUTE", path)
                else:
                    self.log.warning(
                        "%s is not searchable by other users: jobs run as another user cannot "
                        "reach their sandboxes under %s", path, self.execute_dir,
                    )
            if path == os.path.dirname(path):
                return

    async def started(self) -> None:
        self.owner_policy.measure(time.time())
        self.owner_policy.evaluate()
        self.want_reschedule = True
        self.changed(*self.slots)
        self.every(self.owner_policy.polling_interval, self.owner_policy.poll, "owner-policy")
        if self.glidein.active:
            self.log.info("glide-in: ends at %s, idle limit %g s", self.glidein.end_time, self.glidein.policy.idle_timeout)
            self.every(self.glidein.interval, self.glidein.poll, "glidein")
        if _profiled.on:
            self.every(_profiled.every, _profiled.dump, "profile")

    async def stop(self) -> None:
        claims = self.claims
        if self.orphaned:
            # Our master died (its death signal is this stop): the next master's startd
            # adopts the running jobs, which their keepers hold, and those that ended
            # and wait to report.
            self.log.info("the master is gone: leaving %d running jobs to the next startd", len(claims.starters))
            for starter in [*claims.starters.values(), *(s for p in claims.reporting.values() for s in p)]:
                starter.detach()
            self.peers.close()
            return
        for starter in [*claims.starters.values(), *(s for p in claims.reporting.values() for s in p)]:
            await starter.abandon()
        await asyncio.get_running_loop().run_in_executor(None, launch.drain_cleaner)
        self.cgroups.close()
        self.peers.close()
        if self._negotiator is not None:
            await self._negotiator.close()

    def _claim_ids(self):  # noqa: ANN202 (an endless iterator)
        while True:
            yield self.new_claim_id()

    def new_claim_id(self) -> str:
        return f"{self._birth}#{next(self._claim_numbers)}#{secrets.token_hex(12)}"

    # -- commands --------------------------------------------------------------------------

    def handlers(self) -> dict[str, Handler]:
        claims, owner_policy = self.claims, self.owner_policy
        return {
            "REQUEST_CLAIM": claims.h_request_claim,
            "ACTIVATE_CLAIM": claims.h_activate_claim,
            "KEEPALIVE": claims.h_keepalive,
            "RECONNECT": claims.h_reconnect,
            "DEACTIVATE_CLAIM": claims.h_deactivate_claim,
            "RELEASE_CLAIM": claims.h_release_claim,
            "SUSPEND_CLAIM": claims.h_suspend_claim,
            "CONTINUE_CLAIM": claims.h_continue_claim,
            "DRAIN": owner_policy.h_drain,
            "CANCEL_DRAIN": owner_policy.h_cancel_drain,
            "VACATE": owner_policy.h_vacate,
            "SET_OFF": owner_policy.h_set_off,
            "SET_ON": owner_policy.h_set_on,
            "PEEK_JOB": self.peek.h_peek_job,
            "JOB_SHELL": self.shells.h_job_shell,
        }

    # -- ads -------------------------------------------------------------------------------

    def slot_name(self, name: str) -> str:
        return f"{name}@{self.daemon_name}"

    def slot_ad(self, name: str) -> ClassAd:
        """The slot's current ad (cached until the slot changes)."""
        ad = self._ads.get(name)
        if ad is None:
            ad = self._ads[name] = self.build_ad(self.slots[name])
        return ad

    def build_ad(self, slot: Slot) -> ClassAd:
        """The ad of ``slot``, which need not be in the table yet (a claim being granted).

        Built once per state of the slot: slots are immutable (every change is a new
        ``Slot``), so an ad built for this very object, with the same ad-wide inputs
        (drain, the policy, detected runtimes) and claim rank, is current but for its
        owner attributes and clock, which are set on it here, only where they changed
        (issue 27: a job's start asked for its slot's ad five times, ~2 ms each, and each
        owner-policy poll threw every ad away for its idle times). A new state of the
        slot, or a new rank, with the same ad-wide inputs gets a copy of the last ad with
        only what changed set (:func:`changed_ad`)."""
        owner_policy = self.owner_policy
        rank = self.claims.current_rank.get(slot.claim_id, _GONE) if slot.claim is not None else _GONE
        key = (owner_policy.drain, owner_policy.drain_reason, self.has_criu, self.universes.runtime,
               self.universes.jvm, self.address, owner_policy.exprs, self.policy, self.machine,
               self.daemon_name, self.update_interval, self.memory.mechanism, self.cpu.mechanism,
               self._disk_mechanism())
        owner = owner_policy.owner_attrs.get(slot.name) or owner_policy.owner_attrs_for(slot)
        hit = self._built.get(slot.name)
        # an owner attribute gone (a latch's value undefined) needs a new ad: set ones only add
        same = hit is not None and hit[1] == key and hit[3].keys() <= owner.keys()
        if same and hit is not None and hit[0] is slot and hit[5] is rank:
            ad = hit[2]
            if hit[3] != owner:
                ad.update(owner)
                hit[3] = dict(owner)  # a copy: the policy fills its dicts in place
            now = int(time.time())
            if ad.get("MyCurrentTime") != now:
                ad["MyCurrentTime"] = now
            return ad
        attrs = self._core_attrs(slot)
        if same and hit is not None:
            ad = changed_ad(hit, attrs, owner)
            if rank is not hit[5]:
                if rank is _GONE:
                    ad.pop("CurrentRank", None)
                else:
                    ad["CurrentRank"] = rank
        else:
            ad = self._build_ad(attrs, slot, owner)
        self._built[slot.name] = [slot, key, ad, dict(owner), attrs, rank]
        return ad

    def _core_attrs(self, slot: Slot) -> dict[str, Any]:
        assert self.machine is not None
        machine = self.machine if self.daemon_name == self.machine.name else replace(
            self.machine, name=self.daemon_name
        )
        return core.slot_attrs(slot, machine, self.policy, self.address or "", time.time(), os.getloadavg()[0])

    def _build_ad(self, attrs: dict[str, Any], slot: Slot, owner: dict[str, Any]) -> ClassAd:
        assert self.machine is not None
        ad = ClassAd(attrs)
        ad["Machine"] = self.machine.name
        ad["CondorVersion"] = CONDOR_VERSION
        ad["CondorPlatform"] = f"$CondorPlatform: {self.machine.arch}-{self.machine.opsys_and_ver} $"
        ad["DaemonStartTime"] = int(self.start_time)
        ad["StartdPid"] = os.getpid()
        ad["MemoryEnforcement"] = self.memory.mechanism  # roost's: what holds a job to its request_memory
        ad["DiskEnforcement"] = self._disk_mechanism()
        ad["CpuEnforcement"] = self.cpu.mechanism
        ad["UpdateInterval"] = int(self.update_interval)
        if self.has_criu:
            ad["HasCRIU"] = True
        ad.update(self.universes.ad())  # HasContainer, HasDocker, HasJava ... where they work
        owner_policy, claims = self.owner_policy, self.claims
        ad.update(owner)
        if owner_policy.drain:
            ad["Draining"] = True
            ad["DrainReason"] = owner_policy.drain_reason
        if slot.claim is not None and slot.claim_id in claims.current_rank:
            ad["CurrentRank"] = claims.current_rank[slot.claim_id]  # (build_ad keeps it current)
        op.add_policy_exprs(ad, owner_policy.exprs)  # once per ad, not once per policy step
        return ad

    def ads(self) -> list[AdvertisedAd]:
        """Every slot ad, rebuilt (what the startd advertises; :meth:`advertise` sends them)."""
        self._ads.clear()
        return [("Machine", self.slot_ad(name), self._private(slot)) for name, slot in self.slots.items()]

    def _private(self, slot: Slot) -> dict[str, Any]:
        """Unclaimed: the claim id a match hands out; claimed: the id a preempting claim uses."""
        out = {"ClaimId": slot.claim_id}
        pid = self.claims.preempt_of.get(slot.name) if slot.claim is not None else None
        if pid and slot.name not in self.claims.preempting:
            out["PreemptClaimId"] = pid
        return out

    def changed(self, *names: str, urgent: bool = True) -> None:
        """Slots whose ads must reach the collector in the next update round.

        Claims, releases and resource changes go out at once; a Busy/Idle flip
        on a claim (``urgent=False``, two per job with claim reuse) waits up to
        STARTD_ACTIVITY_UPDATE_DELAY so a busy pool sends a few ads a second,
        not two per job.
        """
        for name in names:
            self._ads.pop(name, None)
            self._dirty.add(name)
            self._current.discard(name)
        if urgent:
            self._urgent = True
        if self._flushing or self.address is None:
            return
        if urgent:
            self._start_flush()
        elif self._delayed is None:
            self._delayed = asyncio.get_running_loop().call_later(self.activity_delay, self._start_flush)

    def forget_ad(self, name: str, owner_only: bool = False) -> None:
        """The slot's cached ad is stale (owner attributes, a reconnected claim) but need
        not go out before the next round that sends it. ``owner_only``: only its owner
        attributes changed, which the periodic round sends without the rest of the ad."""
        self._ads.pop(name, None)
        if not owner_only:
            self._current.discard(name)

    def slot_gone(self, name: str) -> None:
        """A dynamic slot went back to its parent: out of the table, and its ad is
        withdrawn from the collector in the next round."""
        del self.slots[name]
        self._ads.pop(name, None)
        self._built.pop(name, None)
        self._dirty.discard(name)
        self._current.discard(name)
        self._gone.add(name)

    def _start_flush(self) -> None:
        if self._delayed is not None:
            self._delayed.cancel()
            self._delayed = None
        if not self._flushing:
            self._flushing = True
            self.spawn(self._flush(), "slot-updates")

    async def _flush(self) -> None:
        try:
            await asyncio.sleep(0)  # let the rest of this round of changes land first
            self._urgent = True
            while self._urgent:
                self._urgent = False
                gone, self._gone = self._gone, set()
                dirty, self._dirty = self._dirty, set()
                await self._withdraw(gone)
                try:
                    await self._send_slots(sorted(dirty), [])
                except (ConnectionError, RequestError) as e:
                    self.log.warning("cannot update %d slot ads at the collector: %s", len(dirty), e)
                    self._dirty.clear()  # the periodic update will repair it
            if self.want_reschedule:
                self.want_reschedule = False
                if any(core.is_free(s) for s in self.slots.values()):
                    await self._reschedule()
        finally:
            self._flushing = False
            if self._dirty and self._delayed is None and self.address is not None:
                # Busy/Idle flips that came in during this round wait for the next one
                self._delayed = asyncio.get_running_loop().call_later(self.activity_delay, self._start_flush)

    async def _withdraw(self, gone: set[str]) -> None:
        """Invalidate the ads of slots that went away; one the collector could not be
        told of (down, cut off) is kept for the next round, else it would stand there
        as a claimed slot until it expired. A name back in the table is not withdrawn."""
        for name in sorted(gone):
            if name not in self.slots and not await self.invalidate("Machine", self.slot_name(name)):
                self._gone.add(name)

    #: slot ads per UPDATE_ADS frame (2,000 whole ads would be a 5 MB frame)
    BATCH = 500

    async def _send_slots(self, whole: list[str], refresh: list[str]) -> None:
        """Send these slots' whole ads, and refresh the others (their owner attributes and
        MyCurrentTime only), in UPDATE_ADS frames; slots the collector does not hold (it
        restarted) are sent whole. A collector without UPDATE_ADS gets an UPDATE_AD per
        slot. Raises ConnectionError or RequestError."""
        pending = [n for n in whole if n in self.slots]
        refresh = [n for n in refresh if n in self.slots]
        while pending or refresh:
            now = int(time.time())
            # a dynamic slot can go while a frame is out (its job ended): a name the
            # collector said it misses, or of a later frame, may be gone by now
            items, chunk = [], [n for n in pending[:self.BATCH] if n in self.slots]
            pending = pending[self.BATCH:]
            for name in chunk:
                items.append({"ad": ad_to_obj(self.slot_ad(name)), "private": self._private(self.slots[name])})
            room = (self.BATCH - len(chunk)) * 4  # a note is a tenth of an ad
            fresh, refresh = refresh[:room], refresh[room:]
            notes = [{"Name": self.slot_name(n), "MyCurrentTime": now, **self.owner_policy.owner_attrs.get(n, {})}
                     for n in fresh]
            if not self._batch:
                for item in items:
                    await self.collector_call("UPDATE_AD", type="Machine", **item)
                    self._advertised.add(("Machine", item["ad"]["Name"]))
                self._current.update(chunk)
                pending.extend(fresh)  # an older collector: whole ads
                continue
            try:
                got = await self.collector_call("UPDATE_ADS", type="Machine", ads=items, refresh=notes)
            except RequestError as e:
                if e.code != "BAD_REQUEST" or "UPDATE_ADS" not in str(e):
                    raise
                self.log.info("the collector does not take UPDATE_ADS: sending an UPDATE_AD per slot")
                self._batch = False
                pending = chunk + fresh + pending
                continue
            for item in items:
                self._advertised.add(("Machine", item["ad"]["Name"]))
            bad = {chunk[e["index"]] for e in got.get("errors") or [] if isinstance(e, dict)
                   and isinstance(e.get("index"), int) and 0 <= e["index"] < len(chunk)}
            for e in got.get("errors") or []:
                self.log.warning("the collector refused a slot ad: %s", e)
            self._current.update(n for n in chunk if n not in bad)
            lost = {self.slot_name(n): n for n in fresh}
            again = [lost[m] for m in got.get("missing") or [] if m in lost]
            pending.extend(n for n in again if n not in pending)

    async def advertise(self) -> bool:
        """The periodic round (every UPDATE_INTERVAL, and at once when the collector was
        lost): every slot's ad, rebuilt, goes whole where anything but its owner
        attributes changed since it was last sent; the others are refreshed (idle times,
        loads, MyCurrentTime), so a steady pool of 2,000 slots sends two thousand short
        notes, not 5 MB of ads the collector must read again."""
        whole = [n for n in self.slots if n not in self._current or n in self._dirty]
        refresh = [n for n in self.slots if n in self._current and n not in self._dirty]
        try:
            await self._send_slots(whole, refresh)
        except (ConnectionError, RequestError) as e:
            if not self._collector_failing:  # once per outage, not once per retry
                self.log.warning("cannot update slot ads at the collector: %s (retrying quietly)", e)
            self._collector_failing = True
            self._current.clear()
            return False
        if self._gone:  # what the collector could not be told of when it went
            gone, self._gone = self._gone, set()
            await self._withdraw(gone)
        if self._collector_failing:
            self._collector_failing = False
            self.log.info("the collector takes our ads again")
        return True

    async def _reschedule(self) -> None:
        """Ask the negotiator for a cycle now: a slot is free for new matches."""
        for attempt in (0, 1):
            if self._negotiator is None:
                address = await self.negotiator_address()
                if address is None:
                    return
                self._negotiator = self.client(address, timeout=5.0)
            try:
                await self._negotiator.call("RESCHEDULE")
                return
            except (ConnectionError, RequestError) as e:
                await self._negotiator.close()
                self._negotiator = None
                if attempt:
                    self.log.info("cannot ask the negotiator to reschedule: %s", e)


def main() -> None:
    _profiled.run(lambda: run(Startd))


def changed_ad(hit: list[Any], attrs: dict[str, Any], owner: dict[str, Any]) -> ClassAd:
    """A new state of a slot whose ad-wide inputs did not change: a copy of its last
    ad with only what differs set (a claim or an activity flip changes a handful of
    ~70 attributes; building the whole ad again was most of a job start's cost in
    the startd, issue 27). Owner attributes win over the core's, as in a new ad."""
    before: dict[str, Any] = hit[4]
    ad = copy.copy(hit[2])
    changed = []
    for k, v in attrs.items():
        old = before.get(k, _GONE)
        if old is v or (type(old) is type(v) and not isinstance(v, ExprTree) and old == v):
            continue
        ad[k] = v
        changed.append(k)
    for k in before.keys() - attrs.keys():
        del ad[k]  # a claim's attributes when it ends
    if hit[3] != owner:
        ad.update(owner)
    else:
        for k in changed:
            if k in owner:
                ad[k] = owner[k]
    return ad
