"""``/metrics``: the pool in Prometheus's text format, from the dashboard's snapshot.

Built with ``prometheus_client`` as a custom collector over the latest
:class:`~roost.web.snapshot.Snapshot`, so a scrape costs no query of the pool
and every figure in one scrape comes from one look at it:

- ``roost_jobs{status,user}``: jobs in the queues by HTCondor status name and owner
- ``roost_slots{state}``, ``roost_slot_cpus{state}``: slot ads and their CPUs by state
- ``roost_negotiation_cycle_seconds``: the last negotiation cycle's duration;
  ``roost_negotiation_cycles_total``, ``roost_negotiation_cycle_matches``
- ``roost_job_submit_rate``, ``roost_job_completion_rate``: jobs per second over
  the five minutes before the snapshot (from ``QDate`` and completion times the
  pool keeps)
- ``roost_user_priority{user}``: effective user priorities
- ``roost_flock_slots_lent{pool}``, ``roost_flock_slots_borrowed{pool}``,
  ``roost_flock_given_slot_hours{pool}``, ``roost_flock_received_slot_hours{pool}``,
  ``roost_flock_reciprocity{pool}``: each connected pool (docs/flocking.md)
- ``roost_web_snapshot_seconds``, ``roost_web_snapshot_age_seconds``: what reading
  the pool cost and how old the figures are
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from roost.web.snapshot import STATUS, PoolView


class PoolCollector:
    """A prometheus_client collector reading the view's current snapshot."""

    def __init__(self, view: PoolView) -> None:
        self.view = view

    def collect(self) -> Iterator[Metric]:
        snap = self.view.current()
        now = time.time()
        jobs = GaugeMetricFamily("roost_jobs", "Jobs in the queues by status and user",
                                 labels=["status", "user"])
        for user, counts in sorted(snap.by_user().items()):
            for status in STATUS.values():
                jobs.add_metric([status, user], counts.get(status, 0))
        yield jobs
        slots = GaugeMetricFamily("roost_slots", "Slots by state", labels=["state"])
        cpus = GaugeMetricFamily("roost_slot_cpus", "CPUs of slots by state", labels=["state"])
        per_cpu: dict[str, float] = {}
        for s in snap.slots:
            c = s.get("Cpus")
            state = str(s.get("State") or "Unknown")
            per_cpu[state] = per_cpu.get(state, 0.0) + (float(c) if type(c) in (int, float) else 0.0)
        for state, n in sorted(snap.slot_states().items()):
            slots.add_metric([state], n)
            cpus.add_metric([state], per_cpu.get(state, 0.0))
        yield slots
        yield cpus
        cycles: dict[str, Any] = snap.cycles or {}
        last = (cycles.get("last") or [{}])[0] if isinstance(cycles.get("last"), list) else {}
        if last:
            yield GaugeMetricFamily("roost_negotiation_cycle_seconds",
                                    "Duration of the last negotiation cycle", value=float(last.get("duration") or 0))
            yield GaugeMetricFamily("roost_negotiation_cycle_matches",
                                    "Matches made by the last negotiation cycle", value=float(last.get("matches") or 0))
        if "cycles" in cycles:
            yield CounterMetricFamily("roost_negotiation_cycles", "Negotiation cycles since the negotiator started",
                                      value=float(cycles.get("cycles") or 0))
        sub, done = snap.rate
        yield GaugeMetricFamily("roost_job_submit_rate", "Jobs submitted per second over the last 5 minutes",
                                value=sub)
        yield GaugeMetricFamily("roost_job_completion_rate", "Jobs completed per second over the last 5 minutes",
                                value=done)
        prio = GaugeMetricFamily("roost_user_priority", "Effective user priority", labels=["user"])
        for u in snap.users or ():
            if isinstance(u.get("name"), str) and type(u.get("effective")) in (int, float):
                prio.add_metric([u["name"]], float(u["effective"]))
        yield prio
        for key, name, text in (("lent", "roost_flock_slots_lent", "Our slots the pool's jobs hold now"),
                                ("borrowed", "roost_flock_slots_borrowed", "Our jobs running in the pool now"),
                                ("given_hours", "roost_flock_given_slot_hours", "Slot-hours given to the pool (fading)"),
                                ("received_hours", "roost_flock_received_slot_hours",
                                 "Slot-hours received from the pool (fading)"),
                                ("reciprocity", "roost_flock_reciprocity", "1 for an even exchange, towards 0 one-sided")):
            fam = GaugeMetricFamily(name, text, labels=["pool"])
            for p in snap.flock:
                if isinstance(p.get("pool"), str) and type(p.get(key)) in (int, float):
                    fam.add_metric([p["pool"]], float(p[key]))
            yield fam
        yield GaugeMetricFamily("roost_web_snapshot_seconds", "Seconds the last read of the pool took",
                                value=snap.took)
        yield GaugeMetricFamily("roost_web_snapshot_age_seconds", "Age of the figures",
                                value=max(0.0, now - snap.taken) if snap.taken else 0.0)


def registry(view: PoolView) -> CollectorRegistry:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(PoolCollector(view))
    return reg


def exposition(reg: CollectorRegistry) -> bytes:
    return generate_latest(reg)
