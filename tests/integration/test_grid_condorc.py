"""Condor-C between two real pools (issue 30, ``grid_resource = condor <schedd> <pool>``):
pool A (``a.test``) hands a user's grid job to pool B's schedd (``b.test``), each pool
with its own ROOST_HOME, TRUST_DOMAIN and signing key, on loopback. B issued the user
a token (``alice@b.test``); A's grid manager presents it, so B runs the job as alice
under its own policy while A's queue mirrors it. Output and exit code come home,
the user log has 027, 001, 005; rm, hold and release pass through; a token B did not issue is a hold
naming B's refusal; A's schedd killed with -9 mid-run leaves one remote job and one 005.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from poolkit import PoolHandle, job_dir, start_pool, stop_pool, wait_until
from poolkit import submit_text as _submit

from roost.vocabulary import JobStatus

IDLE, RUNNING, REMOVED, DONE, HELD = (JobStatus.IDLE, JobStatus.RUNNING, JobStatus.REMOVED, JobStatus.COMPLETED,
                                      JobStatus.HELD)


def _domain(domain: str) -> str:
    return f"UID_DOMAIN = {domain}\nTRUST_DOMAIN = {domain}\nFILESYSTEM_DOMAIN = {domain}\n"


@pytest.fixture(scope="module")
def pools() -> Iterator[tuple[PoolHandle, PoolHandle, Path]]:
    base = Path(f"/tmp/roost-condorc-{os.getpid()}")
    tokens = base / "tokens"
    b = start_pool(base / "b", _domain("b.test"))
    try:
        a = start_pool(base / "a", _domain("a.test") + f"GRIDMANAGER_JOB_PROBE_INTERVAL = 0.5\n"
                       f"GRIDMANAGER_TOKEN_DIRECTORY = {tokens}\n")
        try:
            # B's admin issues the user a token of B's; the user keeps it in the directory
            # A's grid manager reads for them (one per job owner: root runs this test)
            (tokens / "root").mkdir(parents=True, mode=0o700)
            done = b.roost("token", "create", "-identity", "alice@b.test", "-file", str(tokens / "root" / "pool-b"))
            assert done.returncode == 0, done.stdout + done.stderr
            yield a, b, tokens
        finally:
            stop_pool(a)
    finally:
        stop_pool(b)
        shutil.rmtree(base, ignore_errors=True)


def _resource(b: PoolHandle) -> str:
    """``condor <B's schedd> <B's collector>``."""
    name = b.roost("status", "-schedd", "-af", "Name").stdout.split()[0]
    collector = (b.home / "run" / "collector.address").read_text().strip()
    return f"condor {name} {collector}"


@pytest.fixture
def work() -> Iterator[Path]:
    """A job directory the job's user (nobody, for root) can reach: not pytest's 0700 tmp."""
    with job_dir("roost-condorc-work") as d:
        yield d


JOB = """#!/bin/sh
read n < numbers.txt
echo "got $n as $(id -un)"
echo "$n$n" > result.txt
echo "to stderr" >&2
sleep ${1:-0}
exit 3
"""


def _job(work: Path, resource: str, secs: float = 0, extra: str = "") -> str:
    (work / "job.sh").write_text(JOB)
    (work / "job.sh").chmod(0o755)
    (work / "numbers.txt").write_text("21\n")
    return f"""universe = grid
