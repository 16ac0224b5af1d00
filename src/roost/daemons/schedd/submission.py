"""Submitting jobs: NEW_CLUSTER, SUBMIT and SUBMIT_TEXT.

A cluster is checked (owner, executable, every expression parses), committed, and
only then acknowledged; its submit events are written after the commit. Local- and
scheduler-universe jobs start at once; the rest ask the negotiator for a cycle.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from roost.core import jobpolicy as jp
from roost.core.accounting_user import ATTRS_LOWER as ACCOUNTING_ATTRS
from roost.core.accounting_user import lookup
from roost.daemons.schedd import runners
from roost.daemons.schedd.access import QueueRights
from roost.daemons.schedd.lifecycle import JobLifecycle
from roost.daemons.schedd.localuniverse import start_local
from roost.daemons.schedd.userlog import log_paths
from roost.eventlog import SubmitEvent
from roost.eventlog.events import Event
from roost.net.adwire import obj_to_ad
from roost.net.errors import RequestError, bad_request
from roost.net.server import Peer
from roost.universes import registry

log = logging.getLogger("roost.schedd")



class SubmitCalls:
    """Handlers of the submit commands."""

    def __init__(
        self,
        jobs: JobLifecycle,
        filesystem_domain: str,
        rights: QueueRights,
        *,
        ads_changed: Callable[[], None],
        reschedule: Callable[[], None],
        schedd_name: str = "",
        uid_domain: str = "",
    ) -> None:
        self.jobs = jobs
        self.schedd_name = schedd_name  # GlobalJobId = <schedd name>#<cluster>.<proc>#<queued at>
        self.uid_domain = uid_domain  # User = <owner>@<UID_DOMAIN>
        self.queue = jobs.queue
        self.filesystem_domain = filesystem_domain  # FILESYSTEM_DOMAIN, else this host
        self.rights = rights
        self._ads_changed = ads_changed
        self._reschedule = reschedule

    async def h_new_cluster(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        self.rights.user(peer, "NEW_CLUSTER")
        cid = self.queue.new_cluster_id()
        mine = peer.state.get("clusters")
        if mine is None:
            mine = peer.state["clusters"] = set()
            reserved = self.queue.reserved

            def release() -> None:
                # Reservations end with their connection (docs/protocol.md), as
                # HTCondor's NewCluster ends with its qmgmt connection.
                if mine:
                    log.debug("released clusters %s reserved by %s", sorted(mine), peer.address)
                reserved.difference_update(mine)
                mine.clear()

            peer.on_close(release)
        mine.add(cid)
        return {"cluster": cid}

    async def h_submit(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        self.rights.user(peer, "SUBMIT")
        cid = req["cluster"]
        if cid not in self.queue.reserved:
            raise bad_request(f"SUBMIT: cluster {cid} was not reserved with NEW_CLUSTER (or was already submitted)")
        count = await self._add_cluster(cid, dict(req["cluster_ad"]), req["procs"], peer)
        return {"cluster": cid, "count": count}

    async def _add_cluster(self, cid: int, cluster_ad: dict[str, Any], procs: list[dict[str, Any]],
                           peer: Peer) -> int:
        """Check a reserved cluster's ads, store it durably and start it moving; its proc count."""
        if not procs:
            raise bad_request("SUBMIT: no procs")
        user = self.rights.user(peer, "SUBMIT")
        _refuse_case_twins(cluster_ad, "the cluster ad")
        owner = cluster_ad.get("Owner")
        if owner is None:
            owner = user
        if not isinstance(owner, str) or not owner:
            raise bad_request("SUBMIT: the cluster ad has no Owner")
        self.rights.check_owner(user, owner, "SUBMIT")
        cluster_ad["Owner"] = owner
        # the schedd, not condor_submit, names the job's user and gives each job its
        # pool-wide id (HTCondor's qmgmt: ATTR_USER, NewProc's GlobalJobId)
        cluster_ad["User"] = f"{owner}@{self.uid_domain}" if self.uid_domain else owner
        # condor_submit's Requirements compare TARGET.FileSystemDomain with MY.FileSystemDomain
        # (should_transfer_files = NO / IF_NEEDED): the job carries this host's domain.
        cluster_ad.setdefault("FileSystemDomain", self.filesystem_domain)
        cmd = cluster_ad.get("Cmd", procs[0].get("Cmd"))
        universe = registry.for_job(cluster_ad.get)  # a container's image may say what to run
        if not isinstance(cmd, str) or (not cmd and (universe is None or universe.needs_cmd)):
            raise bad_request("SUBMIT: the job has no Cmd (executable)")
        obj_to_ad(cluster_ad)  # refuses bad expressions with BAD_REQUEST
        # whom the jobs' usage is charged to: the owner, unless policy allows (core.accounting_user)
        self.rights.check_accounting_user(user, owner, lookup(cluster_ad), "SUBMIT")
        _check_notify_user(cluster_ad, "the cluster ad")
        now = int(time.time())
        cluster_ad["ClusterId"] = cid
        cluster_ad.setdefault("QDate", now)
        cluster_ad.setdefault("EnteredCurrentStatus", now)
        cluster_ad.setdefault("JobStatus", jp.IDLE)
        if cluster_ad.get("JobStatus") not in (jp.IDLE, jp.HELD):
            cluster_ad["JobStatus"] = jp.IDLE
        _check_procs(procs, cluster_ad, owner, lambda d: self.rights.check_accounting_user(
            user, owner, lookup(d), "SUBMIT"))
        # each proc's GlobalJobId is <schedd>#<cluster>.<proc>#<qdate>: the queue makes it
        # from this template (no client's value stands: the schedd names its jobs)
        gjid = (f"{self.schedd_name}#{cid}.", f"#{now}")
        for d in procs:
            if "GlobalJobId" in d:
                del d["GlobalJobId"]
        cluster_ad.pop("GlobalJobId", None)
        peer.state.get("clusters", set()).discard(cid)
        ops = self.queue.add_cluster(cid, owner, cluster_ad, procs, gjid)
        pending: list[tuple[int, str, str]] = []
        pool_groups: list[tuple[list[Event], Any]] = []
        fresh = self.queue.clusters.get(cid)
        if fresh is not None and fresh.ad.get("DAGManNodesLog"):
            # a DAG node's submit event is how a restarted DAGMan knows its job exists:
            # it commits with the job (pending_events), so a schedd killed in between
            # still writes it at its next start and no node is submitted twice
            texts, pool_groups = self._submit_texts(fresh)
            pending = self.jobs.pending_event_rows(texts)
            ops += [("INSERT INTO pending_events (id, path, owner, text) VALUES (?, ?, ?, ?)",
                     (i, path, owner, text)) for i, path, text in pending]
        try:
            await self.jobs.commit(ops)
        except (sqlite3.Error, OSError) as e:
            # A full disk (or a failing one): nothing of the cluster is kept or runs; what
            # was accepted before is untouched in the file.
            self.queue.forget_cluster(cid)
            log.error("cluster %d not queued: the job queue %s cannot be written: %s", cid, self.queue.store.path, e)
            raise RequestError("QUEUE_UNWRITABLE", f"the schedd cannot store new jobs: {self.queue.store.path}: {e} "
                               "(nothing was queued; jobs already queued are safe)") from None
        cluster = self.queue.clusters.get(cid)
        if cluster is not None:
            if pending:
                if pool_groups:  # the same events, once committed
                    self.jobs.userlogs.to_pool_many(pool_groups)
                for _i, path, text in pending:
                    self.jobs.userlogs.write_text(path, text, cluster.owner)
                self.jobs.store.queue([("DELETE FROM pending_events WHERE id = ?", (i,)) for i, _p, _t in pending])
            else:
                self._log_submits(cluster)
            local = runners.beside_schedd(cluster.ad.get("JobUniverse"))
            grid = runners.grid_managed(cluster.ad.get("JobUniverse"))
            for job in list(cluster.procs.values() if local or grid else cluster.procs_naming("JobUniverse")):
                if job.status != jp.IDLE:
                    continue
                if local or runners.beside_schedd(job.get("JobUniverse")):
                    start_local(self.jobs, job)
                elif grid or runners.grid_managed(job.get("JobUniverse")):
                    self.jobs.idle_arrived(job)  # the grid manager's
            self._ads_changed()
            if not local:
                self._reschedule()
        log.info("cluster %d: %d jobs submitted by %s", cid, len(procs), owner)
        return len(procs)

    async def h_submit_text(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        """A whole submit description, parsed and expanded here for a local user.

        The fast path of ``roost submit``: the tool then needs neither the submit
        language nor the API, and one round trip replaces NEW_CLUSTER + SUBMIT.
        The schedd reads the user's include, item and input files, so it takes this
        path only when it has exactly the peer's rights (the same uid); otherwise it
        answers SUBMIT_LOCALLY and the tool parses and SUBMITs itself.
        """
        if peer.uid is None or peer.user is None or peer.uid != os.geteuid():
            raise RequestError("SUBMIT_LOCALLY", "SUBMIT_TEXT is served to the schedd's own user on its Unix socket")
        env, overrides, append = req.get("env") or {}, req.get("overrides") or {}, req.get("append") or []
        if any(type(v) is not str for v in (*env.values(), *overrides.values())) or any(
            type(v) is not str for v in append
        ):
            raise bad_request("SUBMIT_TEXT: env and overrides map names to strings, append is a list of strings")
        # lazy: the submit language loads with the first SUBMIT_TEXT, not at schedd start-up
        from roost.submit import SubmitError, parse_submit
        from roost.submit.queue import CommandNotAllowed
        from roost.submit.reading import PathChecks, file_size
        from roost.submit.wire import wire_cluster

        owner, qdate = peer.user, int(time.time())
        first = self.queue.new_cluster_id()

        empty: list[str] = []  # warnings of a description whose queue statements are all empty

        def expand(cluster_id: int) -> list[Any]:
            desc = parse_submit(req["text"], file=req.get("file"), cwd=req["cwd"], env=env, overrides=overrides,
                                append=append, file_size=file_size, stdin_text=None, check_path=PathChecks())
            got = desc.expand(cluster_id=cluster_id, qdate=qdate, owner=owner)
            if not got:
                empty[:] = [str(w) for w in desc.warnings]
            return got

        ids = [first]
        try:
            try:
                clusters = await asyncio.to_thread(expand, first)
            except CommandNotAllowed:
                # `queue ... from COMMAND |`, `include : COMMAND |`: the tool runs the command, not the schedd
                raise RequestError("SUBMIT_LOCALLY", "a command the description runs is run by the submitting tool"
                                   ) from None
            except SubmitError as e:
                raise RequestError("SUBMIT_ERROR", str(e)) from None
            ids += [self.queue.new_cluster_id() for _ in clusters[1:]]
            done: list[list[int]] = []
            for i, (cid, c) in enumerate(zip(ids, clusters)):
                if cid != c.cluster_id:  # another submit took an id in between: $(Cluster) must be the real one
                    c = (await asyncio.to_thread(expand, cid - i))[i]
                cluster_ad, procs = wire_cluster(c)
                done.append([cid, await self._add_cluster(cid, cluster_ad, procs, peer)])
        finally:
            self.queue.reserved.difference_update(ids)
        return {"clusters": done, "warnings": [str(w) for c in clusters for w in c.warnings] + empty}

    def _submit_texts(self, cluster: Any) -> tuple[dict[str, str], list[tuple[list[Event], Any]]]:
        """The submit events of a new cluster, formatted, by log path; and the same events
        for the pool's event log (written by the caller once the cluster is committed)."""
        host = f"<{self.jobs.host.address}>"
        now = time.time()
        by_path: dict[str, list[Event]] = {}
        get_by_path: dict[str, Any] = {}
        shared = log_paths(cluster.ad.get)
        notes = cluster.ad.get("SubmitEventNotes")
        userlogs = self.jobs.userlogs
        to_pool: list[tuple[list[Event], Any]] = []
        if not shared and userlogs.pool is None and not any(
                "UserLog" in (n := j.own_names()) or "DAGManNodesLog" in n
                for j in cluster.procs_naming("UserLog", "DAGManNodesLog")):
            return {}, to_pool  # no log to write to (a proc's own Iwd matters only beside a log)
        for job in cluster.procs.values():
            d = job.own_names()
            paths = log_paths(job.get) if d and ("UserLog" in d or "Iwd" in d or "DAGManNodesLog" in d) else shared
            mine = job.get("SubmitEventNotes") if d and "SubmitEventNotes" in d else notes
            event = SubmitEvent(cluster.id, job.proc, now, submit_host=host,
                                log_notes=mine if isinstance(mine, str) else "")
            if userlogs.pool is not None:
                to_pool.append(([event], job.get))
            for path in paths:
                by_path.setdefault(path, []).append(event)
                get_by_path.setdefault(path, job.get)
        texts = {path: userlogs.formatter(get_by_path[path], path).format_many(events)
                 for path, events in by_path.items()}
        return texts, to_pool

    def _log_submits(self, cluster: Any) -> None:
        texts, pool_groups = self._submit_texts(cluster)
        if pool_groups:  # the whole cluster in one write, not one per job
            self.jobs.userlogs.to_pool_many(pool_groups)
        for path, text in texts.items():
            self.jobs.userlogs.write_text(path, text, cluster.owner)


def _check_procs(procs: list[Any], cluster_ad: dict[str, Any], owner: str,
                 check_accounting: Callable[[dict[str, Any]], None]) -> None:
    """Check each proc's differences (in place: a proc's attribute takes the cluster's
    spelling). What depends only on which attributes a proc names (case twins, spelling,
    NotifyUser, accounting) is decided once per set of names: a million procs of a
    ``queue N`` name the same one or two, so each costs a lookup and its values' checks."""
    checked: set[str] = set()
    seen: set[int] | None = None  # ProcIds so far, once they stop increasing
    last = -1
    spelling = {k.lower(): k for k in cluster_ad}
    shapes: dict[tuple[str, ...], tuple[bool, bool, bool, bool]] = {}
    user = cluster_ad["User"]
    plain = spelling.get("procid", "ProcId") == "ProcId"  # a lone ProcId needs no respelling
    for i, raw in enumerate(procs):
        if type(raw) is not dict and not isinstance(raw, dict):
            raise bad_request(f"SUBMIT: proc {i} is not an ad")
        if len(raw) == 1 and plain and seen is None and "ProcId" in raw:  # the usual proc: its ProcId only
            p = raw["ProcId"]
            if type(p) is int and p > last:
                last = p
                continue
        names = tuple(raw)
        shape = shapes.get(names)
        if shape is None:
            if len(shapes) > 1000:
                shapes.clear()
            _refuse_case_twins(raw, f"proc {i}")
            if not all(isinstance(k, str) for k in names):
                raise bad_request(f"SUBMIT: proc {i} has a name that is not a string")
            # a proc's attribute under the cluster's spelling: "owner" in a proc must not
            # stand beside the cluster's "Owner" (the startd would read the proc's)
            respell = any(spelling.get(k.lower(), k) != k for k in names)
            lowered = {k.lower() for k in names}
            shape = shapes[names] = (respell, "notifyuser" in lowered, not lowered.isdisjoint(ACCOUNTING_ATTRS),
                                     "owner" in lowered or "user" in lowered)
        respell, notify, accounting, who = shape
        d = raw
        if respell:
            d = procs[i] = {spelling.get(k.lower(), k): v for k, v in raw.items()}
        p = d.get("ProcId", i)
        if type(p) is not int or p < 0:
            raise bad_request(f"SUBMIT: proc {i} has a bad or repeated ProcId {p!r}")
        if seen is None and p > last:
            last = p  # increasing ProcIds repeat none
        else:
            if seen is None:
                seen = {q.get("ProcId", j) for j, q in enumerate(procs[:i])}
            if p in seen:
                raise bad_request(f"SUBMIT: proc {i} has a bad or repeated ProcId {p!r}")
            seen.add(p)
        if who:
            if "Owner" in d and d["Owner"] != owner:
                raise bad_request(f"SUBMIT: proc {p} has a different Owner")
            if "User" in d and d["User"] != user:
                raise bad_request(f"SUBMIT: proc {p} has a different User")
        if notify:
            _check_notify_user(d, f"proc {p}")
        if accounting:
            check_accounting(d)
        for k, v in d.items():
            t = type(v)
            if t is str:
                if v.startswith("/Expr(") and v not in checked:
                    obj_to_ad({k: v})
                    checked.add(v)
            elif t is dict or t is list:
                obj_to_ad({k: v})


def _refuse_case_twins(ad: dict[str, Any], what: str) -> None:
    """BAD_REQUEST for an ad naming one attribute twice in different case (``Owner`` and
    ``owner``): ClassAd names ignore case, so the schedd's checks, which read one
    spelling, and the startd's ClassAd, which keeps the last, would see different jobs."""
    seen: dict[str, str] = {}
    for k in ad:
        if not isinstance(k, str):
            continue
        first = seen.setdefault(k.lower(), k)
        if first != k:
            raise bad_request(f"SUBMIT: {what} names {first} twice ({first}, {k}): attribute names ignore case")


def _check_notify_user(ad: dict[str, Any], where: str) -> None:
    """Refuse a NotifyUser that is no plain mail address (root gives it to MAIL); a
    client may SUBMIT ads that ``roost submit`` never checked."""
    for k, v in ad.items():
        if k.lower() == "notifyuser":
            # lazy: the submit package loads with the first SUBMIT_TEXT, not at schedd start-up
            from roost.submit.mailaddr import notify_user_problem

            problem = notify_user_problem(v)
            if problem is not None:
                raise bad_request(f"SUBMIT: {where}: NotifyUser: {problem}")


__all__ = ["SubmitCalls"]
