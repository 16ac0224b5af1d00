"""Three pools of a flock in network namespaces (issue 29, docs/flocking.md).

Pool A (``a.test``: a central manager that submits, one execute host of 2 cores)
flocks to B then C (``FLOCK_TO`` in that order). B lends to A only ``group_physics``
jobs, at most one slot at a time (``users = group_physics; share = 1``); C lends to
A on no condition. B's central manager also submits, so B's own work is seen to go on.
The test that kills C's central manager runs last.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator

import pytest
from flockpools import (
    DONE,
    IDLE,
    Pools,
    PoolSpec,
    ads,
    flock,
    foreign_running,
    ran_on,
    running_on,
    submit,
    until,
    work,
)
from netns import Network, unavailable

A_CONF = ("FLOCK_TO = {b}, {c}\nFLOCK_AGREEMENTS = b, c\n"
          "FLOCK_AGREEMENT_b = collector = {b}; direction = send; domain = b.test\n"
          "FLOCK_AGREEMENT_c = collector = {c}; direction = send; domain = c.test\n")
B_CONF = "FLOCK_AGREEMENTS = a\nFLOCK_AGREEMENT_a = direction = take; domain = a.test; users = group_physics; share = 1\n"
C_CONF = "FLOCK_AGREEMENTS = a\nFLOCK_AGREEMENT_a = direction = take; domain = a.test\n"
PHYSICS = "accounting_group = group_physics\nrequest_cpus = 1\n"


@pytest.fixture(scope="module")
def pools() -> Iterator[Pools]:
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    with Network() as net, flock(net, [
        PoolSpec("a", "cma", ["CentralManager", "Submit"], {"exa": ["Execute"]}, keyed=("exa",),
                 conf=lambda cms: A_CONF.format(**cms), sends_to=("b", "c")),
        PoolSpec("b", "cmb", ["CentralManager", "Submit"], {"exb": ["Execute"]}, keyed=("exb",),
                 conf=lambda cms: B_CONF),
        PoolSpec("c", "cmc", ["CentralManager"], {"exc": ["Execute"]}, keyed=("exc",),
                 conf=lambda cms: C_CONF),
    ]) as p:
        yield p


def _fill_home(pools: Pools, where, secs: float) -> str:  # noqa: ANN001
    """A's one execute host taken by a 2-core job: A's next jobs cannot run at home."""
    cma = pools["cma"]
    home = submit(cma, where, secs, extra="request_cpus = 2\n", name="home")
    until("the home job runs on exa", lambda: running_on(cma, home) == ["exa"], pools=pools)
    return home


def test_b_then_c_b_lends_only_its_users_and_only_its_share(pools: Pools) -> None:
    cma, cmb = pools["cma"], pools["cmb"]
    w = work(cma, "share")
    home = _fill_home(pools, w, 40)
    chem = submit(cma, w, 1, extra="accounting_group = group_chem\nrequest_cpus = 1\n", name="chem")
    physics = submit(cma, w, 5, n=3, extra=PHYSICS, name="physics")
    most_in_b, pools_seen = 0, set()
    deadline = time.monotonic() + 120
    while True:  # the share holds all along: count A's jobs running in B
        most_in_b = max(most_in_b, foreign_running(cmb, "a.test"))
        if not pools_seen:
            run = cma.roost("q", "-run", physics, check=False).stdout
            if "POOL" in run:
                pools_seen = {ln.split()[-2] for ln in run.splitlines() if ln.split()[:1] and
                              ln.split()[0].startswith(physics + ".")}
        rows = ads(cma, physics, "JobStatus") + ads(cma, chem, "JobStatus")
        if len(rows) == 4 and all(r[0] == DONE for r in rows):
            break
        assert time.monotonic() < deadline, pools.log_tails()
        time.sleep(0.3)
    assert most_in_b == 1, f"B's share is 1 slot; {most_in_b} of A's jobs ran there at once"
    hosts = ran_on(w, "physics", physics, 3)
    assert hosts.count("exb") >= 1 and hosts.count("exc") >= 1 and set(hosts) <= {"exb", "exc"}, hosts
    assert pools_seen and pools_seen <= {"b", "c"}, pools_seen  # q -run's POOL column
    # B's agreement does not cover group_chem: that job went on to C
    assert ran_on(w, "chem", chem, 1) == ["exc"] and ads(cma, chem, "NumJobStarts") == [["1"]]
    # FLOCK_TO's order: B was offered A's jobs before C was
    log = (cma.home / "log" / "SchedLog").read_text(errors="replace")
    assert 0 <= log.find("to pool b") < log.find("to pool c"), log[-3000:]
    cma.roost("rm", home)


def test_work_no_home_machine_can_run_is_offered_at_once_and_says_why(pools: Pools) -> None:
    cma = pools["cma"]
    w = work(cma, "never")
    # no slot anywhere has 64 cores: it stays idle, offered to every pool, and says why
    big = submit(cma, w, 1, extra="request_cpus = 64\n", name="big")

    def verdict() -> str:
        text = cma.roost("q", "-better-analyze", f"{big}.0").stdout
        return text if "Flocking: offered to pool" in text else ""

    why = until("the schedd's verdict on the big job", verdict, pools=pools)
    assert "no machine at home could ever run it, so it did not wait FLOCK_AFTER" in why, why
    assert ads(cma, big, "JobStatus") == [[IDLE]]
    cma.roost("rm", big)


def test_c_central_manager_killed_jobs_there_finish_a_and_b_go_on(pools: Pools) -> None:
    cma, cmb, cmc = pools["cma"], pools["cmb"], pools["cmc"]
    w = work(cma, "cdown")
    home = _fill_home(pools, w, 40)
    physics = submit(cma, w, 8, n=2, extra=PHYSICS, name="physics")  # B's share: one at most there
    in_c = until("both physics jobs run, one or two in C", lambda: (lambda r: len(r) == 2 and r.count("exc"))(
        running_on(cma, physics)), pools=pools)
    for pid in cmc.host.pids():  # C's central manager (collector, negotiator, master) dies
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    wb = work(cmb, "bown")
    own = submit(cmb, wb, 1, extra="request_cpus = 1\n", name="own")  # B's own work goes on
    again = submit(cma, w, 1, extra=PHYSICS, name="again")  # A's flock to B goes on
    cma.roost("wait", "-quiet", "-wait", "90", physics, again, timeout=100)
    cmb.roost("wait", "-quiet", "-wait", "60", own, timeout=70)
    assert ran_on(w, "physics", physics, 2).count("exc") == in_c  # C's jobs reported home
    assert [r[0] for r in ads(cma, physics, "ExitCode")] == ["0", "0"]
    assert (w / "physics.log").read_text().count("\n005 (") == 2
    assert ran_on(w, "again", again, 1) == ["exb"]
    assert ran_on(wb, "own", own, 1) == ["exb"]
    cma.roost("rm", home)