grid_resource = {resource}
executable = job.sh
arguments = {secs}
transfer_input_files = numbers.txt
transfer_output_files = result.txt
output = out.txt
error = err.txt
log = job.log
request_memory = 64
{extra}queue
"""


def _remote_jobs(b: PoolHandle, tag_part: str, history: bool = False) -> list[dict]:
    with b.schedd() as s:
        ads = s.query_objs("true", ["ClusterId", "ProcId", "Owner", "JobStatus", "RoostSubmitTag"])
        if history:
            ads += list(s.history("true", ["ClusterId", "ProcId", "Owner", "JobStatus", "RoostSubmitTag"]))
    unique = {(a["ClusterId"], a["ProcId"]): a for a in ads if tag_part in str(a.get("RoostSubmitTag", ""))}
    return list(unique.values())


def _queued(pool: PoolHandle, jid: str) -> bool:
    with pool.schedd() as s:
        return bool(s.query_objs(f"ClusterId == {jid.split('.')[0]}", ["ClusterId"]))


def _answers(pool: PoolHandle, jid: str) -> bool:
    try:
        return pool.job(jid) is not None
    except Exception:  # noqa: BLE001 - not back yet
        return False


def _events(work: Path) -> list[str]:
    return re.findall(r"^(\d{3}) \(", (work / "job.log").read_text(), re.M)


def test_a_job_runs_in_the_other_pool_and_its_files_exit_code_and_events_come_home(
        pools: tuple[PoolHandle, PoolHandle, Path], work: Path) -> None:
    a, b, _ = pools
    resource = _resource(b)
    jid = _submit(a, work, _job(work, resource))
    done = a.wait_for(jid, lambda j: j.get("JobStatus") == DONE, timeout=90, what="completed")
    assert done["ExitCode"] == 3 and done["GridJobStatus"] == "COMPLETED"
    assert re.fullmatch(rf"{re.escape(resource)} \d+\.0", done["GridJobId"]), done["GridJobId"]
    # B ran it as the user its token maps to (alice, no account here: nobody)
    assert (work / "out.txt").read_text() == "got 21 as nobody\n"
    assert (work / "err.txt").read_text() == "to stderr\n"
    assert (work / "result.txt").read_text() == "2121\n"
    numbers = _events(work)
    assert numbers[:2] == ["000", "027"] and numbers[-1] == "005" and "001" in numbers, numbers
    log = (work / "job.log").read_text()
    assert f"GridJobId: {done['GridJobId']}" in log and "return value 3" in log
    # the remote job was alice's, and left B's queue once its output was fetched
    cluster = jid.split(".")[0]
    wait_until(lambda: not _remote_jobs(b, f"#{cluster}.0#"), 30, "the remote job gone from B's queue")
    remote = _remote_jobs(b, f"#{cluster}.0#", history=True)
    assert [r["Owner"] for r in remote] == ["alice"], remote


def test_rm_passes_through_to_the_remote_schedd(pools: tuple[PoolHandle, PoolHandle, Path], work: Path) -> None:
    a, b, _ = pools
    jid = _submit(a, work, _job(work, _resource(b), secs=300))
    running = a.wait_for(jid, lambda j: j.get("JobStatus") == RUNNING, timeout=90, what="running in pool B")
    rid = running["GridJobId"].split()[-1]
    cluster = jid.split(".")[0]
    assert [f"{r['ClusterId']}.{r['ProcId']}" for r in _remote_jobs(b, f"#{cluster}.0#")] == [rid]
    # the record of the remote job is the schedd's: not a user's to point at another job
    edit = a.roost("qedit", jid, "GridJobId", '"condor x y 1.0"')
    assert edit.returncode != 0 and "GridJobId" in edit.stderr + edit.stdout, edit.stdout + edit.stderr
    assert a.roost("rm", jid).returncode == 0
    wait_until(lambda: not _remote_jobs(b, f"#{cluster}.0#"), 30, "the remote job removed by roost rm")
    wait_until(lambda: not _queued(a, jid), 30, "removed here, and out of the queue into history")
    assert a.job(jid)["JobStatus"] == REMOVED


def test_rm_of_a_job_still_idle_in_the_other_pool_removes_the_remote_job(
        pools: tuple[PoolHandle, PoolHandle, Path], work: Path) -> None:
    """Idle here (the remote job queued at B, no slot there matches it): ``roost rm``
    moves it straight to history; the remote job must still leave B's queue."""
    a, b, _ = pools
    jid = _submit(a, work, _job(work, _resource(b), extra="requirements = (Memory > 100000000)\n"))
    idle = a.wait_for(jid, lambda j: j.get("GridJobStatus") == "IDLE" and isinstance(j.get("GridJobId"), str),
                      timeout=90, what="idle at pool B")
    cluster = jid.split(".")[0]
    wait_until(lambda: [r["JobStatus"] for r in _remote_jobs(b, f"#{cluster}.0#")] == [IDLE], 30, "idle in B")
    assert idle["JobStatus"] == IDLE
    assert a.roost("rm", jid).returncode == 0
    wait_until(lambda: not _remote_jobs(b, f"#{cluster}.0#"), 30, "the idle remote job removed by roost rm")
    gone = a.job(jid)
    assert gone is not None and gone["JobStatus"] == REMOVED


