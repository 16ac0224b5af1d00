"""A restarted startd takes back the claims and jobs its predecessor left running
(``leftovers.py`` reads their records): each slot Claimed/Busy again under its claim
id (the claim table's ADOPT, ``roost.core.claimstates``), its starter carrying on; a
record that no longer fits the machine's slots is killed. The functions work on the
``Claims`` they are given; ``Claims.adopt`` calls them.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from roost.classad import ClassAd
from roost.core import claimstates as cs
from roost.core import slots as core
from roost.core.slots import Claim, Slot
from roost.daemons.startd.jobspec import Identity, JobSpec, JobSpecError, parse_job
from roost.daemons.startd.leftovers import Record
from roost.net.adwire import obj_to_ad

if TYPE_CHECKING:
    from roost.daemons.startd.claims import Claims


def adopt(claims: Claims, records: list[Record]) -> list[str]:
    """Take back the claims and jobs a previous startd left running (their keepers
    still wait for them, or wrote their ends): each slot Claimed/Busy again under
    its claim id, its starter carrying on. The schedd's shadow sees nothing but a
    keep-alive or two that failed. A record that no longer fits the machine's slots
    is killed. What was done, for the log."""
    done = []
    now = time.time()
    # oldest first: with claim reuse a claim may have two records, a job that ended
    # (its report not yet acknowledged) and the next one; the later one holds the slot
    for rec in sorted(records, key=lambda r: r.started):
        d = rec.data
        cid = d.get("claim_id")
        held = claims.by_claim.get(cid) if isinstance(cid, str) else None
        if held is not None and cid in claims.starters:
            done.append(_adopt_next(claims, rec, cid, held))
            continue
        try:
            s, c = d["slot"], d["claim"]
            total = core.Resources(int(s["cpus"]), int(s["memory"]), int(s["disk"]), tuple(s["gpus"]))
            lease = float(c["lease"])
            claim = Claim(schedd_address=str(c["schedd_address"]), user=str(c["user"]), owner=str(c["owner"]),
                          lease=lease, lease_expires=now + lease, job=str(d["job"]), job_start=rec.started,
                          concurrency_limits=str(c.get("concurrency_limits") or ""))
            spec, identity, job = _recorded_job(claims, rec)
            _check_free(claims.host.slots, str(s["name"]))
            changed = core.readopt(claims.host.slots, str(s["name"]), total, claim, d["claim_id"], now)
        except (KeyError, TypeError, ValueError, JobSpecError, core.SlotError) as e:
            done.append(f"cannot adopt job {d.get('job', rec.name)} ({e}): killed")
            done.extend(forget_record(claims, rec))
            continue
        for slot in changed:
            claims.host.slots[slot.name] = slot
            claims.host.changed(slot.name)
        slot = changed[-1]
        for cid in [cid for cid, named in claims.by_claim.items() if named == slot.name]:
            del claims.by_claim[cid]  # the fresh claim id the layout gave a static slot
        claims.by_claim[slot.claim_id] = slot.name
        claims.claimed_now(slot, job)
        _carry_on(claims, rec, slot, spec, identity, job)
        claims.owner_policy.evaluate_soon(slot.name)
        state = "still running" if rec.alive() else "ended meanwhile"
        done.append(f"adopted job {spec.job_id} on {claims.host.slot_name(slot.name)} ({state})")
    if records:
        claims.arm_leases()
    return done


def _recorded_job(claims: Claims, rec: Record) -> tuple[JobSpec, Identity, ClassAd]:
    """The job a record names, as a starter needs it; KeyError, TypeError, ValueError
    or JobSpecError when the record does not say it."""
    uid, gid, name, home, real = rec.data["identity"]
    identity = Identity(int(uid), int(gid), str(name), str(home), bool(real))
    job = obj_to_ad(rec.data["job_ad"])
    assert claims.host.machine is not None
    return parse_job(job, claims.host.machine.filesystem_domain), identity, job


def _carry_on(claims: Claims, rec: Record, slot: Slot, spec: JobSpec, identity: Identity, job: ClassAd) -> None:
    """An adopted job's starter on its claim, in the cgroups it had."""
    cid = slot.claim_id
    env = rec.data.get("env")
    starter = claims.factory.build(spec, cid, slot, rec.name, identity, rec.data["job_ad"],
                                   env={str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else None)
    claims.host.cpu.adopt(rec.name, slot.name)
    oom_base = rec.data.get("oom_base")
    claims.host.memory.adopt(rec.name, slot.name, slot.total.memory << 20 if slot.total.memory else None,
                             oom_base if type(oom_base) is int else 0)
    claims.starters[cid] = starter
    claims.job_ads[cid] = job
    starter.adopt(rec)


def _adopt_next(claims: Claims, rec: Record, cid: str, slot_name: str) -> str:
    """A second record on an adopted claim: the earlier job moves to the claim's
    reporting starters, this one runs on the slot."""
    try:
        spec, identity, job = _recorded_job(claims, rec)
    except (KeyError, TypeError, ValueError, JobSpecError) as e:
        forget_record(claims, rec)
        return f"cannot adopt job {rec.data.get('job', rec.name)} ({e}): killed"
    slot = claims.host.slots[slot_name]
    earlier = claims.starters.pop(cid)
    claims.reporting.setdefault(cid, []).append(earlier)
    assert slot.claim is not None
    slot = claims.host.slots[slot_name] = replace(slot, claim=replace(slot.claim, job=spec.job_id,
                                                                      job_start=rec.started))
    _carry_on(claims, rec, slot, spec, identity, job)
    return f"adopted job {spec.job_id} on {claims.host.slot_name(slot_name)} after job {earlier.spec.job_id}"


def forget_record(claims: Claims, rec: Record) -> list[str]:
    """A job that cannot be adopted: killed, its sandbox and cgroups removed."""
    done = rec.kill()
    claims.host.cgroups.remove(rec.name)
    sandbox = os.path.join(claims.host.execute_dir, rec.name)
    shutil.rmtree(sandbox, ignore_errors=True)
    return done



def _check_free(slots: dict[str, Slot], name: str) -> None:
    """SlotError unless the slot a record names (or the partitionable slot it was carved
    from) is where the claim table lets a claim be taken back."""
    base = slots.get(name) or slots.get(name.rpartition("_")[0])
    if base is not None and not cs.applies(base.state, base.activity, cs.ADOPT):
        raise core.SlotError(f"{name} is {base.state}/{base.activity}")
