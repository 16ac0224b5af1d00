"""``Schedd`` and ``SubmitResult`` with htcondor2's methods, names and return types,
over :class:`roost.api.Schedd` (one connection per object, opened on first use)."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from roost.api.schedd import Expr
from roost.api.schedd import Schedd as ApiSchedd
from roost.api.spooling import ATTRS, fetch_job, spool_job
from roost.classad import ClassAd, ExprTree
from roost.core.spooling import HOLD_LINES, LEAVE_IN_QUEUE, SpoolError
from roost.htcondor2.enums import JobAction, QueryOpt, TransactionFlag
from roost.htcondor2.errors import HTCondorException, as_htcondor
from roost.htcondor2.submit import Submit
from roost.net.adwire import obj_to_ad
from roost.vocabulary import JobStatus

#: JobAction -> roost's ACT action
ACTIONS = {JobAction.Hold: "hold", JobAction.Release: "release", JobAction.Remove: "remove",
           JobAction.RemoveX: "remove", JobAction.Suspend: "suspend", JobAction.Continue: "continue",
           JobAction.Vacate: "vacate", JobAction.VacateFast: "vacate_fast"}
_JOB_ID = re.compile(r"\d+(\.\d+)?")

DefaultItemData = object()


class SubmitResult:
    """What :meth:`Schedd.submit` made: one cluster of ``num_procs()`` jobs."""

    def __init__(self, clusterID: int, procID: int, num_procs: int, clusterAd: ClassAd | None,
                 spooled_proc_ads: Any = None) -> None:
        self._cluster = clusterID
        self._first_proc = procID
        self._num_procs = num_procs
        self._clusterad = clusterAd if clusterAd is not None else ClassAd()

    def cluster(self) -> int:
        return self._cluster

    def __int__(self) -> int:  # htcondor2: int(schedd.submit(...)) is the cluster id
        return self._cluster

    def clusterad(self) -> ClassAd:
        """The cluster ad as submitted (what every job of the cluster shares)."""
        return self._clusterad

    def first_proc(self) -> int:
        return self._first_proc

    def num_procs(self) -> int:
        return self._num_procs

    def __str__(self) -> str:
        return f"Submitted {self._num_procs} jobs into cluster {self._cluster},{self._first_proc}"

    def __repr__(self) -> str:
        return f"SubmitResult(cluster={self._cluster}, first_proc={self._first_proc}, num_procs={self._num_procs})"


def job_selection(job_spec: Any) -> dict[str, Any]:
    """htcondor2's ``job_spec`` (``"C"``, ``"C.P"``, a list of those, an int cluster,
    a constraint string or ExprTree) -> roost's ``ids``/``constraint`` arguments."""
    if isinstance(job_spec, bool):
        raise TypeError("The job_spec must be list of strings, a string, an int, or an ExprTree.")
    if isinstance(job_spec, list):
        if not all(isinstance(i, str) for i in job_spec):
            raise TypeError("All elements of the job_spec list must be strings.")
        if not all(_JOB_ID.fullmatch(i) for i in job_spec):
            raise ValueError("All elements of the job_spec list must be strings of the form clusterID[.procID]")
        return {"ids": list(job_spec)}
    if isinstance(job_spec, int):
        return {"ids": [str(job_spec)]}
    if isinstance(job_spec, ExprTree):
        return {"constraint": str(job_spec)}
    if isinstance(job_spec, str):
        if _JOB_ID.fullmatch(job_spec.strip()):
            return {"ids": [job_spec.strip()]}
        try:
            ExprTree(job_spec)
        except Exception:
            raise ValueError("The job_spec string must be a clusterID[.procID] or the string form of "
                             "an ExprTree.") from None
        return {"constraint": job_spec}
    raise TypeError("The job_spec must be list of strings, a string, an int, or an ExprTree.")