def test_hold_removes_the_remote_job_and_release_submits_it_anew(
        pools: tuple[PoolHandle, PoolHandle, Path], work: Path) -> None:
    a, b, _ = pools
    jid = _submit(a, work, _job(work, _resource(b), secs=1))
    first = a.wait_for(jid, lambda j: isinstance(j.get("GridJobId"), str) and not j["GridJobId"].startswith("/Expr"),
                       timeout=90, what="at pool B")
    cluster = jid.split(".")[0]
    assert a.roost("hold", jid).returncode == 0
    wait_until(lambda: not _remote_jobs(b, f"#{cluster}.0#1"), 30, "the remote job removed by roost hold")
    assert a.roost("release", jid).returncode == 0
    done = a.wait_for(jid, lambda j: j.get("JobStatus") == DONE, timeout=90, what="completed after release")
    assert done["NumGridSubmits"] == 2 and done["GridJobId"] != first["GridJobId"]
    assert (work / "result.txt").read_text() == "2121\n"


def test_a_token_the_other_pool_did_not_issue_is_a_hold_naming_its_refusal(
        pools: tuple[PoolHandle, PoolHandle, Path], work: Path) -> None:
    a, b, tokens = pools
    stranger = tokens / "root" / "pool-b"
    kept = stranger.read_text()
    try:
        # a token of pool A's own, which B has no key for
        done = a.roost("token", "create", "-identity", "alice@b.test", "-file", str(work / "a.token"))
        assert done.returncode == 0, done.stderr
        stranger.write_text((work / "a.token").read_text())
        jid = _submit(a, work, _job(work, _resource(b)))
        held = a.wait_for(jid, lambda j: j.get("JobStatus") == HELD, timeout=60, what="held")
    finally:
        stranger.write_text(kept)
    reason = held["HoldReason"]
    assert reason.startswith("The remote schedd ") and "refused the job:" in reason, reason
    assert "IDTOKENS" in reason or "token" in reason.lower(), reason
    assert not _remote_jobs(b, f"#{jid.split('.')[0]}.0#")


def test_a_schedd_killed_mid_run_keeps_exactly_one_remote_job_and_one_exit(
        pools: tuple[PoolHandle, PoolHandle, Path], work: Path) -> None:
    a, b, _ = pools
    jid = _submit(a, work, _job(work, _resource(b), secs=4))
    a.wait_for(jid, lambda j: j.get("JobStatus") == RUNNING, timeout=90, what="running in pool B")
    old = a.daemon_pid("schedd")
    os.kill(old, signal.SIGKILL)
    a.wait_daemon_back("schedd", old, timeout=30)
    done = a.wait_for(jid, lambda j: j.get("JobStatus") == DONE, timeout=90, what="completed after the kill")
    assert done["ExitCode"] == 3 and done["NumGridSubmits"] == 1
    assert (work / "result.txt").read_text() == "2121\n"
    remote = _remote_jobs(b, f"#{jid.split('.')[0]}.0#", history=True)
    assert len(remote) == 1, remote
    numbers = _events(work)
    assert numbers.count("005") == 1 and numbers.count("027") == 1, numbers


