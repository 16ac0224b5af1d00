"""How a claim's job gets its starter: who it runs as, its environment and sandbox,
the limits it runs under, and the record a restarted startd reads to take it back.

``Claims`` decides when a starter runs (ACTIVATE_CLAIM, adoption); this module only
builds it. It sees the startd through ``Host``, the part of ``claims.Host`` it reads,
and calls back into the claims through the three functions it is given.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from roost.classad import ClassAd
from roost.config import Config
from roost.core.slots import Slot
from roost.daemons.startd.cgroups import JobCgroups
from roost.daemons.startd.chirp import ChirpSettings
from roost.daemons.startd.cpushare import CpuShares
from roost.daemons.startd.jobcommand import Universes
from roost.daemons.startd.jobspec import (
    Identity,
    JobSpec,
    JobSpecError,
    job_identity,
    local_owner,
    slot_number,
)
from roost.daemons.startd.memlimit import MemoryLimits
from roost.daemons.startd.peers import Peers
from roost.daemons.startd.starter import Starter


class Host(Protocol):
    """What building a starter needs of the startd (``Startd``)."""

    config: Config
    slots: dict[str, Slot]
    execute_dir: str
    peers: Peers
    cgroups: JobCgroups
    memory: MemoryLimits
    cpu: CpuShares
    universes: Universes


def disk_policy(cfg: Config) -> str:
    """STARTD_DISK_LIMIT: ``hold`` (a job whose sandbox outgrows its slot's Disk is
    killed and held) or ``none`` (measured and reported only)."""
    got = (cfg.get("STARTD_DISK_LIMIT") or "hold").strip().lower()
    return got if got in ("hold", "none") else "hold"


@dataclass
class Activation:
    """A starter built for ACTIVATE_CLAIM, not started yet."""

    starter: Starter
    identity: Identity | None  # None: no account to run the job as (``error`` says why)
    error: str | None


class StarterFactory:
    """Builds the starters of this startd's claims (knobs read once, at start)."""

    def __init__(self, host: Host, address_of: Callable[[str], str | None],
                 on_finished: Callable[[Starter], None], on_done: Callable[[Starter], None]) -> None:
        self.host = host
        cfg = host.config
        self._address_of, self._on_finished, self._on_done = address_of, on_finished, on_done
        self.allow_owner = bool(cfg.get_bool("STARTER_ALLOW_RUNAS_OWNER", True))
        self.slot_user = cfg.get("SLOT_USER") or "nobody"
        self.update_interval = float(cfg.get_float("STARTER_UPDATE_INTERVAL", 300.0) or 300.0)
        self.stream_interval = float(cfg.get_float("STARTER_STREAM_INTERVAL", 1.0) or 1.0)
        self.chirp_settings = ChirpSettings.from_config(cfg)  # ENABLE_CHIRP*, CHIRP_DELAYED_UPDATE_*
        self.disk_policy = disk_policy(cfg)
        self.uid_domain = (cfg.get("UID_DOMAIN") or cfg.get("FULL_HOSTNAME") or "").strip()
        self._identities: dict[tuple[str, str], Identity] = {}
        self._sandboxes = itertools.count(1)

    def for_activation(self, spec: JobSpec, job: ClassAd, job_obj: dict[str, Any], slot: Slot,
                       claim_id: str) -> Activation:
        """The starter of an ACTIVATE_CLAIM's job, in a fresh sandbox."""
        error = None
        try:
            identity: Identity | None = self.identity(spec.owner, str(job.get("User") or ""), slot.name)
        except JobSpecError as e:
            error, identity = str(e), None
        if (identity is not None and identity.switch and not identity.real_owner and not spec.transfer
                and str(job.get("ShouldTransferFiles") or "").upper() == "IF_NEEDED"):
            # A shared file system is only shared with the job's Owner: a job that runs as
            # SLOT_USER (root's jobs, or owners without an account here) gets its files sent.
            spec = replace(spec, transfer=True)
        sandbox_name = f"dir_{os.getpid()}_{next(self._sandboxes)}"
        sandbox = os.path.join(self.host.execute_dir, sandbox_name)
        starter = self.build(spec, claim_id, slot, sandbox_name, identity or Identity(os.getuid(), os.getgid(), "", ""),
                             job_obj, env=self.job_env(spec.env, slot, sandbox, spec.transfer),
                             job_ad_text=job.printOld() if spec.transfer else "")
        return Activation(starter, identity, error)

    def build(self, spec: JobSpec, claim_id: str, slot: Slot, sandbox_name: str, identity: Identity,
              job_obj: dict[str, Any], env: dict[str, str] | None = None, job_ad_text: str = "") -> Starter:
        """A starter for ``spec`` on the claim (a new job's, or an adopted one's)."""
        def describe() -> dict[str, Any]:
            """The claim's part of the job's record: what a restarted startd needs to
            take the claim back (leftovers.py)."""
            now = self.host.slots.get(slot.name)
            claim = now.claim if now is not None and now.claim is not None else slot.claim
            assert claim is not None
            return {
                "slot": {"name": slot.name, "cpus": slot.total.cpus, "memory": slot.total.memory,
                         "disk": slot.total.disk, "gpus": list(slot.total.gpus)},
                "claim": {"schedd_address": claim.schedd_address, "user": claim.user, "owner": claim.owner,
                          "lease": claim.lease, "concurrency_limits": claim.concurrency_limits},
                "identity": [identity.uid, identity.gid, identity.name, identity.home, identity.real_owner],
                "job_ad": job_obj,
                "env": env or {},  # an adopted job restarted in place (after a checkpoint) gets it again
            }

        return Starter(
            spec=spec,
            claim_id=claim_id,
            slot_name=slot.name,
            execute_dir=self.host.execute_dir,
            sandbox_name=sandbox_name,
            identity=identity,
            env=env or {},
            job_ad_text=job_ad_text,
            peers=self.host.peers,
            address_of=lambda: self._address_of(claim_id),
            on_finished=self._on_finished,
            on_done=self._on_done,
            cgroups=self.host.cgroups,
            memory=self.host.memory,
            memory_limit=slot.total.memory << 20 if slot.total.memory else None,
            cpu=self.host.cpu,
            cpus=slot.total.cpus,
            update_interval=self.update_interval,
            stream_interval=self.stream_interval,
            chirp_settings=self.chirp_settings,
            universes=self.host.universes,
            describe=describe,
            disk_limit=slot.total.disk if self.disk_policy == "hold" and slot.total.disk > 0 else None,
        )

    def identity(self, owner: str, user: str, slot_name: str) -> Identity:
        """Who the job runs as: its Owner where that account exists here and the job's
        submitter is of this pool's UID_DOMAIN (``User`` = owner@domain), else the
        slot's user (``SLOT<N>_USER``, else ``SLOT_USER``, nobody); never root."""
        key = (local_owner(owner, user, self.uid_domain), self._slot_user(slot_name))
        got = self._identities.get(key)
        if got is None:
            got = job_identity(key[0], self.allow_owner, key[1])
            if len(self._identities) > 1000:
                self._identities.clear()
            self._identities[key] = got
        return got

    def _slot_user(self, slot_name: str) -> str:
        number = slot_number(slot_name)
        per_slot = self.host.config.get(f"SLOT{number}_USER") if number else None
        return (per_slot or self.slot_user).strip()

    @staticmethod
    def job_env(env: dict[str, str], slot: Slot, sandbox: str, transfer: bool) -> dict[str, str]:
        """The job's environment: its own, with the scratch directory, the slot, HTCondor's
        BATCH_SYSTEM, thread counts of the slot's cpus and its GPUs."""
        out = dict(env)
        cpus = str(slot.total.cpus)
        out.update(
            {
                "_CONDOR_SCRATCH_DIR": sandbox,
                "_CONDOR_SLOT": slot.name,
                "TMPDIR": sandbox,
                "TEMP": sandbox,
                "TMP": sandbox,
                "BATCH_SYSTEM": "HTCondor",
                "OMP_NUM_THREADS": cpus,
                "MKL_NUM_THREADS": cpus,
                "OPENBLAS_NUM_THREADS": cpus,
            }
        )
        if transfer:
            out["_CONDOR_JOB_AD"] = os.path.join(sandbox, ".job.ad")
        if slot.total.gpus:
            out["CUDA_VISIBLE_DEVICES"] = ",".join(g.rsplit("-", 1)[-1] for g in slot.total.gpus)
            out["_CONDOR_AssignedGPUs"] = ",".join(slot.total.gpus)
        return out
