"""Fair share on a real pool of four static one-CPU slots: two submitters (accounting
names, so one Unix user can play both) share equally at equal priority factors, the
better factor gets more, and `roost userprio` shows and changes priorities."""

from __future__ import annotations

import json
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest
from poolkit import log_tails, start_pool, stop_pool

pytest.importorskip("roost.core.fairshare")

STATIC4 = """
SLOT_TYPE_1 = cpus=1, memory=512
SLOT_TYPE_1_PARTITIONABLE = False
NUM_SLOTS_TYPE_1 = 4
CLAIM_WORKLIFE = 0
"""


@pytest.fixture
def pool4():
    home = Path(tempfile.mkdtemp(prefix="roost-fs-", dir="/tmp"))
    p = start_pool(home, extra_config=STATIC4)
    try:
        yield p
    finally:
        stop_pool(p)


@pytest.fixture
def tmp_path(jobdir: Path) -> Path:
    """Where these jobs live: root's jobs run as nobody and enter their Iwd (no file
    transfer) as nobody, and pytest's own tmp_path sits under a root-only directory."""
    return jobdir


def submit_held(pool, tmp_path: Path, user: str, n: int, seconds: int = 3) -> int:
    d = tmp_path / user
    d.mkdir(exist_ok=True)
    res = pool.submit(f"executable = /bin/sleep\narguments = {seconds}\naccounting_group_user = {user}\n"
                      f"hold = true\nshould_transfer_files = NO\nqueue {n}\n", d)
    return res.clusters[0][0]


def submitter_host(pool, user: str, timeout: float = 15) -> str:
    """The domain part of ``user``'s Submitter ad name, once the schedd has advertised it."""
    deadline = time.monotonic() + timeout
    while True:
        c = pool.collector()
        try:
            names = [s["Name"] for s in c.query_objs("Submitter", projection=["Name"])]
        finally:
            c.close()
        for name in names:
            if name.startswith(user + "@"):
                return name.split("@", 1)[1]
        assert time.monotonic() < deadline, f"no Submitter ad for {user}: {names}"
        time.sleep(0.1)


def running_by_user(pool) -> Counter:
    s = pool.schedd()
    try:
        jobs = s.query_objs(constraint="JobStatus == 2", projection=["AcctGroupUser", "JobStatus"])
    finally:
        s.close()
    return Counter(j.get("AcctGroupUser") for j in jobs)


def release_all(pool) -> None:
    s = pool.schedd()
    try:
        s.act("release", constraint="true")
    finally:
        s.close()


def sample(pool, seconds: float) -> list[Counter]:
    out, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline:
        c = running_by_user(pool)
        if sum(c.values()) == 4:
            out.append(c)
        time.sleep(0.2)  # time is the point: who runs, sampled over ``seconds``
    return out


def test_equal_factors_share_equally(pool4, tmp_path):
    submit_held(pool4, tmp_path, "alice", 12)
    submit_held(pool4, tmp_path, "bob", 12)
    release_all(pool4)
    full = sample(pool4, 8)
    assert full, "the pool never ran four jobs at once\n" + log_tails(pool4.home)
    shares = Counter((c["alice"], c["bob"]) for c in full)
    assert shares.most_common(1)[0][0] == (2, 2), shares
    out = pool4.roost("userprio", check=True).stdout
    assert "alice@" in out and "bob@" in out and "Effective" in out
    users = {u["name"].split("@")[0]: u for u in json.loads(pool4.roost("userprio", "-json", check=True).stdout)}
    assert users["alice"]["resources_used"] + users["bob"]["resources_used"] > 0