def _planted_while_a_is_off(a: PoolHandle, b: PoolHandle, work: Path, token: str) -> tuple[str, str, int]:
    """The window a kill -9 can fall in: B's schedd off, a job submitted at A whose tag
    (with its random nonce) is committed but cannot be sent; A's schedd off, B's on,
    a job with that tag submitted to B with ``token``, then A's schedd on.
    (A's job id, its tag, the planted job's cluster)."""
    from roost.api.schedd import Schedd
    from roost.core.condorc import remote_ad

    resource = _resource(b)
    assert b.roost("off", "-daemon", "schedd").returncode == 0
    try:
        jid = _submit(a, work, _job(work, resource))
        local = a.wait_for(jid, lambda j: str(j.get("GridJobSubmitName", "")).startswith("roost-condorc:"),
                           timeout=60, what="the tag committed")
        tag = local["GridJobSubmitName"]
        assert a.roost("off", "-daemon", "schedd").returncode == 0
    finally:
        assert b.roost("on", "-daemon", "schedd").returncode == 0
    try:
        cid = None
        deadline = time.monotonic() + 30
        while cid is None:
            try:
                address = (b.home / "run" / "schedd.address").read_text().strip()
                with Schedd(a.home, address=address, token=token) as s:
                    cid = int(s.call("NEW_CLUSTER")["cluster"])
                    s.call("SUBMIT", cluster=cid, cluster_ad=remote_ad(local, tag), procs=[{}])
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        assert a.roost("on", "-daemon", "schedd").returncode == 0
    wait_until(lambda: _answers(a, jid), 30, "A's schedd back")
    return jid, tag, cid


def test_a_remote_job_submitted_but_not_recorded_is_found_by_its_tag_not_submitted_again(
        pools: tuple[PoolHandle, PoolHandle, Path], work: Path) -> None:
    """The predecessor's submit (as alice, with B's token) not recorded: adopted."""
    a, b, tokens = pools
    jid, tag, cid = _planted_while_a_is_off(a, b, work, (tokens / "root" / "pool-b").read_text().strip())
    done = a.wait_for(jid, lambda j: j.get("JobStatus") == DONE, timeout=90, what="completed")
    assert done["GridJobId"].split()[-1] == f"{cid}.0" and done["NumGridSubmits"] == 1
    assert (work / "result.txt").read_text() == "2121\n"
    assert len(_remote_jobs(b, tag, history=True)) == 1


def test_another_users_job_carrying_our_tag_is_not_adopted(
        pools: tuple[PoolHandle, PoolHandle, Path], work: Path) -> None:
    """Bob, another user of pool B, plants a job under the tag: the lookup asks for
    alice's own jobs only, so A submits its own."""
    a, b, _ = pools
    made = b.roost("token", "create", "-identity", "bob@b.test", "-file", str(work / "bob.token"))
    assert made.returncode == 0, made.stdout + made.stderr
    jid, tag, cid = _planted_while_a_is_off(a, b, work, (work / "bob.token").read_text().strip())
    done = a.wait_for(jid, lambda j: j.get("JobStatus") == DONE, timeout=90, what="completed")
    assert done["GridJobId"].split()[-1] != f"{cid}.0" and (work / "result.txt").read_text() == "2121\n"
    owners = sorted(r["Owner"] for r in _remote_jobs(b, tag, history=True))
    assert owners == ["alice", "bob"], owners
    with b.schedd() as s:
        s.call("ACT", action="remove", ids=[f"{cid}.0"], reason="test cleanup")


def test_a_remote_schedd_that_stops_answering_is_026_then_025_and_the_job_still_completes(
        pools: tuple[PoolHandle, PoolHandle, Path], work: Path) -> None:
    a, b, _ = pools
    jid = _submit(a, work, _job(work, _resource(b), secs=2))
    a.wait_for(jid, lambda j: j.get("GridJobStatus") in ("RUNNING", "COMPLETED"), timeout=90, what="at pool B")
    off = b.roost("off", "-daemon", "schedd")
    assert off.returncode == 0, off.stdout + off.stderr
    try:
        wait_until(lambda: "026" in _events(work), 30, "event 026 (grid resource down)")
    finally:
        on = b.roost("on", "-daemon", "schedd")
        assert on.returncode == 0, on.stdout + on.stderr
    done = a.wait_for(jid, lambda j: j.get("JobStatus") == DONE, timeout=120, what="completed once B answers")
    assert done["ExitCode"] == 3 and (work / "result.txt").read_text() == "2121\n"
    numbers = _events(work)
    assert numbers.index("026") < numbers.index("025") and numbers.count("005") == 1, numbers