def _since_expr(since: Any) -> ExprTree | None:
    if since is None:
        return None
    if isinstance(since, bool):
        raise TypeError("since must be an int, string, or ExprTree")
    if isinstance(since, int):
        return ExprTree(f"ClusterId == {since}")
    if isinstance(since, ExprTree):
        return since
    if isinstance(since, str):
        m = re.fullmatch(r"(\d+)(?:\.(\d+))?", since.strip())
        if m:
            text = f"ClusterId == {m[1]}" + (f" && ProcId == {m[2]}" if m[2] else "")
            return ExprTree(text)
        return ExprTree(since)
    raise TypeError("since must be an int, string, or ExprTree")


class Schedd:
    """The schedd of the pool at $ROOST_HOME, or the one a ``location`` ad (from
    :meth:`Collector.locate`) names by its ``MyAddress``."""

    def __init__(self, location: ClassAd | None = None) -> None:
        address = None
        if location is not None:
            address = location.get("MyAddress")
            if not isinstance(address, str) or not address:
                raise HTCondorException("the location ad has no MyAddress")
        self._api = ApiSchedd(address=address)
        self._location = location

    @property
    def api(self) -> ApiSchedd:
        """roost's own client of this schedd (submit_file, wait, tail ...)."""
        return self._api

    def __repr__(self) -> str:
        return f"Schedd({self._api.address or self._api.home_dir})"

    # -- querying ---------------------------------------------------------------------

    def query(self, constraint: str | ExprTree = "True", projection: list[str] | None = None,
              callback: Callable[[ClassAd], Any] | None = None, limit: int = -1,
              opts: QueryOpt = QueryOpt.Default) -> list[ClassAd]:
        """The jobs in the queue matching ``constraint``, as ClassAds (only the
        ``projection`` attributes, plus ClusterId and ProcId, when given)."""
        text = str(constraint).strip()
        with as_htcondor():
            objs = self._api.query_objs(None if text.lower() in ("", "true") else text, list(projection or []),
                                        limit=None if limit is None or limit < 0 else int(limit))
        ads = [obj_to_ad(o) for o in objs]
        if callback is None:
            return ads
        return [r for r in (callback(ad) for ad in ads) if r is not None]

    def history(self, constraint: str | ExprTree | None = None, projection: list[str] | None = None,
                match: int = -1, since: int | str | ExprTree | None = None) -> list[ClassAd]:
        """Jobs that have left the queue, most recently finished first, as ClassAds;
        ``since`` stops before the first one it matches (a cluster, a job id, an expression)."""
        stop = _since_expr(since)
        text = None if constraint is None else str(constraint).strip() or None
        with as_htcondor():
            objs = self._api.history(text, list(projection or []) or None,
                                     match=None if stop is not None or match is None or match < 0 else int(match))
        out: list[ClassAd] = []
        for o in objs:
            ad = obj_to_ad(o)
            if stop is not None and stop.eval(ad) is True:
                break
            out.append(ad)
            if match is not None and match >= 0 and len(out) >= match:
                break
        return out

    def jobEpochHistory(self, constraint: str | ExprTree | None = None, projection: list[str] | None = None,
                        match: int = -1, since: int | str | ExprTree | None = None, **kwargs: Any) -> list[ClassAd]:
        """Not kept by roost: raises HTCondorException (roost records one ad per job)."""
        raise HTCondorException("roost keeps no job epoch history (one history record per job)")

    # -- acting -----------------------------------------------------------------------

    def act(self, action: JobAction, job_spec: list[str] | str | ExprTree | int,
            reason: str | None = None) -> ClassAd:
        """Hold, release, remove, suspend, continue or vacate jobs; a ClassAd of counts
        (``TotalSuccess`` is the number of jobs acted on)."""
        if not isinstance(action, JobAction):
            raise TypeError("action must be a JobAction")
        name = ACTIONS[action]
        if isinstance(reason, tuple):
            reason = reason[0]
        with as_htcondor():
            got = self._api.act(name, reason=reason or "Python-initiated action", **job_selection(job_spec))
        n = int(got.get("count", 0))
        result = ClassAd()
        for key in ("TotalError", "TotalNotFound", "TotalBadStatus", "TotalAlreadyDone",
                    "TotalPermissionDenied"):
            result[key] = 0
        result["TotalSuccess"] = n
        result["TotalJobAds"] = n
        result["TotalChangedAds"] = 1 if n else 0
        return result

    def edit(self, job_spec: list[str] | str | ExprTree | int, attr: str, value: str | ExprTree,
             flags: TransactionFlag = TransactionFlag.Default) -> int:
        """Set ``attr`` to ``value`` (ClassAd expression text, as in condor_qedit: a
        string value needs its quotes) in the jobs ``job_spec`` names; how many changed."""
        if not isinstance(flags, TransactionFlag):
            raise TypeError("flags must be a TransactionFlag")
        text = str(value)
        with as_htcondor():
            got = self._api.edit(attrs={attr: Expr(text)}, **job_selection(job_spec))
        return int(got.get("count", 0))

    # -- submitting -------------------------------------------------------------------

    def submit(self, description: Submit, count: int = 0, spool: bool = False,
               itemdata: Iterator[str] | Iterator[dict[str, str]] | None = DefaultItemData,  # type: ignore[assignment]
               queue: str | None = None) -> SubmitResult:
        """Submit one cluster: ``count`` jobs per item (0: the queue statement's count),
        the items ``itemdata`` gives (else the description's queue statement's), or
        the queue statement ``queue`` in place of the description's."""
        if not isinstance(description, Submit):
            raise TypeError("description must be an htcondor2.Submit object")
        if queue is not None and (itemdata is not DefaultItemData or count):
            raise ValueError("queue and count/itemdata are mutually exclusive")
        if spool:
            # held with HoldReasonCode 16 and condor_submit -spool's leave_in_queue, until spool()
            description = Submit(str(description))
            for line in HOLD_LINES:
                key, _, value = line.partition(" = ")
                description[key] = value
            if description.get("leave_in_queue") is None:
                description["leave_in_queue"] = LEAVE_IN_QUEUE
        if queue is not None:
            description = Submit(str(description))
            description.setQArgs(queue)
        items = None if itemdata is DefaultItemData or itemdata is None else itemdata
        if itemdata is None:
            description = Submit(str(description), queue="1")
        desc = description.description(count, items)
        with as_htcondor():
            result = self._api.submit(desc)
        for text in result.warnings:  # as htcondor2 passes condor_submit's warnings on
            warnings.warn(text, stacklevel=2)
        if not result.clusters:
            raise HTCondorException("the description queued no jobs")
        cluster, n = result.clusters[0]
        ad = obj_to_ad(result.cluster_ads[0]) if result.cluster_ads else None
        return SubmitResult(cluster, 0, n, ad)

    def spool(self, result: SubmitResult) -> None:
        """Send the input files of the jobs ``submit(..., spool=True)`` queued; the schedd
        releases each job once its input is in (roost.api.spooling)."""
        if not isinstance(result, SubmitResult):
            raise TypeError("result must be a SubmitResult")
        with as_htcondor():
            ads = self._api.query_objs(f"ClusterId == {int(result.cluster())}", ATTRS)
            try:
                for ad in sorted(ads, key=lambda a: a.get("ProcId", 0)):
                    spool_job(self._api, ad)
            except SpoolError as e:
                raise HTCondorException(str(e)) from e

    def retrieve(self, job_spec: Any) -> None:
        """Fetch the output of the completed spooled jobs ``job_spec`` names into their
        submit directories (condor_transfer_data); each then leaves the queue."""
        with as_htcondor():
            ads = [a for a in self._api.query_objs(projection=ATTRS, **job_selection(job_spec))
                   if a.get("StageInFinish") is not None and a.get("JobStatus") == JobStatus.COMPLETED]
            for ad in sorted(ads, key=lambda a: (a.get("ClusterId", 0), a.get("ProcId", 0))):
                fetch_job(self._api, ad)

    def reschedule(self) -> None:
        """Nothing to do: roost's schedd asks the negotiator for a cycle (RESCHEDULE) itself."""

    def close(self) -> None:
        self._api.close()

    def __enter__(self) -> Schedd:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
