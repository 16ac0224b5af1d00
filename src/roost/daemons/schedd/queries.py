"""What tools ask of the queue: QUERY_JOBS (roost q, history), ACT (rm, hold, release)
and WAIT_JOBS (roost wait).

Written for queues of 100,000 jobs: a listing without a constraint copies the
compact form (cluster ad once, each proc's differences), a constraint is evaluated
once per cluster and status unless it reads what procs vary in, and an action on
many jobs shares its commits. WAIT_JOBS reports only what is durable and logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from itertools import islice
from operator import attrgetter
from typing import Any

from roost.classad import ClassAd, ExprTree
from roost.classad.ast import Literal
from roost.classad.errors import ClassAdSyntaxError
from roost.classad.parser import parse_expr
from roost.classad.unparse import unparse
from roost.core import jobpolicy as jp
from roost.core.accounting_user import ATTRS_LOWER as ACCOUNTING_ATTRS
from roost.core.accounting_user import with_edits
from roost.core.jobstates import USER_ACTIONS
from roost.daemons.schedd.access import QueueRights
from roost.daemons.schedd.actions import ACT_ACTIONS
from roost.daemons.schedd.constraintmatch import matching, matching_clusters
from roost.daemons.schedd.jobqueue import Job
from roost.daemons.schedd.lifecycle import JobLifecycle
from roost.daemons.security import peer_user
from roost.net.adwire import obj_to_ad
from roost.net.errors import RequestError, bad_request, excerpt
from roost.net.server import Peer
from roost.vocabulary import JobStatus

log = logging.getLogger("roost.schedd")

_ATTR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z").match
# what names a job, its owner or its state: set by the schedd alone (condor_qedit's list)
_PROTECTED = {a.lower() for a in ("ClusterId", "ProcId", "Owner", "User", "JobStatus", "LastJobStatus",
                                  "MyType", "TargetType", "GlobalJobId", "QDate", "JobUniverse",
                                  "EnteredCurrentStatus", "NumJobStarts", "JobCurrentStartDate",
                                  "JobStartDate", "CompletionDate", "ExitCode", "ExitBySignal",
                                  "ExitSignal", "RemoteHost", "ClaimId", "PublicClaimId",
                                  "DAGManJobId", "HoldReasonCode", "HoldReasonSubCode", "Scheduler",
                                  "DedicatedSchedulerReason", "StageInStart", "StageInFinish",
                                  "StageOutStart", "StageOutFinish",
                                  # the grid manager's record of the remote job: pointed elsewhere,
                                  # an rm would cancel (scancel runs as the schedd) another's job
                                  "GridJobId", "GridJobSubmitName", "NumGridSubmits")}
#: a -spool job's submitted paths (SUBMIT_Iwd, SUBMIT_Out, ...): the schedd's record of where
#: its output goes home, so not a user's to point elsewhere after the schedd wrote it
_PROTECTED_PREFIX = "submit_"

#: ACT and EDIT let others in after each this many jobs looked at (~10-50 ms of work)
MATCH_TICK = 10000
WAIT_PROGRESS_S = 0.05  # WAIT_JOBS: least time between a first change and a progress answer


def edit_value(cmd: str, name: Any, text: Any) -> Any:
    """A job attribute a user (``EDIT``) or a running job (Chirp's set_job_attr) sets, from
    ClassAd expression text, in the queue's wire form; refused when the attribute is the
    schedd's own (names the job, its owner or its state) or the text is no expression."""
    if not isinstance(name, str) or not _ATTR_NAME(name):
        raise bad_request(f"{cmd}: {name!r} is not an attribute name")
    if name.lower() in _PROTECTED or name.lower().startswith(_PROTECTED_PREFIX):
        raise RequestError("DENIED", f"{cmd}: {name} is the schedd's to set, not a user's")
    if not isinstance(text, str):
        raise bad_request(f"{cmd}: the value of {name} must be ClassAd expression text")
    try:
        expr = parse_expr(text)
    except ClassAdSyntaxError as e:
        raise bad_request(f"{cmd}: {name} = {excerpt(text)}: {e}") from None
    if isinstance(expr, Literal) and type(expr.value) is str and expr.value.startswith("/Expr("):
        raise bad_request(f"{cmd}: {name}: a string may not start with /Expr( (the queue's expression form)")
    if name.lower() == "notifyuser":  # given to the MAIL program by root: one plain address
        # lazy: the submit package loads with the first SUBMIT_TEXT, not at schedd start-up
        from roost.submit.mailaddr import notify_user_problem

        problem = notify_user_problem(expr.value if isinstance(expr, Literal) else None)
        if problem is not None:
            raise bad_request(f"{cmd}: NotifyUser = {text[:80]}: {problem}")
    if isinstance(expr, Literal) and type(expr.value) in (int, float, bool, str):
        return expr.value
    return "/Expr(" + unparse(expr) + ")/"


class QueueCalls:
    """Handlers of the tools' queue commands."""

    def __init__(self, jobs: JobLifecycle, rights: QueueRights) -> None:
        self.jobs = jobs
        self.rights = rights
        self.queue = jobs.queue
        self.store = jobs.store
        self._constraint_cache: dict[str, Any] = {}
        #: called after an EDIT of JobPrio (claim reuse caches who has priorities)
        self.on_prio_edit: Any = None

    # -- QUERY_JOBS -----------------------------------------------------------------------
    def _constraint(self, text: str) -> Any:
        got = self._constraint_cache.get(text)
        if got is None:
            try:
                expr = ExprTree(text)
            except Exception as e:
                raise bad_request(f"bad constraint {excerpt(text)!r}: {e}") from None
            refs = _references(expr)
            got = (expr, refs)
            if len(self._constraint_cache) > 256:
                self._constraint_cache.clear()
            self._constraint_cache[text] = got
        return got

    def _ids_arg(self, ids: list[str] | None) -> list[str] | None:
        if ids is None:
            return None
        for t in ids:
            try:
                self.queue.parse_id(t)
            except ValueError:
                raise bad_request(f"bad job id {t!r}: want C or C.P") from None
        return ids

    def _my_name(self, req: dict[str, Any], peer: Peer) -> str | None:
        """``my_jobs`` (condor_q's MyJobs): the caller's own jobs, unless the caller is
        unauthenticated or a queue super user, who see every job, as HTCondor's schedd
        decides. The owner it settled on, or None for all jobs."""
        if not req.get("my_jobs") or req.get("owner"):
            return None
        user = peer_user(peer, self.rights.uid_domain)
        return None if user is None or self.rights.is_super(user) else user

    async def h_query_jobs(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        my_name = self._my_name(req, peer)
        owner = my_name or req.get("owner")
        mine = {"my_name": my_name} if my_name else {}
        if req.get("totals"):
            if req.get("constraint") or req.get("ids"):
                counts: dict[str, int] = {n: 0 for n in jp.STATUS_NAMES.values()}
                for job in self._matching(req, owner):
                    counts[jp.STATUS_NAMES.get(job.status, _IDLE_WORD)] += 1
                counts["Total"] = sum(counts.values())
                return {"totals": counts, **mine}
            return {"totals": self.queue.totals_named(owner), **mine}
        limit = req.get("limit")
        projection = req.get("projection")
        clusters: dict[str, Any] = {}
        jobs: list[list[Any]] = []
        plain = not (req.get("constraint") or req.get("ids"))
        if req.get("batch") and projection and limit is None and not req.get("history"):
            source = None if plain else self._matching(req, owner)
            return {**batch_summary(self.queue, owner, projection, source), **mine}
        if plain:
            self._list_all(owner, limit, clusters, jobs, projection)
        for job in () if plain else self._matching(req, owner):
            if limit is not None and len(jobs) >= limit:
                break
            key = str(job.cluster.id)
            if key not in clusters:
                cad = job.cluster.ad
                clusters[key] = {k: cad[k] for k in projection if k in cad} if projection else cad
            d = job.diff_obj()
            if projection:
                d = {k: d[k] for k in projection if k in d}
                d["ProcId"] = job.proc
            jobs.append([job.cluster.id, job.proc, d])
        if req.get("history") and (limit is None or len(jobs) < limit):
            await self.store.barrier()
            await self._add_history(req, owner, jobs, limit, projection)
        return {"clusters": clusters, "jobs": jobs, **mine}

    def _list_all(
        self,
        owner: str | None,
        limit: int | None,
        clusters: dict[str, Any],
        jobs: list[list[Any]],
        projection: list[str] | None = None,
    ) -> None:
        """The listing without a constraint (``roost q``), written for speed: 100,000
        jobs in ~0.1 s. A projection is applied to each cluster ad once and to each
        proc's differences (names compared without case, as ClassAds do)."""
        append = jobs.append
        left = limit if limit is not None else -1
        wanted = {n.lower() for n in projection} if projection else None
        want_status = wanted is None or "jobstatus" in wanted
        want_gjid = wanted is None or "globaljobid" in wanted
        lowered: dict[str, str] = {}
        for cluster in self.queue.clusters.values():
            if owner is not None and cluster.owner != owner:
                continue
            if left == 0:
                return
            cid = cluster.id
            cad = cluster.ad
            clusters[str(cid)] = cad if wanted is None else {k: v for k, v in cad.items() if k.lower() in wanted}
            cstatus = cad.get("JobStatus") if want_status else None
            g = cluster.gjid if want_gjid else None
            if g is not None:  # each proc's GlobalJobId, made from the cluster's template
                g0, g1 = g
                for p, job in cluster.procs.items():
                    if left == 0:
                        return
                    left -= 1
                    out = {"ProcId": p}
                    d = job.own()
                    if d is not None:
                        if wanted is None:
                            out.update(d)
                        else:
                            for k, v in d.items():
                                lk = lowered.get(k)
                                if lk is None:
                                    lk = lowered[k] = k.lower()
                                if lk in wanted:
                                    out[k] = v
                    if "GlobalJobId" not in out:
                        out["GlobalJobId"] = f"{g0}{p}{g1}"
                    if want_status and job.status != cstatus:
                        out["JobStatus"] = job.status
                    append([cid, p, out])
                continue
            for p, job in cluster.procs.items():
                if left == 0:
                    return
                left -= 1
                d = job.own()
                if d is not None and wanted is not None:
                    kept = {}
                    for k, v in d.items():
                        lk = lowered.get(k)
                        if lk is None:
                            lk = lowered[k] = k.lower()
                        if lk in wanted:
                            kept[k] = v
                    d = kept or None
                if not want_status:
                    append([cid, p, {"ProcId": p, **d} if d else {"ProcId": p}])
                elif d is None:
                    if job.status == cstatus:
                        append([cid, p, {"ProcId": p}])
                    else:
                        append([cid, p, {"ProcId": p, "JobStatus": job.status}])
                else:
                    out = {"ProcId": p}
                    out.update(d)
                    if job.status != cstatus:
                        out["JobStatus"] = job.status
                    append([cid, p, out])

    async def _matching_now(self, req: dict[str, Any], owner: str | None) -> list[Job]:
        """``_matching`` as a list, letting go of the event loop every ``MATCH_TICK`` jobs
        looked at: an ACT or EDIT over a constraint that reads every one of 100,000 procs
        takes seconds, and the schedd answers others meanwhile. (``queue.select`` copies
        each cluster's procs before it walks them, so changes meanwhile are safe.)"""
        out: list[Job] = []
        text = req.get("constraint")  # a literal (`rm -all` sends "true"): asked once, not per job
        every = _literal(self._constraint(text)[0]) if text else True
        if every is not None:  # every job selected (or none): taken a tick at a time
            jobs = self.queue.select(self._ids_arg(req.get("ids")), owner) if every else iter(())
            while len(part := list(islice(jobs, MATCH_TICK))) == MATCH_TICK:
                out += part
                await asyncio.sleep(0)
            return out + part
        if text and req.get("ids") is None:  # cluster by cluster (constraintmatch.py)
            expr, refs = self._constraint(text)
            clusters = [c for c in self.queue.clusters.values() if owner is None or c.owner == owner]
            for part in matching_clusters(clusters, expr, refs, tick=MATCH_TICK):
                if part is None:
                    await asyncio.sleep(0)
                else:
                    out += part
            return out
        for job in self._matching(req, owner, tick=MATCH_TICK):
            if job is None:
                await asyncio.sleep(0)
            else:
                out.append(job)
        return out

    def _matching(self, req: dict[str, Any], owner: str | None, tick: int = 0) -> Any:
        """The jobs ``req`` names (ids, owner, constraint); with ``tick``, a None after each
        ``tick`` jobs looked at (a moment for ``_matching_now`` to let others in)."""
        ids = self._ids_arg(req.get("ids"))
        constraint = req.get("constraint")
        if not constraint:
            looked = 0
            for job in self.queue.select(ids, owner):
                looked += 1
                if tick and looked % tick == 0:
                    yield None
                yield job
            return
        expr, refs = self._constraint(constraint)
        yield from matching(self.queue.select(ids, owner), expr, refs, tick)

    async def _add_history(
        self, req: dict[str, Any], owner: str | None, jobs: list[list[Any]], limit: int | None, projection: list[str] | None
    ) -> None:
        ids = req.get("ids")
        clusters = None
        want: set[tuple[int, int | None]] | None = None
        if ids:
            want = {self.queue.parse_id(t) for t in ids}
            clusters = sorted({c for c, _ in want})
        expr, refs = self._constraint(req["constraint"]) if req.get("constraint") else (None, None)
        # with a limit, rows are read a page at a time (newest first) until enough match:
        # `history -limit 10` reads ~256 rows, not all 100,000, whatever the constraint
        page = None if limit is None else max(256, 4 * (limit - len(jobs)))
        offset = 0
        while limit is None or len(jobs) < limit:
            rows = await self.store.history(owner, clusters, page, offset)
            for cid, proc, ad in rows:
                if limit is not None and len(jobs) >= limit:
                    break
                if want is not None and (cid, proc) not in want and (cid, None) not in want:
                    continue
                if expr is not None and not _accepts(expr, refs, ad):
                    continue
                if projection:
                    ad = {k: ad[k] for k in projection if k in ad}
                    ad["ProcId"] = proc
                jobs.append([cid, proc, ad])
            if page is None or len(rows) < page:
                return
            offset += page
            page = min(page * 2, 65536)

    # -- ACT ------------------------------------------------------------------------------
    async def h_act(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        user = self.rights.user(peer, "ACT")
        action = req["action"]
        if action not in ACT_ACTIONS:
            raise bad_request(f"ACT: unknown action {action!r} ({', '.join(ACT_ACTIONS)})")
        if req.get("ids") is None and not req.get("constraint") and req.get("owner") is None:
            raise bad_request("ACT: name the jobs with ids, constraint or owner")
        owner = req.get("owner")
        who = user
        restrict = None if self.rights.is_super(user) else user
        reason = req.get("reason")
        matched = await self._matching_now(req, owner)
        # another user's jobs are named back (they are in `roost q` for all to see), so
        # the tool can say "Permission denied" rather than "not found", as condor_rm does
        allowed = USER_ACTIONS.get(action, ())  # (not a call per job: rm -all of 100,000)
        denied = [job.id for job in matched if job.owner != restrict] if restrict is not None else []
        mine = [job for job in matched if job.owner == restrict] if denied else matched
        jobs = [job for job in mine if job.status in allowed]
        # condor_rm's per-job results (HTCondor's action_result_t codes): 1 done, 2 not
        # found, 3 bad status, 4 already done, 5 permission denied
        results: dict[str, int] = dict.fromkeys(denied, AR_DENIED)
        if len(jobs) < len(mine):
            for job in mine:
                if job.status not in allowed:
                    results[job.id] = _refusal(action, job.status)
        for t in req.get("ids") or ():
            if "." in t:
                c, p = self.queue.parse_id(t)
                results.setdefault(f"{c}.{p}", AR_NOT_FOUND)

        # HTCondor's default reasons, word for word (condor_q -hold shows them; scripts match them)
        async def act(job: Job) -> bool:
            if action in ("suspend", "continue"):
                return await self.jobs.suspend_running(job, action == "suspend")
            return self.jobs.vacate_running(job, fast=action == "vacate_fast")

        done: list[str] = []
        changed: list[Job] = []
        # in bulk (bulk.py): 100,000 idle jobs are ~20 commits of a few statements each
        if action == "remove":
            changed = await self.jobs.remove_many(jobs, reason or f"via condor_rm (by user {who})")
        elif action == "hold":
            changed = await self.jobs.hold_many(jobs, reason or f"via condor_hold (by user {who})", jp.HOLD_USER)
        elif action == "release":
            changed = await self.jobs.release_many(jobs, reason or f"via condor_release (by user {who})")
        else:
            # A thousand at a time, concurrently: they share commits; answered once all are durable.
            for i in range(0, len(jobs), 1000):
                chunk = jobs[i : i + 1000]
                changed += [job for job, ok in zip(chunk, await asyncio.gather(*(act(j) for j in chunk))) if ok]
        # the ids made in C, not a property call each (rm -all of 100,000)
        done = list(map(_JOB_ID.format, map(_CLUSTER_ID, changed), map(_PROC, changed)))
        removed = changed if action == "remove" else []
        if action == "remove":
            # OtherJobRemoveRequirements (a DAGMan job's: its node jobs) go with it, even
            # when its manager is not there to remove them (held, or killed meanwhile)
            # (a set beside the list: `in` over the list made rm -all of 100,000 jobs quadratic)
            seen: set[str] | None = None
            others = _other_removals(removed)
            for text in others:
                if isinstance(text, str) and text.strip():
                    try:
                        got = await self.h_act({"action": "remove", "constraint": text, "reason": reason}, peer)
                    except RequestError as e:
                        log.warning("OtherJobRemoveRequirements %r: %s", text, e)
                        continue
                    if seen is None:
                        seen = set(done)
                    for j in got["ids"]:
                        if j not in seen:
                            seen.add(j)
                            done.append(j)
        results, totals = _act_results(results, done, jobs, len(changed), req)
        out: dict[str, Any] = {"count": len(done), "denied": denied, "totals": totals,
                               "queue_size": self.queue.totals_named(None).get("Total", 0),
                               "super": restrict is None}
        if req.get("list_ids") is not False:  # (a tool that prints a count asks for none: rm -all of 100,000)
            out["ids"] = done
        if req.get("results") or any("." in t for t in req.get("ids") or ()):
            out["results"] = results  # per job only when asked, or for job ids (a cluster may be huge)
        # jobs named by id that the action left as they were (the peer's own), with their
        # JobStatus, so a tool can say "Job 3.0 not running to be suspended" as HTCondor's
        # do; only for ids, and a bounded number, so `release -all` stays a short answer
        unchanged: dict[str, int] = {}
        if req.get("ids"):
            kept = set(done)
            for job in matched:
                if len(unchanged) >= 1000:
                    break
                if (restrict is None or job.owner == restrict) and job.id not in kept:
                    unchanged[job.id] = job.status
        out["unchanged"] = unchanged
        return out

    # -- EDIT (condor_qedit) ----------------------------------------------------------------
    async def h_edit(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        """Set attributes of jobs the peer owns (a queue super user: any job) to ClassAd
        expressions given as text; the attributes that name a job or its state are the
        schedd's own and are refused, as condor_qedit refuses them."""
        user = self.rights.user(peer, "EDIT")
        if req.get("ids") is None and not req.get("constraint") and req.get("owner") is None:
            raise bad_request("EDIT: name the jobs with ids, constraint or owner")
        attrs = req["attrs"]
        if not isinstance(attrs, dict) or not attrs:
            raise bad_request("EDIT: attrs must map attribute names to expressions")
        values: dict[str, Any] = {}
        for name, text in attrs.items():
            values[name] = edit_value("EDIT", name, text)
        restrict = None if self.rights.is_super(user) else user
        matched = await self._matching_now(req, req.get("owner"))
        denied = [job.id for job in matched if restrict is not None and job.owner != restrict]
        jobs = [job for job in matched if restrict is None or job.owner == restrict]
        if any(k.lower() in ACCOUNTING_ATTRS for k in values):  # condor_qedit AcctGroupUser / AccountingGroup
            for job in jobs:
                self.rights.check_accounting_user(user, job.owner, with_edits(values, job.get), "EDIT")
        # in bulk, as ACT (bulk.py): chunks of a few statements, one commit each
        done = [job.id for job in await self.jobs.edit_many(jobs, values)]
        if done and self.on_prio_edit is not None and any(n.lower() == "jobprio" for n in values):
            self.on_prio_edit()
        return {"count": len(done), "ids": done, "denied": denied}

    # -- WAIT_JOBS ------------------------------------------------------------------------
    async def _wait_state(self, ids: list[str]) -> tuple[int, int, dict[str, int], set[int]]:
        counts: dict[str, int] = {}
        done = total = 0
        cids: set[int] = set()
        missing_clusters: list[int] = []
        for text in ids:
            cid, proc = self.queue.parse_id(text)
            cids.add(cid)
            cluster = self.queue.clusters.get(cid)
            jobs = []
            one = cluster.job(proc) if cluster is not None and proc is not None else None
            if one is not None:
                jobs = [one]
            if proc is None and cluster is not None:
                for status, n in cluster.counts.items():
                    if n:
                        name = jp.STATUS_NAMES.get(status, _IDLE_WORD)
                        counts[name] = counts.get(name, 0) + n
                        total += n
                        if status in (jp.COMPLETED, jp.REMOVED):
                            done += n
                jobs = []
            for job in jobs:
                total += 1
                name = jp.STATUS_NAMES.get(job.status, _IDLE_WORD)
                counts[name] = counts.get(name, 0) + 1
                if job.status in (jp.COMPLETED, jp.REMOVED) and job.key not in self.jobs.done_unlogged:
                    done += 1
            if proc is not None and not jobs and cid < self.queue.next_cluster and cid not in self.queue.reserved:
                total += 1
                if (cid, proc) not in self.jobs.done_unlogged:
                    done += 1
                counts["Finished"] = counts.get("Finished", 0) + 1
            elif proc is None:
                done -= self.jobs.done_unlogged_by_cluster.get(cid, 0)
                if cluster is None and cid in self.queue.gone:
                    n = self.queue.gone[cid]
                    total += n
                    done += n
                    counts["Finished"] = counts.get("Finished", 0) + n
                elif cluster is None:
                    missing_clusters.append(cid)
                else:
                    total += cluster.finished
                    done += cluster.finished
                    if cluster.finished:
                        counts["Finished"] = counts.get("Finished", 0) + cluster.finished
        if missing_clusters:
            rows = await self.store.history(None, missing_clusters)
            total += len(rows)
            done += len(rows)
            if rows:
                counts["Finished"] = counts.get("Finished", 0) + len(rows)
        return done, total, counts, cids

    async def h_wait_jobs(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        ids = self._ids_arg(req["ids"]) or []
        timeout = float(req.get("timeout") or 0.0)
        cids = {self.queue.parse_id(t)[0] for t in ids}
        await self.jobs.settled(cids)  # report nothing that is not durable (and logged) yet
        done, total, counts, cids = await self._wait_state(ids)
        log.debug("WAIT_JOBS %s: %d of %d done", ids[:3], done, total)
        loop = asyncio.get_running_loop()
        waiters = self.jobs.waiters
        deadline = loop.time() + min(timeout, 3600.0)
        changed_once = False
        first_change = 0.0
        while done < total and loop.time() < deadline:
            # The first change answers, but not before WAIT_PROGRESS_S has passed since
            # it: progress comes at most ~20 times a second per waiter, while the change
            # that finishes the last job answers at once.
            if changed_once:
                until = min(deadline, first_change + WAIT_PROGRESS_S)
                if loop.time() >= until:
                    break
            else:
                until = deadline
            fut: asyncio.Future[None] = loop.create_future()
            for cid in cids:
                waiters.setdefault(cid, set()).add(fut)
            try:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(fut, max(0.0, until - loop.time()))
            finally:
                for cid in cids:
                    s = waiters.get(cid)
                    if s is not None:
                        s.discard(fut)
                        if not s:
                            del waiters[cid]
            if not fut.done():
                if changed_once:
                    await self.jobs.settled(cids)
                    done, total, counts, _ = await self._wait_state(ids)
                break  # timed out (or the progress window closed)
            if not changed_once:
                changed_once = True
                first_change = loop.time()
            await self.jobs.settled(cids)
            done, total, counts, _ = await self._wait_state(ids)
        return {"done": done, "total": total, "counts": counts}


def batch_summary(queue: Any, owner: str | None, projection: list[str], jobs: Any = None) -> dict[str, Any]:
    """QUERY_JOBS ``batch``: what condor_q's batch view needs, without a row per job. The
    procs whose own differences name a projected attribute (a proc's own Owner or
    JobBatchName moves it to another batch) come as jobs; every other proc is counted,
    per cluster and status, with the cluster's first and last ProcId. ``jobs``: the
    matching procs (a constraint or ids); None: every job (of ``owner``)."""
    wanted = {n.lower() for n in projection} - {"procid", "jobstatus", "clusterid"}
    every = "globaljobid" in wanted  # each proc's own (made from ProcId): every proc is listed
    lowered: dict[str, str] = {}
    clusters: dict[str, Any] = {}
    listed: list[list[Any]] = []
    counts: list[list[Any]] = []

    shaped: dict[tuple[str, ...], bool] = {}  # a shape's names: whether one is wanted

    def own(job: Job) -> bool:
        d = job.own_names()
        if not d:
            return every
        if type(d) is tuple:
            hit = shaped.get(d)
            if hit is None:
                hit = shaped[d] = any(k.lower() in wanted for k in d)
            return hit
        for k in d:
            lk = lowered.get(k)
            if lk is None:
                lk = lowered[k] = k.lower()
            if lk in wanted:
                return True
        return False

    def project(cad: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in cad.items() if k.lower() in wanted or k.lower() == "jobstatus"}

    def listed_job(job: Job) -> list[Any]:
        d = job.diff_obj()
        out = {k: v for k, v in d.items() if k.lower() in wanted or k in ("ProcId", "JobStatus")}
        return [job.cluster.id, job.proc, out]

    if jobs is None:
        for cluster in queue.clusters.values():
            if (owner is not None and cluster.owner != owner) or not cluster.size():
                continue
            clusters[str(cluster.id)] = project(cluster.ad)
            by_status = dict(cluster.counts)
            if every or cluster.any_own():
                for job in cluster.procs.values() if every else cluster.with_own(wanted):
                    if own(job):
                        listed.append(listed_job(job))
                        by_status[job.status] -= 1
            left = {str(st): n for st, n in by_status.items() if n > 0}
            if left:  # (plain procs stay ranges: first and last asked of the cluster)
                counts.append([cluster.id, left, cluster.first_proc(), cluster.last_proc()])
        return {"clusters": clusters, "jobs": listed, "counts": counts}
    per: dict[int, list[Any]] = {}
    for job in jobs:
        c = job.cluster
        key = str(c.id)
        if key not in clusters:
            clusters[key] = project(c.ad)
        if own(job):
            listed.append(listed_job(job))
            continue
        entry = per.get(c.id)
        if entry is None:
            entry = per[c.id] = [c.id, {}, job.proc, job.proc]
            counts.append(entry)
        st = str(job.status)
        entry[1][st] = entry[1].get(st, 0) + 1
        if job.proc < entry[2]:
            entry[2] = job.proc
        if job.proc > entry[3]:
            entry[3] = job.proc
    return {"clusters": clusters, "jobs": listed, "counts": counts}


def _act_results(results: dict[str, int], done: list[str], jobs: list[Job], changed: int,
                 req: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
    """An ACT's per-job results (``results``: those not done, so far) and their totals;
    when every job named was done (``done`` holds each once) and no one asked for the
    per-job results, no dict of 100,000 entries is made to count them."""
    totals: dict[str, int] = {}
    if results or changed < len(jobs) or req.get("results"):
        for j in done:
            results[j] = AR_SUCCESS
        if changed < len(jobs):  # the action failed on some of ``jobs``
            for job in jobs:
                results.setdefault(job.id, AR_DENIED)  # HTCondor's word for that too
        for code in results.values():
            totals[str(code)] = totals.get(str(code), 0) + 1
    elif done:
        results = dict.fromkeys(done, AR_SUCCESS) if any("." in t for t in req.get("ids") or ()) else {}
        totals[str(AR_SUCCESS)] = len(done)
    return results, totals


def _literal(expr: Any) -> bool | None:
    """A constraint that is a literal: whether it holds (for every job alike); None else."""
    if not isinstance(getattr(expr, "node", None), Literal):
        return None
    try:
        return expr.eval(ClassAd()) is True
    except Exception:
        return False


def _other_removals(removed: list[Job]) -> set[Any]:
    """The ``OtherJobRemoveRequirements`` of ``removed``: each cluster's read once, a
    proc's own only where it has one (not a lookup per job of 100,000)."""
    out: set[Any] = set()
    clusters: set[int] = set()
    name = "OtherJobRemoveRequirements"
    for job in removed:
        d = job._diff  # (Job.own_names, inline: a compact proc's are its cluster's shape's)
        if d is not None and name in (job.cluster.shape_names if type(d) is tuple else d):
            out.add(job.get(name))
        elif job.cluster.id not in clusters:
            clusters.add(job.cluster.id)
            out.add(job.cluster.ad.get(name))
    return out


def _accepts(expr: Any, refs: set[str] | None, ad: dict[str, Any]) -> bool:
    """Whether a wire-form ad satisfies a constraint. When every attribute the
    constraint reads is a literal in the ad, only those are made into a ClassAd (a
    history query reads 100,000 ads: parsing each whole would take seconds)."""
    try:
        if refs is not None:
            small: dict[str, Any] = {}
            for k, v in ad.items():
                if k.lower() in refs:
                    if type(v) is str and v.startswith("/Expr("):
                        small = None  # type: ignore[assignment]
                        break
                    small[k] = v
            if small is not None:
                return expr.eval(obj_to_ad(small)) is True
        return expr.eval(obj_to_ad(ad)) is True
    except Exception:
        return False


def _references(expr: Any) -> set[str] | None:
    """Lower-cased attribute names ``expr`` reads; None if unknown (then evaluate per job)."""
    try:
        return {r.lower().split(".")[-1] for r in ClassAd().externalRefs(expr)} | {"jobstatus"}
    except Exception:
        return None


__all__ = ["QueueCalls"]


AR_SUCCESS, AR_NOT_FOUND, AR_BAD_STATUS, AR_ALREADY_DONE, AR_DENIED = 1, 2, 3, 4, 5
_JOB_ID = "{0}.{1}"  # Job.id
_CLUSTER_ID = attrgetter("cluster.id")
_PROC = attrgetter("proc")
_IDLE_WORD = JobStatus.WORDS[JobStatus.IDLE]  # where a job has a status of no name


def _refusal(action: str, status: int) -> int:
    """The result code HTCondor's schedd gives a job an action does not apply to."""
    if action == "remove":
        return AR_ALREADY_DONE if status == JobStatus.REMOVED else AR_BAD_STATUS
    if action == "hold":
        return AR_ALREADY_DONE if status == JobStatus.HELD else AR_DENIED if status in (JobStatus.REMOVED, JobStatus.COMPLETED) else AR_BAD_STATUS
    return AR_BAD_STATUS