# -- the grid manager's pieces, on real sockets and files (no pools needed) ------------------


def test_a_transfer_that_stalls_fails_after_the_idle_timeout_not_never() -> None:
    """A remote schedd that accepts and then sends nothing: each read of a transfer is
    bounded (GRIDMANAGER_TRANSFER_IDLE_TIMEOUT), so the Remote's lock is not held for ever."""
    import asyncio

    from roost.daemons.schedd.gridcondorc import _Idle
    from roost.net.client import Connection

    async def main() -> float:
        held: list[asyncio.StreamWriter] = []

        async def stall(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            held.append(w)  # never answers

        server = await asyncio.start_server(stall, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        conn = _Idle(Connection(reader, writer, f"127.0.0.1:{port}"), 0.3)
        t0 = time.monotonic()
        with pytest.raises(ConnectionError, match="no progress in 0.3 s"):
            await asyncio.wait_for(conn.read_exactly(10), 20)
        with pytest.raises(ConnectionError, match="no progress"):
            await asyncio.wait_for(conn.request("TRANSFER_DATA", job="1.0"), 20)
        took = time.monotonic() - t0
        writer.close()
        for w in held:
            w.close()
        server.close()
        return took

    assert asyncio.run(main()) < 15


def test_one_stalled_backend_does_not_stop_the_others_poll() -> None:
    import asyncio

    from roost.daemons.schedd.gridmanager import GridManager

    polled: list[str] = []

    class Stalled:
        async def poll(self, runners: list) -> None:
            await asyncio.sleep(3600)  # time is the point: a backend that never answers

    class Quick:
        async def poll(self, runners: list) -> None:
            polled.append("quick")

    async def main() -> None:
        gm = GridManager.__new__(GridManager)
        gm.active, gm.backends = {}, {"condor": Stalled(), "batch": Quick()}
        task = asyncio.ensure_future(gm.poll())
        for _ in range(100):
            if polled:
                break
            await asyncio.sleep(0.01)
        task.cancel()
        assert polled == ["quick"]

    asyncio.run(main())


def test_a_fetched_mark_cut_short_reads_as_not_fetched(tmp_path: Path) -> None:
    from roost.daemons.schedd.gridcondorc import _FETCHED, read_mark, write_mark

    assert read_mark(str(tmp_path)) is None
    write_mark(str(tmp_path), b'{"code": 3, "files": ["result.txt"]}')
    assert read_mark(str(tmp_path)) == {"code": 3, "files": ["result.txt"]}
    assert sorted(os.listdir(tmp_path)) == [_FETCHED]  # renamed into place: no temporary left
    (tmp_path / _FETCHED).write_bytes(b'{"code": 3, "fi')  # what a kill -9 mid-write left before
    assert read_mark(str(tmp_path)) is None


def _fake_transfer(tmp_path: Path, files: dict[str, bytes], transfer_output: str | None,
                   max_output: int) -> tuple[list[str], bool]:
    """CondorCJob._transfer against a remote schedd played on a real loopback socket
    that offers ``files``: the names kept in the sandbox, and whether the remote was
    told the output was received."""
    import asyncio
    import contextlib
    from types import SimpleNamespace

    from roost.daemons.schedd.gridcondorc import CondorCJob
    from roost.net import framing
    from roost.net.client import Connection

    acked: list[bool] = []

    async def serve(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        async def recv() -> dict:
            header = await r.readexactly(framing.HEADER_SIZE)
            return framing.decode_body(await r.readexactly(framing.body_length(header)))

        await recv()  # TRANSFER_DATA
        w.write(framing.encode({"ok": True, "files": [{"name": n, "size": len(d)} for n, d in files.items()]}))
        for d in files.values():
            w.write(d)
        await w.drain()
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            acked.append((await recv()).get("received") is True)
            w.write(framing.encode({"ok": True}))
            await w.drain()
        w.close()

    async def main() -> None:
        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        conn = Connection(reader, writer, f"127.0.0.1:{port}")

        class Client:
            @contextlib.asynccontextmanager
            async def stream(self):  # noqa: ANN202 - AsyncClient.stream's shape
                yield conn

        job = CondorCJob.__new__(CondorCJob)
        ad = {} if transfer_output is None else {"TransferOutput": transfer_output}
        job.job = SimpleNamespace(get=ad.get)
        job.b = SimpleNamespace(idle=10.0, max_output=max_output)
        job.sandbox = str(tmp_path)
        try:
            await job._transfer(Client(), "1.0", {"code": 0, "signal": None})  # type: ignore[arg-type]
        finally:
            writer.close()
            server.close()

    asyncio.run(main())
    return sorted(os.listdir(tmp_path)), bool(acked and acked[0])


def test_only_the_output_files_the_job_named_are_written_and_the_total_is_capped(tmp_path: Path) -> None:
    from roost.daemons.schedd.gridcondorc import _FETCHED, Refused, read_mark

    offered = {"_condorc_stdout": b"out\n", "result.txt": b"2121\n", "evil.sh": b"rm -rf ~\n", ".bashrc": b"x"}
    (tmp_path / "a").mkdir()
    kept, acked = _fake_transfer(tmp_path / "a", offered, "result.txt", 1 << 20)
    assert kept == sorted([_FETCHED, "_condorc_stdout", "result.txt"]) and acked
    assert read_mark(str(tmp_path / "a"))["files"] == ["_condorc_stdout", "result.txt"]
    # no transfer_output_files: every new top-level file (not a dot file)
    (tmp_path / "b").mkdir()
    kept, _ = _fake_transfer(tmp_path / "b", offered, None, 1 << 20)
    assert kept == sorted([_FETCHED, "_condorc_stdout", "result.txt", "evil.sh"])
    # more than GRIDMANAGER_MAX_OUTPUT_BYTES: refused (a hold), nothing acknowledged
    (tmp_path / "c").mkdir()
    with pytest.raises(Refused, match="GRIDMANAGER_MAX_OUTPUT_BYTES"):
        _fake_transfer(tmp_path / "c", {"result.txt": b"x" * 100}, "result.txt", 50)
    assert read_mark(str(tmp_path / "c")) is None


def _grid_life(tmp_path: Path):  # noqa: ANN202 - (lifecycle, manager, job) on a real SQLite queue
    import asyncio
    import getpass

    from roost.daemons.schedd.jobqueue import JobQueue
    from roost.daemons.schedd.lifecycle import JobLifecycle
    from roost.daemons.schedd.store import Store
    from roost.daemons.schedd.userlog import UserLogs

    class Host:
        def spawn(self, coro, name):  # noqa: ANN001, ANN202
            return asyncio.ensure_future(coro)

    store = Store(str(tmp_path / "job_queue.db"), fsync=False)
    queue = JobQueue(store)
    queue.load()
    life = JobLifecycle(Host(), store, queue, UserLogs(), on_idle=lambda j: None, on_change=lambda: None)  # type: ignore[arg-type]

    class Manager:
        jobs, root, active, woken = life, str(tmp_path / "grid"), {}, 0

        def wake(self) -> None:
            self.woken += 1

        def forget(self, g) -> None:  # noqa: ANN001
            self.active.pop(g.job.key, None)
            life.runners.pop(g.job.key, None)

    cid = queue.new_cluster_id()
    ad = {"Cmd": "/bin/true", "JobStatus": IDLE, "JobUniverse": 9, "Iwd": str(tmp_path),
          "GridResource": "condor s p:9618"}
    asyncio.run(store.commit(queue.add_cluster(cid, getpass.getuser(), ad, [{"ProcId": 0}])))
    return life, Manager(), next(iter(queue.select()))


def test_a_job_removed_while_its_output_came_home_is_let_go_not_completed(tmp_path: Path) -> None:
    """The decision to complete is made before awaits (the fetch, the copy): a remove
    in between must win (no IllegalMove Removed -> Completed, no job left Removed)."""
    import asyncio

    from roost.daemons.schedd.gridjob import GridJob

    life, m, job = _grid_life(tmp_path)

    async def main() -> None:
        g = GridJob(m, job)  # type: ignore[arg-type]
        m.active[job.key] = life.runners[job.key] = g
        life.queue.take_idle(job)
        await g.running("condor/s", "<condor:s>", "RUNNING")
        assert job.status == RUNNING
        assert await life.remove(job, "by the user")  # while the output was being copied
        await g.exited(0, None, "COMPLETED", "condor/s", "<condor:s>")
        assert job.status == REMOVED and m.active.get(job.key) is g  # the next poll lets it go
        await g.let_go()
        assert not job.cluster.holds(job) and job.key not in m.active

    asyncio.run(main())


def test_rm_of_an_idle_grid_job_with_a_remote_job_keeps_its_runner_until_the_remote_job_goes(
        tmp_path: Path) -> None:
    import asyncio

    from roost.daemons.schedd.gridjob import GridJob

    life, m, job = _grid_life(tmp_path)

    class Known(GridJob):
        def owes_remote(self) -> bool:
            return True

    async def main() -> None:
        g = Known(m, job)  # type: ignore[arg-type]
        m.active[job.key] = life.runners[job.key] = g
        life.queue.take_idle(job)
        assert await life.remove(job, "by the user")
        assert not job.cluster.holds(job)  # straight to history: it was Idle here
        assert not g.gone() and g.stopping() and m.active.get(job.key) is g
        await g.running("condor/s", "<condor:s>", "RUNNING")  # a poll that saw it start: ignored
        assert job.status == REMOVED

    asyncio.run(main())


def test_a_fetched_mark_completes_the_job_when_the_remote_job_is_gone_and_a_broken_one_does_not(
        tmp_path: Path) -> None:
    """B took the acknowledgement but its answer was lost: the next poll finds the
    remote job gone, and the mark (not a missing count, not a hold) completes it. A mark
    a kill cut short is "not fetched": begin() leaves the job to the polls, not busy."""
    import asyncio
    from types import SimpleNamespace

    from roost.daemons.schedd.gridcondorc import _FETCHED, CondorCJob, write_mark

    life, m, job = _grid_life(tmp_path)
    m.schedd_name = "a"
    asyncio.run(life.store.commit(life.set_ops(job, {"GridJobId": "condor s p:9618 4.0", "Out": os.devnull,
                                                     "Err": os.devnull})))
    backend = SimpleNamespace(remote=lambda *a: None)

    async def main() -> None:
        g = CondorCJob(m, backend, job)  # type: ignore[arg-type]
        m.active[job.key] = life.runners[job.key] = g
        life.queue.take_idle(job)
        os.makedirs(g.sandbox)
        (Path(g.sandbox) / _FETCHED).write_bytes(b'{"code": 7, "fi')  # cut short by a kill
        await g.begin()
        assert not g.busy and job.status == IDLE
        await g.observe(None)
        assert g.missing == 1 and job.status == IDLE  # counted missing, as nothing came home
        os.unlink(Path(g.sandbox) / _FETCHED)
        write_mark(g.sandbox, b'{"code": 7, "signal": null, "files": []}')
        await g.observe(None)
        for _ in range(200):
            if job.status == DONE:
                break
            await asyncio.sleep(0.01)
        assert job.status == DONE and job.get("ExitCode") == 7 and g.missing == 1
        assert not os.path.exists(g.sandbox)

    asyncio.run(main())
