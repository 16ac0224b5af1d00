"""``-pool HOST[:PORT]`` and ``-name NAME`` on a real personal pool: the tools find the
collector at that address and the schedd (negotiator) by the name its ad carries,
and an unknown name is one clear line."""

from __future__ import annotations

from pathlib import Path

from poolkit import PoolHandle

from roost.api.home import read_address, run_path


def _where(pool: PoolHandle) -> tuple[str, str]:
    collector = read_address(run_path(str(pool.home), "collector.address"))
    assert collector and not collector.startswith("unix:"), collector
    c = pool.collector()
    try:
        (ad,) = c.query_objs("Scheduler", projection=["Name", "Machine"])
    finally:
        c.close()
    return collector, str(ad["Name"])


def test_q_rm_history_status_userprio_with_pool_and_name(pool: PoolHandle, tmp_path: Path) -> None:
    collector, name = _where(pool)
    r = pool.submit("executable = /bin/true\nhold = true\nqueue 2\n", tmp_path)
    q = pool.roost("q", "-pool", collector, "-name", name, "-af", "ClusterId", "ProcId", check=True)
    assert f"{r.cluster} 0" in q.stdout.splitlines() and f"{r.cluster} 1" in q.stdout.splitlines(), q.stdout
    q = pool.roost("q", "-pool", collector, "-name", name, "-nobatch", str(r.cluster), check=True)
    assert f"-- Schedd: {name} : <" in q.stdout and f"{r.cluster}.1" in q.stdout, q.stdout
    # -name alone asks this pool's collector; -pool alone takes its only schedd
    q = pool.roost("q", "-name", name, str(r.cluster), "-af", "ClusterId", check=True)
    assert q.stdout.split() == [str(r.cluster)] * 2, q.stdout
    q = pool.roost("q", "-pool", collector, str(r.cluster), "-af", "ClusterId", check=True)
    assert q.stdout.split() == [str(r.cluster)] * 2, q.stdout

    st = pool.roost("status", "-pool", collector, "-schedd", "-af", "Name", check=True)
    assert st.stdout.split() == [name], st.stdout
    assert pool.roost("userprio", "-pool", collector, "-all", check=True).returncode == 0

    out = pool.roost("rm", "-pool", collector, "-name", name, str(r.cluster), check=True)
    assert out.stdout.strip() == f"All jobs in cluster {r.cluster} have been marked for removal"
    pool.wait(r.job_ids(), timeout=30)
    hist = pool.roost("history", "-pool", collector, "-name", name, str(r.cluster), "-af", "ProcId", check=True)
    assert sorted(hist.stdout.split()) == ["0", "1"], hist.stdout


def test_an_unknown_name_or_a_dead_pool_is_one_clear_line(pool: PoolHandle) -> None:
    collector, _ = _where(pool)
    for cmd in (["q"], ["history"], ["rm", "1"]):
        done = pool.roost(*cmd, "-pool", collector, "-name", "nosuch@nowhere")
        assert done.returncode == 1, (cmd, done)
        assert done.stderr.strip() == f"roost {cmd[0]}: no schedd named nosuch@nowhere in the pool at {collector}", done.stderr
    done = pool.roost("userprio", "-pool", collector, "-name", "nosuch")
    assert done.returncode == 1 and done.stderr.strip() == \
        f"roost userprio: no negotiator named nosuch in the pool at {collector}", done.stderr
    done = pool.roost("status", "-pool", "127.0.0.1:1")
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
