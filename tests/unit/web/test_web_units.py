"""The dashboard's pure parts: summarizing a queue, throughput buckets and rates, the
metrics it exports (and that the Grafana example only asks for those), the token
header it accepts. Against the real pool: tests/integration/test_web.py."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from roost.web.metrics import exposition, registry
from roost.web.server import HttpError, bearer_token
from roost.web.snapshot import Job, PoolView, Snapshot, jobs_of

ROOT = Path(__file__).resolve().parents[3]
NOW = 1_700_000_000


def job(cluster: int, proc: int, owner: str, status: int, qdate: int, since: int = 0) -> Job:
    return Job("s", cluster, proc, owner, status, qdate, "", "/bin/true", "", since, 1.0, "")


def snapshot() -> Snapshot:
    jobs = [job(1, p, "alice", 1, NOW - 30) for p in range(3)] + [
        job(2, 0, "bob", 2, NOW - 4000), job(2, 1, "bob", 5, NOW - 4000), job(3, 0, "bob", 4, NOW - 200, NOW - 100)]
    snap = Snapshot(taken=NOW, jobs=jobs, slots=[
        {"Name": "slot1@a", "State": "Claimed", "Cpus": 2}, {"Name": "slot2@a", "State": "Unclaimed", "Cpus": 1},
        {"Name": "slot1@b", "State": "Claimed", "Cpus": 4}])
    # finished and gone from the queue: one completed 10 min ago, one removed 2 min ago
    snap.finished = {("s", 4, 0): (NOW - 600, 4, NOW - 700), ("s", 5, 0): (NOW - 120, 3, NOW - 130),
                     ("s", 3, 0): (NOW - 100, 4, NOW - 200)}  # also still queued: counted once
    snap.rate = snap.rates(NOW)
    snap.users = [{"name": "alice@d", "effective": 0.5}, {"name": "bob@d", "effective": 12.0}]
    snap.cycles = {"cycles": 7, "last": [{"duration": 0.25, "matches": 3}]}
    return snap


def test_summaries_per_user_and_slot_state() -> None:
    snap = snapshot()
    assert snap.by_user() == {"alice": {"idle": 3}, "bob": {"running": 1, "held": 1, "completed": 1}}
    assert snap.slot_states() == {"Claimed": 2, "Unclaimed": 1}


def test_throughput_buckets_and_rates() -> None:
    snap = snapshot()
    t = snap.throughput(NOW)
    assert len(t["completed"]) == 60 and t["start"] == NOW - 3600
    # 3.0 once (queued, and in the history answer too), 4.0 from history
    assert sum(t["completed"]) == 2
    assert sum(t["removed"]) == 1
    # submitted in the hour: 3 of alice, 3.0, and 4.0, 5.0 from history (2.x is older)
    assert sum(t["submitted"]) == 6
    sub, done = snap.rate
    assert sub == pytest.approx(5 / 300)  # alice's 3, 3.0, 5.0 in the last 5 minutes
    assert done == pytest.approx(1 / 300)  # 3.0 (4.0 finished 10 minutes ago)


def test_compact_query_answer_becomes_jobs() -> None:
    raw = {"clusters": {"7": {"Owner": "carol", "JobStatus": 1, "QDate": 5, "Cmd": "/x", "RequestCpus": 2}},
           "jobs": [[7, 0, {"ProcId": 0}], [7, 1, {"ProcId": 1, "JobStatus": 2, "RemoteHost": "slot1@h"}]]}
    a, b = list(jobs_of("s", raw))
    assert (a.id, a.owner, a.status, a.cpus, a.host) == ("7.0", "carol", 1, 2.0, "")
    assert (b.id, b.status, b.host) == ("7.1", 2, "slot1@h")


def _families(view: PoolView) -> dict[str, list]:
    text = exposition(registry(view)).decode()
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def test_metrics_from_a_snapshot() -> None:
    view = PoolView("/nonexistent")
    view.snapshot = snapshot()
    view.snapshot.taken = time.time()  # fresh: no refresh is started
    fams = _families(view)
    jobs = {(s.labels["user"], s.labels["status"]): s.value for s in fams["roost_jobs"]}
    assert jobs[("alice", "idle")] == 3 and jobs[("bob", "held")] == 1 and jobs[("alice", "running")] == 0
    assert {s.labels["state"]: s.value for s in fams["roost_slots"]} == {"Claimed": 2, "Unclaimed": 1}
    assert {s.labels["state"]: s.value for s in fams["roost_slot_cpus"]} == {"Claimed": 6, "Unclaimed": 1}
    assert fams["roost_negotiation_cycle_seconds"][0].value == 0.25
    assert fams["roost_negotiation_cycles"][0].name == "roost_negotiation_cycles_total"
    assert fams["roost_negotiation_cycles"][0].value == 7
    assert fams["roost_job_submit_rate"][0].value == pytest.approx(5 / 300)
    assert {s.labels["user"]: s.value for s in fams["roost_user_priority"]} == {"alice@d": 0.5, "bob@d": 12.0}


def test_grafana_example_asks_only_for_exported_metrics() -> None:
    view = PoolView("/nonexistent")
    view.snapshot = snapshot()
    view.snapshot.taken = time.time()
    exported = {s.name for samples in _families(view).values() for s in samples}
    dash = json.loads((ROOT / "contrib" / "grafana" / "roost-dashboard.json").read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    used = {m for e in exprs for m in re.findall(r"\broost_[a-z_]+", e)}
    assert used and used <= exported, used - exported


@pytest.mark.parametrize("header", [None, "", "Bearer", "Basic dXNlcjpwdw==", "Bearer not-a-jwt",
                                    "Bearer a.b", "Bearer a.b.c d"])
def test_actions_need_a_bearer_token(header: str | None) -> None:
    with pytest.raises(HttpError) as e:
        bearer_token(header)
    assert e.value.status == 401


def test_bearer_token_is_taken_as_sent() -> None:
    assert bearer_token("Bearer eyJh.eyJp.c2ln") == "eyJh.eyJp.c2ln"
    assert bearer_token("bearer  eyJh.eyJp.c2ln ") == "eyJh.eyJp.c2ln"


def test_flock_metrics_per_connected_pool() -> None:
    view = PoolView("/nonexistent")
    view.snapshot = snapshot()
    view.snapshot.taken = time.time()
    assert _families(view)["roost_flock_slots_lent"] == []  # no connected pool: no samples
    view.snapshot.flock = [{"pool": "b", "direction": "both", "lent": 3, "borrowed": 1, "given_hours": 2.5,
                            "received_hours": 5.0, "reciprocity": 0.5}]
    fams = _families(view)
    assert {s.labels["pool"]: s.value for s in fams["roost_flock_slots_lent"]} == {"b": 3}
    assert fams["roost_flock_slots_borrowed"][0].value == 1
    assert fams["roost_flock_given_slot_hours"][0].value == 2.5
    assert fams["roost_flock_received_slot_hours"][0].value == 5.0
    assert fams["roost_flock_reciprocity"][0].value == 0.5