def test_better_factor_gets_more(pool4, tmp_path):
    host = None
    submit_held(pool4, tmp_path, "alice", 12)
    submit_held(pool4, tmp_path, "bob", 12)
    host = submitter_host(pool4, "bob")
    done = pool4.roost("userprio", "-setfactor", f"bob@{host}", "10000", check=True)
    assert "10000" in done.stdout
    users = {u["name"]: u for u in json.loads(pool4.roost("userprio", "-all", "-json", check=True).stdout)}
    assert users[f"bob@{host}"]["factor"] == 10000
    release_all(pool4)
    full = sample(pool4, 8)
    assert full, "the pool never ran four jobs at once\n" + log_tails(pool4.home)
    alice = sorted(c["alice"] for c in full)
    assert alice[len(alice) // 2] >= 3, [dict(c) for c in full]


def _startd_preempts() -> bool:
    try:
        from roost.core import (
            ownerpolicy,  # noqa: F401
            preemption,  # noqa: F401
        )
    except ImportError:
        return False
    src = Path(__file__).resolve().parents[2] / "src" / "roost" / "daemons" / "startd" / "daemon.py"
    return "PreemptClaimId" in src.read_text()


@pytest.mark.parametrize("allowed", [True, False])
def test_better_user_preempts_worse_one(tmp_path, allowed):
    if not _startd_preempts():
        pytest.skip("the startd does not offer PreemptClaimId yet (issue 5 startd side)")
    home = Path(tempfile.mkdtemp(prefix="roost-fp-", dir="/tmp"))
    cfg = STATIC4 + f"PREEMPTION_REQUIREMENTS = {'True' if allowed else 'False'}\n" + \
        "NEGOTIATOR_CONSIDER_PREEMPTION = True\nMAXJOBRETIREMENTTIME = 0\n"
    pool = start_pool(home, extra_config=cfg)
    try:
        d = tmp_path / "bob"
        d.mkdir()
        pool.submit("executable = /bin/sleep\narguments = 300\naccounting_group_user = bob\n"
                    "should_transfer_files = NO\nqueue 4\n", d)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and running_by_user(pool)["bob"] < 4:
            time.sleep(0.2)
        assert running_by_user(pool)["bob"] == 4
        host = submitter_host(pool, "bob")
        pool.roost("userprio", "-setfactor", f"bob@{host}", "100000", check=True)
        submit_held(pool, tmp_path, "alice", 2, seconds=300)
        mark = pool.log_mark("negotiator")
        release_all(pool)
        if allowed:
            deadline = time.monotonic() + 30
            got = Counter()
            while time.monotonic() < deadline:
                got = running_by_user(pool)
                if got["alice"] >= 1:
                    break
                time.sleep(0.3)
            assert got["alice"] >= 1, (dict(got), log_tails(home))
        else:
            # a cycle that saw alice waiting matched nothing for her (no preemption), and
            # nothing changed after it (before: 30 s of watching for a start that never comes)
            cycle = pool.wait_cycle(after=mark).string
            assert "), 0 matches in " in cycle, cycle
            got = running_by_user(pool)
            assert got["alice"] == 0 and got["bob"] == 4, dict(got)
    finally:
        stop_pool(pool)


def test_userprio_resetall_on_a_live_pool(pool4):
    """condor_userprio's -resetall: every user's usage back to zero, priority to 0.5."""
    host = pool4.roost("userprio", "-all", "-json", check=True)  # the negotiator answers
    assert json.loads(host.stdout) is not None
    out = pool4.roost("userprio", "-resetall", check=True).stdout
    assert "all users" in out
    for u in json.loads(pool4.roost("userprio", "-all", "-json", check=True).stdout):
        assert u["usage"] == 0 and u["priority"] == 0.5
    # condor_userprio -setprio: the real priority, aged from then on
    out = pool4.roost("userprio", "-setprio", "zed@nowhere", "250", check=True).stdout
    assert out.strip() == "The real priority of zed@nowhere was set to 250"
    zed = {u["name"]: u for u in json.loads(pool4.roost("userprio", "-all", "-json", check=True).stdout)}["zed@nowhere"]
    assert zed["priority"] == pytest.approx(250, rel=1e-3) and zed["effective"] == pytest.approx(250 * zed["factor"], rel=1e-3)
    bad = pool4.roost("userprio", "-setprio", "zed@nowhere", "high")
    assert bad.returncode == 2 and "the priority must be a number" in bad.stderr


def test_concurrency_limit_holds_across_cycles(tmp_path):
    """LICENSE_LIMIT = 1: of three license jobs on four free slots only one runs at a
    time, though each cycle sees the others' claimed slots, not its own promises."""
    home = Path(tempfile.mkdtemp(prefix="roost-fc-", dir="/tmp"))
    # periodic cycles while a license job runs: each must count the claimed slot's license
    pool = start_pool(home, extra_config=STATIC4 + "LICENSE_LIMIT = 1\nNEGOTIATOR_INTERVAL = 0.3\n")
    try:
        d = tmp_path / "lic"
        d.mkdir()
        r = pool.submit("executable = /bin/sleep\narguments = 2\nconcurrency_limits = license\n"
                        "should_transfer_files = NO\nqueue 3\n", d)
        most, deadline = 0, time.monotonic() + 60
        while time.monotonic() < deadline:
            s = pool.schedd()
            try:
                jobs = s.query_objs(projection=["JobStatus"])
            finally:
                s.close()
            most = max(most, sum(1 for j in jobs if j.get("JobStatus") == 2))
            if not jobs:
                break
            time.sleep(0.1)
        assert not jobs, "the license jobs did not all finish\n" + log_tails(home)
        assert most == 1
        assert pool.wait(r.job_ids(), timeout=5)["done"] == 3
    finally:
        stop_pool(pool)


def test_analyze_names_a_full_concurrency_limit_and_a_full_group(tmp_path):
    """`q -analyze` on jobs that free slots could run but the negotiator holds back:
    a license in use elsewhere, and an accounting group at its quota."""
    home = Path(tempfile.mkdtemp(prefix="roost-fa-", dir="/tmp"))
    pool = start_pool(home, extra_config=STATIC4 + "LICENSE_LIMIT = 1\nGROUP_NAMES = physics\n"
                                                   "GROUP_QUOTA_physics = 1\n")
    try:
        d = tmp_path / "lic"
        d.mkdir()
        lic = pool.submit("executable = /bin/sleep\narguments = 120\nconcurrency_limits = license\n"
                          "should_transfer_files = NO\nqueue 2\n", d)
        grp = pool.submit("executable = /bin/sleep\narguments = 120\naccounting_group = physics\n"
                          "should_transfer_files = NO\nqueue 2\n", d)
        first = [lic.job_ids()[0], grp.job_ids()[0]]
        for jid in first:
            pool.wait_for(jid, lambda j: j.get("JobStatus") == 2, timeout=60, what="running")
        waiting = {lic.job_ids()[1]: "wait: concurrency limit LICENSE: 1 of 1 in use, the job needs 1",
                   grp.job_ids()[1]: "wait: group physics holds 1 of the 1 it may hold now (quota 1, no surplus)"}
        for jid, want in waiting.items():
            assert pool.job(jid)["JobStatus"] == 1
            out = pool.roost("q", "-analyze", jid, check=True).stdout
            suggestion = next(ln for ln in out.splitlines() if ln.startswith("Suggestion:"))
            assert suggestion.startswith("Suggestion: " + want), out
            assert "available to run your job" in out  # two slots are free: they are not the reason
        out = pool.roost("q", "-better-analyze", lic.job_ids()[1], check=True).stdout
        assert "Concurrency limits:\n  LICENSE: 1 of 1 in use, the job needs 1  <- full" in out
    finally:
        stop_pool(pool)


def test_updown_pool_runs_jobs_and_shows_its_submit_machine(tmp_path):
    """NEGOTIATOR_ALGORITHM = updown: jobs still run, and `roost userprio` shows the
    schedd's schedule index going up while it holds slots."""
    home = Path(tempfile.mkdtemp(prefix="roost-ud-", dir="/tmp"))
    pool = start_pool(home, extra_config=STATIC4 + "NEGOTIATOR_ALGORITHM = updown\nUPDOWN_UP_RATE = 3600\n"
                                                   "NEGOTIATOR_INTERVAL = 0.3\n")
    try:
        d = tmp_path / "ud"
        d.mkdir()
        r = pool.submit("executable = /bin/sleep\narguments = 1\nshould_transfer_files = NO\nqueue 3\n", d)
        assert pool.wait(r.job_ids(), timeout=60)["done"] == 3, log_tails(home)
        out = pool.roost("userprio", check=True).stdout
        lines = out.splitlines()
        head = lines.index(next(ln for ln in lines if ln.startswith("Submit machine (Up-Down)")))
        station, index = lines[head + 2].split()
        assert float(index) > 0  # one weight-second held = 1 at this rate; three jobs held more
    finally:
        stop_pool(pool)
