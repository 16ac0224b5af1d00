"""The startd's host-facing parts on their own: machine detection, slot types from
config, job ads as a starter reads them, and the launcher's identity switch."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import pwd
import resource
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from roost.classad import ClassAd
from roost.config import Config
from roost.daemons import joblimits
from roost.daemons.base import CannotStart, cannot_start_reason
from roost.daemons.startd import launch, resources, slotconfig
from roost.daemons.startd.daemon import Startd
from roost.daemons.startd.jobspec import JobSpecError, job_identity, parse_job


def config(text: str) -> Config:
    return Config.from_text(text, facts={"DETECTED_CPUS": "2", "DETECTED_MEMORY": "2048",
                                         "FULL_HOSTNAME": "exec.example.org", "ROOST_HOME": "/tmp"})


def test_machine_detection_honours_overrides(tmp_path):
    m = resources.detect(config("NUM_CPUS = 8\nMEMORY = 1000\nRESERVED_MEMORY = 100\n"
                                "STARTD_DETECT_GPUS = false\n"), str(tmp_path))
    assert m.total.cpus == 8 and m.total.memory == 900 and m.total.gpus == ()
    assert m.total.disk > 0  # measured under the execute directory
    assert m.name == "exec.example.org" and m.opsys == "LINUX"
    assert m.arch in ("X86_64", "aarch64", "ppc64le", "INTEL") or m.arch
    assert m.detected_cpus == resources.detected_cpus() >= 1
    m = resources.detect(config("DISK = 12345\n"), str(tmp_path), gpus=False)
    assert m.total.disk == 12345 and m.total.cpus == 2


@pytest.mark.parametrize(
    "text,expect",
    [
        ("", [(1, "100%", 1, True)]),
        ("NUM_SLOTS = 8\n", [(1, "1/8", 8, False)]),
        ("use FEATURE : StaticSlots\nNUM_CPUS = 8\n", [(1, "cpus=1", 8, False)]),
        ("SLOT_TYPE_1 = cpus=1\nNUM_SLOTS_TYPE_1 = 2\nSLOT_TYPE_2 = cpus=2\nNUM_SLOTS_TYPE_2 = 1\n"
         "SLOT_TYPE_2_PARTITIONABLE = true\nSLOT_TYPE_1_PARTITIONABLE = false\n",
         [(1, "cpus=1", 2, False), (2, "cpus=2", 1, True)]),
    ],
)
def test_slot_types_from_config(tmp_path, text, expect):
    d = Startd(config=config(f"LOCAL_DIR = {tmp_path}\n" + text))
    got = [(t.type_id, t.spec, t.count, t.partitionable) for t in slotconfig.slot_types(d.config)]
    assert got == expect


def test_bad_start_expression_stops_the_startd(tmp_path):
    d = Startd(config=config(f"LOCAL_DIR = {tmp_path}\nSTART = (((\n"))
    with pytest.raises(CannotStart, match="^START = '\\(\\(\\(' is not a ClassAd expression"):
        slotconfig.read_policy(d.config)


def test_a_daemon_that_cannot_start_says_why_in_its_log_for_the_master(tmp_path):
    log = tmp_path / "StartLog"
    assert cannot_start_reason(log) is None  # no log yet
    log.write_text("2026-01-01 00:00:00.000 INFO roost.startd: starting startd (pid 1, home /h)\n"
                   "2026-01-01 00:00:00.100 ERROR roost.startd: startd cannot start: slot types ask for 8 cpus\n"
                   "Exception ignored in: something after it\n")
    assert cannot_start_reason(log) == "slot types ask for 8 cpus"
    log.write_text("2026-01-01 00:00:00.000 ERROR roost.startd: a job failed\n")
    assert cannot_start_reason(log) is None


def test_job_spec_from_a_job_ad():
    ad = ClassAd({
        "ClusterId": 4, "ProcId": 2, "Cmd": "/home/u/run.sh", "Arguments": "a 'b c' ''",
        "Environment": "X=1 'Y=two words'", "Iwd": "/home/u", "In": "in.txt", "Out": "/dev/null",
        "Err": "e.txt", "ShouldTransferFiles": "IF_NEEDED", "FileSystemDomain": "here",
        "TransferOutput": "a, b/c", "Owner": "u", "JobMaxVacateTime": 3,
    })
    spec = parse_job(ad, "elsewhere")
    assert spec.job_id == "4.2" and spec.args == ["a", "b c", ""]
    assert spec.env == {"X": "1", "Y": "two words"}
    assert spec.transfer and spec.stdin == "in.txt" and spec.stdout is None and spec.stderr == "e.txt"
    assert spec.transfer_output == ["a", "b/c"] and spec.max_vacate_time == 3.0
    assert not parse_job(ad, "here").transfer  # same file system: run in Iwd
    v1 = ClassAd({"ClusterId": 1, "ProcId": 0, "Cmd": "x", "Args": "p  q", "Env": "A=1;B=2"})
    spec = parse_job(v1, "d")
    assert spec.args == ["p", "q"] and spec.env == {"A": "1", "B": "2"}
    with pytest.raises(JobSpecError):
        parse_job(ClassAd({"ClusterId": 1, "ProcId": 0}), "d")
    with pytest.raises(JobSpecError):
        parse_job(ClassAd({"ClusterId": 1, "ProcId": 0, "Cmd": "x", "Arguments": "'open"}), "d")


@pytest.fixture
def job_tmp() -> Iterator[Path]:
    """A directory a job's user (nobody) can reach: it now enters its working directory
    with its own rights, and pytest's tmp_path sits under a root-only directory."""
    path = Path(tempfile.mkdtemp(prefix="roost-launch-", dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="identity switching needs root")
def test_identity_never_root_and_fallback_launcher(job_tmp):
    nobody = pwd.getpwnam("nobody")
    assert job_identity("root", True, "nobody").uid == nobody.pw_uid
    assert job_identity("no-such-user", True, "nobody").uid == nobody.pw_uid
    assert job_identity("nobody", False, "nobody").real_owner is False
    with pytest.raises(JobSpecError):
        job_identity("x", True, "root")
    # without the helper, Popen(user=...) does the switch: the same ids result
    os.chmod(job_tmp, 0o777)
    out = job_tmp / "ids"
    saved = launch._launcher
    launch._launcher = None
    try:
        fd = os.open(out, os.O_WRONLY | os.O_CREAT, 0o666)
        req = launch.Launch(argv=["/bin/cat", "/proc/self/status"], executable="/bin/cat",
                            cwd=str(job_tmp), env={}, stdin=0, stdout=fd, stderr=fd,
                            uid=nobody.pw_uid, gid=nobody.pw_gid)
        proc = asyncio.run(launch.spawn(req))
        os.close(fd)
        assert proc.wait() == 0
    finally:
        launch._launcher = saved
    status = dict(line.split(":", 1) for line in out.read_text().splitlines())
    assert set(status["Uid"].split()) == {str(nobody.pw_uid)}
    assert status["Groups"].split() == []
    with pytest.raises(PermissionError):
        launch.check_executable(str(out))  # not executable
    with pytest.raises(FileNotFoundError):
        launch.check_executable(str(job_tmp / "missing"))


@pytest.mark.skipif(os.geteuid() != 0, reason="identity switching needs root")
def test_built_launcher_enters_the_cgroup_and_switches_ids(job_tmp):
    """The compiled helper does what sh + setpriv did: pid into cgroup.procs before the
    job's exec, real/effective/saved ids, no supplementary groups; exec failures 126/127,
    their errno reported where the pid would be."""
    saved = launch._launcher
    try:
        helper = launch.build_launcher(str(job_tmp / "launcher"))
        if helper is None:
            pytest.skip("no C compiler")
        assert os.stat(job_tmp / "launcher").st_mode & 0o777 == 0o700
        assert launch.build_launcher(str(job_tmp / "launcher")) == helper  # built once, then reused
        nobody = pwd.getpwnam("nobody")
        os.chmod(job_tmp, 0o777)
        out, procs = job_tmp / "ids", job_tmp / "cgroup.procs"
        procs.write_text("")
        fd = os.open(out, os.O_WRONLY | os.O_CREAT, 0o666)
        req = launch.Launch(argv=["/bin/cat", "/proc/self/status"], executable="/bin/cat",
                            cwd=str(job_tmp), env={}, stdin=0, stdout=fd, stderr=fd,
                            uid=nobody.pw_uid, gid=nobody.pw_gid, cgroup_procs=str(procs))
        assert launch.shim_enters_cgroup(req)
        assert launch._argv(req)[1] == helper
        proc = asyncio.run(launch.spawn(req))
        os.close(fd)
        assert proc.wait() == 0
        assert procs.read_text() == str(proc.pid)  # the job's own pid: entered before the exec
        status = dict(line.split(":", 1) for line in out.read_text().splitlines())
        assert set(status["Uid"].split()) == {str(nobody.pw_uid)}
        assert set(status["Gid"].split()) == {str(nobody.pw_gid)}
        assert status["Groups"].split() == []
        import subprocess

        ends = os.open(job_tmp / "exit", os.O_RDWR | os.O_CREAT, 0o600)
        env = os.memfd_create("env")
        gone = subprocess.run([helper, "-", str(nobody.pw_uid), str(nobody.pw_gid), "clear", "1", str(ends),
                               str(env), "-", "-", "/", "--", "/nonexistent/missing"], capture_output=True, text=True,
                              pass_fds=(ends, env))
        os.close(env)
        # the keeper's own status is 0; the job's (127: not found) is in its exit file
        assert gone.returncode == 0 and "missing" in gone.stderr
        got = launch.read_exit(ends)
        os.close(ends)
        assert got is not None and os.waitstatus_to_exitcode(got[0]) == 127
        assert gone.stdout.strip() == "?2"  # the exec's errno (ENOENT) where the pid goes (fd 1 here)
        assert subprocess.run([helper], capture_output=True).returncode == 126
    finally:
        launch._launcher = saved


@pytest.mark.skipif(os.geteuid() != 0, reason="identity switching needs root")
def test_a_program_the_jobs_user_may_not_execute_is_an_exec_error_not_an_exit(job_tmp):
    """Root may execute a 0700 program of its own, so the check before the fork passes;
    the job's exec, as nobody, fails: the helper reports its errno instead of a pid and
    spawn raises ExecError with HTCondor's words (the job is held, not exited 126)."""
    saved = launch._launcher
    try:
        if launch.build_launcher(str(job_tmp / "launcher")) is None:
            pytest.skip("no C compiler")
        nobody = pwd.getpwnam("nobody")
        os.chmod(job_tmp, 0o755)
        prog = job_tmp / "mine"
        prog.write_text("#!/bin/sh\necho ran\n")
        prog.chmod(0o700)
        fd = os.open(job_tmp / "out", os.O_WRONLY | os.O_CREAT, 0o666)
        req = launch.Launch(argv=[str(prog), "x"], executable=str(prog), cwd="/", env={}, stdin=0,
                            stdout=fd, stderr=fd, uid=nobody.pw_uid, gid=nobody.pw_gid)
        try:
            with pytest.raises(launch.ExecError) as e:
                asyncio.run(launch.spawn(req))
        finally:
            os.close(fd)
        assert e.value.errno == 13
        assert str(e.value) == f"Failed to execute '{prog}' with arguments x: (errno=13: 'Permission denied')"
        assert "ran" not in (job_tmp / "out").read_text()
        # not executable at all: refused before the fork, in the same words
        prog.chmod(0o644)
        req = launch.Launch(argv=[str(prog)], executable=str(prog), cwd="/", env={}, stdin=0, stdout=1, stderr=2)
        with pytest.raises(launch.ExecError, match=r"^Failed to execute '.*mine': \(errno=13: 'Permission denied'\)$"):
            asyncio.run(launch.spawn(req))
    finally:
        launch._launcher = saved


@pytest.mark.skipif(os.geteuid() != 0, reason="identity switching needs root")
@pytest.mark.parametrize("helper", [True, False], ids=["helper", "no-helper"])
def test_the_jobs_environment_directory_and_core_limit_reach_the_job_alone(job_tmp, helper):
    """Issue 25: what runs as root (the helper, its keeper) has our environment and
    ``/``; the job gets its own environment, enters its directory with its own rights
    and gets its core limit, after the switch. A directory the job's user may not
    enter stops the job (126) before anything of it runs, though root could enter it."""
    saved = launch._launcher
    try:
        launch._launcher = None
        if helper and launch.build_launcher(str(job_tmp / "launcher")) is None:
            pytest.skip("no C compiler")
        nobody = pwd.getpwnam("nobody")
        box = job_tmp / "box"
        box.mkdir()
        os.chown(box, nobody.pw_uid, nobody.pw_gid)
        os.chmod(job_tmp, 0o755)
        out = box / "out"
        fd = os.open(out, os.O_WRONLY | os.O_CREAT, 0o666)
        script = ("echo pwd=$(pwd); echo env=$LD_PRELOAD,$ROOST_X; grep -e 'core file' -e 'open files' "
                  "/proc/self/limits; echo end; exec sleep 30")
        req = launch.Launch(argv=["sh", "-c", script], executable="/bin/sh", cwd=str(box),
                            env={"PATH": "/usr/bin:/bin", "LD_PRELOAD": "/nonexistent/evil.so", "ROOST_X": "a b"},
                            stdin=0, stdout=fd, stderr=fd, uid=nobody.pw_uid, gid=nobody.pw_gid, core_size=4096)
        os.environ[joblimits.JOB_NOFILE_ENV] = "1000"  # what the pool was started with
        try:
            proc = asyncio.run(launch.spawn(req))
        finally:
            del os.environ[joblimits.JOB_NOFILE_ENV]
        try:
            deadline = time.monotonic() + 20
            while "end" not in out.read_text().split() and time.monotonic() < deadline:
                time.sleep(0.02)
            lines = out.read_text().splitlines()
            assert f"pwd={box}" in lines and "env=/nonexistent/evil.so,a b" in lines
            assert any(ln.split()[4] == "4096" for ln in lines if "core file" in ln), lines  # its soft limit
            assert any(ln.split()[3] == "1000" for ln in lines if "open files" in ln), lines  # not the startd's
            if helper:  # the keeper, root, waiting for the job: none of the job's
                assert isinstance(proc, launch.Kept)
                keeper_env = Path(f"/proc/{proc.keeper_pid}/environ").read_bytes()
                assert b"LD_PRELOAD" not in keeper_env and b"ROOST_X" not in keeper_env
                assert os.readlink(f"/proc/{proc.keeper_pid}/cwd") == "/"
                assert "4096" not in Path(f"/proc/{proc.keeper_pid}/limits").read_text()
        finally:
            os.kill(proc.pid, 9)
            proc.wait()
        assert resource.getrlimit(resource.RLIMIT_CORE)[0] != 4096  # ours is untouched
        # a script without #! runs under /bin/sh, as execvp would run it
        script_file = box / "plain"
        script_file.write_text(f"echo plain > {box}/plain.out\n")
        script_file.chmod(0o755)
        fd2 = os.open(box / "plain.err", os.O_WRONLY | os.O_CREAT, 0o666)
        req = launch.Launch(argv=[str(script_file)], executable=str(script_file), cwd=str(box), env={},
                            stdin=0, stdout=fd2, stderr=fd2, uid=nobody.pw_uid, gid=nobody.pw_gid)
        done = asyncio.run(launch.spawn(req))
        os.close(fd2)
        assert done.wait() == 0, (box / "plain.err").read_text()
        assert (box / "plain.out").read_text() == "plain\n"
        # a directory root could enter but the job's user cannot: the job never runs
        closed = job_tmp / "closed"
        closed.mkdir(mode=0o700)
        req = launch.Launch(argv=["sh", "-c", f"touch {box}/ran"], executable="/bin/sh", cwd=str(closed),
                            env={}, stdin=0, stdout=fd, stderr=fd, uid=nobody.pw_uid, gid=nobody.pw_gid)
        proc = asyncio.run(launch.spawn(req))
        os.close(fd)
        assert proc.wait() != 0 and not (box / "ran").exists()
    finally:
        launch._launcher = saved


@pytest.mark.skipif(os.geteuid() != 0, reason="identity switching needs root")
def test_launcher_clones_the_job_into_a_real_cgroup(job_tmp):
    """Where cgroup v2 is writable the job is cloned straight into its cgroup, as the
    startd's own child (no cgroup.procs write: that waits for an RCU grace period)."""
    from roost.daemons.startd.cgroups import JobCgroups

    groups = JobCgroups.detect(str(job_tmp))
    if not groups.enabled:
        pytest.skip("no writable cgroup v2 here")
    saved = launch._launcher
    try:
        if launch.build_launcher(str(job_tmp / "launcher")) is None:
            pytest.skip("no C compiler")
        groups.create("job1")
        nobody = pwd.getpwnam("nobody")
        os.chmod(job_tmp, 0o777)
        out = job_tmp / "cgroup"
        fd = os.open(out, os.O_WRONLY | os.O_CREAT, 0o666)
        req = launch.Launch(argv=["/bin/sh", "-c", "cat /proc/self/cgroup; ps -o sid= -p $$; exit 3"],
                            executable="/bin/sh", cwd=str(job_tmp), env={"PATH": "/bin:/usr/bin"},
                            stdin=0, stdout=fd, stderr=fd, uid=nobody.pw_uid, gid=nobody.pw_gid,
                            cgroup_procs=groups.procs_file("job1"))
        proc = asyncio.run(launch.spawn(req))
        os.close(fd)
        assert isinstance(proc, launch.Kept)
        assert proc.wait() == 3  # its keeper, our child, wrote its status
        lines = out.read_text().split()
        assert any(ln.startswith("0::") and ln.endswith("/job1") for ln in lines), lines
        assert lines[-1] == str(proc.pid)  # its own session
    finally:
        launch._launcher = saved
        groups.remove("job1")
        groups.close()


def test_gpus_are_found_with_nvidia_smi(tmp_path, monkeypatch):
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\necho '0, NVIDIA H100 80GB HBM3'\necho '1, NVIDIA H100 80GB HBM3'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ.get('PATH', '')}")
    ids, names = resources.detect_gpus()
    assert ids == ("GPU-0", "GPU-1") and names == ("NVIDIA H100 80GB HBM3",) * 2
    m = resources.detect(config("NUM_CPUS = 2\n"), str(tmp_path))
    assert m.total.gpus == ("GPU-0", "GPU-1") and m.gpu_names[0].startswith("NVIDIA")
    fake.write_text("#!/bin/sh\nexit 9\n")
    assert resources.detect_gpus() == ((), ())


def test_sigchld_fallback_reaps_with_rusage():
    from roost.daemons.startd.starter import _SigchldReaper

    async def main():
        import subprocess

        loop = asyncio.get_running_loop()
        got = loop.create_future()
        proc = subprocess.Popen(["/bin/sh", "-c", "exit 5"])
        _SigchldReaper.watch(loop, proc.pid, lambda status, usage: got.set_result((status, usage)))
        status, usage = await asyncio.wait_for(got, 5)
        proc.returncode = 5
        assert os.waitstatus_to_exitcode(status) == 5 and usage.ru_utime >= 0

    asyncio.run(main())


@pytest.mark.parametrize("name", ["../x", "/etc/passwd", "a/../../x", "", ".", None, 7, "a\0b"])
def test_transferred_names_cannot_leave_the_sandbox(name):
    from roost.daemons.startd.starter import TransferError, _safe_relpath

    with pytest.raises(TransferError):
        _safe_relpath(name)


def test_transferred_names_inside_the_sandbox_are_kept():
    from roost.daemons.startd.starter import _safe_relpath

    assert _safe_relpath("dir/sub/f.txt") == "dir/sub/f.txt"
    assert _safe_relpath("a/../b") == "b"


def test_a_job_runs_as_its_owner_only_within_the_uid_domain() -> None:
    from roost.daemons.startd.jobspec import local_owner, slot_number

    assert local_owner("alice", "alice@pool.example", "pool.example") == "alice"
    assert local_owner("alice", "alice@elsewhere.org", "pool.example") == ""  # another alice: a slot user
    assert local_owner("alice", "alice@Pool.Example", "pool.example") == "alice"  # domains ignore case
    assert local_owner("alice", "", "pool.example") == ""  # no submitter named: a slot user
    assert [slot_number(n) for n in ("slot3", "slot3_2", "slot12@host", "other")] == ["3", "3", "12", None]


def test_exit_and_live_usage_in_htcondors_units() -> None:
    import resource
    import signal as sig

    from roost.daemons.startd.jobusage import exit_update, live
    from roost.daemons.startd.memlimit import MemoryState
    from roost.daemons.startd.procstat import TreeUsage

    ru = resource.getrusage(resource.RUSAGE_SELF)
    killed = sig.SIGKILL  # a wait status of "killed by SIGKILL"
    out = exit_update(killed, ru, 2.5, MemoryState(100 << 20, 300 << 20, True), 256 << 20)
    assert out["exit_signal"] == 9 and out["oom"] == {"limit_mb": 256, "peak_mb": 300}
    assert out["usage"]["MemoryUsage"] >= 300 and out["usage"]["RemoteWallClockTime"] == 2.5
    # the same kill where nothing enforces memory is no OOM hold
    assert "oom" not in exit_update(killed, ru, 1.0, MemoryState(1, 300 << 20, True), None)
    assert "oom" not in exit_update(0, ru, 1.0, MemoryState(1, 300 << 20, True), 256 << 20)
    now = live(MemoryState(50 << 20, 80 << 20, False), TreeUsage(40_000, 90_000, 1.25, 0.5))
    assert now == {"MemoryUsage": 80, "ResidentSetSize": 50 << 10, "ImageSize": 90_000,
                   "RemoteUserCpu": 1.25, "RemoteSysCpu": 0.5}
    assert live(None, TreeUsage(2048, 4096, 0.0, 0.0))["MemoryUsage"] == 2


def test_kill_signals_from_the_job_ad() -> None:
    import signal as sig

    from roost.classad import ClassAd
    from roost.daemons.startd.jobspec import _signal

    ad = ClassAd()
    ad["KillSig"], ad["RemoveKillSig"], ad["HoldKillSig"], ad["Bad"] = "SIGUSR1", "USR2", "2", "SIGNOPE"
    assert (_signal(ad, "KillSig"), _signal(ad, "RemoveKillSig"), _signal(ad, "HoldKillSig")) == (
        sig.SIGUSR1, sig.SIGUSR2, sig.SIGINT)
    assert _signal(ad, "Bad") is None and _signal(ad, "Missing") is None


def test_gpu_properties_let_require_gpus_match(tmp_path, monkeypatch):
    """Each GPU's properties are advertised (GPUs_GPU_n, listed in AvailableGPUs) so that a
    job's require_gpus counts the GPUs it accepts, as condor_submit's Requirements ask."""
    from roost.core import slots as core_slots
    from roost.submit import parse_submit

    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\ncase \"$*\" in\n"
                    "  *compute_cap*) echo '0, NVIDIA A100, 8.0, 40960'; echo '1, NVIDIA T4, 7.5, 15360';;\n"
                    "  *) echo '0, NVIDIA A100'; echo '1, NVIDIA T4';;\nesac\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ.get('PATH', '')}")
    assert resources.detect_gpu_properties()["GPU-1"] == (
        '[Id = "GPU-1"; DeviceName = "NVIDIA T4"; Capability = 7.5; GlobalMemoryMb = 15360]')
    m = resources.detect(config("NUM_CPUS = 2\n"), str(tmp_path))
    types = core_slots.slot_types_from_config({}, 2)  # one GPU per slot
    slots = core_slots.layout(types, m, (f"c{i}" for i in range(9)), 0.0)
    ads = {name: core_slots.slot_ad(s, m, core_slots.Policy(), "<127.0.0.1:1>", 0.0) for name, s in slots.items()}
    for ad in ads.values():
        ad["CondorVersion"] = "$CondorVersion: 25.0.0 2025-01-01 $"  # the daemon adds it

    def job(body: str):  # noqa: ANN202
        (c,) = parse_submit(f"executable = /bin/true\nrequest_gpus = 1\n{body}\nqueue\n", cwd="/tmp",
                            env={}).expand(owner="u")
        return c.proc_classad(0)

    for body, want in (("require_gpus = Capability >= 8.0", {"GPU-0"}),
                       ("gpus_minimum_memory = 16G", {"GPU-0"}),
                       ("require_gpus = DeviceName == \"NVIDIA T4\"", {"GPU-1"}),
                       ("", {"GPU-0", "GPU-1"})):
        j = job(body)
        got = {ad["AssignedGPUs"] for ad in ads.values() if ad.matches(j)}  # j's Requirements vs the slot
        assert got == want, body


def _startd_with_slots(tmp_path: Path, text: str = "") -> Startd:
    """A startd's ad-building parts as its start makes them (no sockets, no jobs)."""
    from roost.core import slots as core

    d = Startd(config=config(f"LOCAL_DIR = {tmp_path}\nSTARTD_DETECT_GPUS = false\n" + text))
    d.machine = resources.detect(d.config, str(tmp_path), gpus=False)
    d.policy = slotconfig.read_policy(d.config)
    d.owner_policy.load_policy()
    d.slots = core.layout(slotconfig.slot_types(d.config), d.machine, d._claim_ids(), time.time())
    d.address = "127.0.0.1:9"
    return d


def _shown(ad: ClassAd) -> dict[str, str]:
    clock = {"mycurrenttime", "loadavg", "totalloadavg"}  # move on their own between two builds
    return {k: str(ad.lookup(k)) for k in ad.keys() if k.lower() not in clock}


def test_an_ad_built_from_the_last_one_equals_a_whole_new_ad_through_a_claims_life(tmp_path) -> None:
    """A new state of a slot gets its ad as a copy of the last one with only what changed
    set (issue 27: whole rebuilds were most of a job start's startd CPU). Along a claim's
    life (claimed, busy with a job, idle again, released) each such ad holds exactly
    what a whole new ad would, claim attributes and rank gone once the claim ends included."""
    from roost.core import slots as core
    from roost.vocabulary import Activity, SlotState

    d = _startd_with_slots(tmp_path, "use FEATURE : StaticSlots\nNUM_CPUS = 2\nSTART = TARGET.Owner =!= \"eve\"\n")
    name = sorted(d.slots)[0]
    now = time.time()
    claim = core.Claim(schedd_address="10.0.0.7:9618", user="alice@example.org", owner="alice", lease=60)
    steps = [d.slots[name]]
    steps.append(core.claim_static(steps[-1], claim, now + 1))
    steps.append(core.transition(steps[-1], SlotState.CLAIMED, Activity.BUSY, now + 2))
    steps[-1] = dataclasses.replace(steps[-1], claim=dataclasses.replace(claim, job="7.0", job_start=now + 2))
    steps.append(core.transition(steps[-1], SlotState.CLAIMED, Activity.IDLE, now + 3))
    steps[-1] = dataclasses.replace(steps[-1], claim=claim)
    steps.append(core.unclaim_static(steps[-1], "new-claim-id", now + 4))
    d.claims.current_rank[steps[1].claim_id] = 3.0  # the claim's CurrentRank comes and goes with it
    made = []
    for slot in steps:
        d.slots[name] = slot
        incremental = d.build_ad(slot)
        assert d._built[name][2] is incremental
        made.append(incremental)
        d._built.clear()
        whole = d.build_ad(slot)
        assert _shown(incremental) == _shown(whole), slot
        d._built[name][2] = incremental  # go on from the incremental one
    assert made[2]["JobId"] == "7.0" and made[2]["Activity"] == "Busy" and made[2]["CurrentRank"] == 3.0
    assert "CurrentRank" not in made[0] and "CurrentRank" not in made[4]
    assert "RemoteUser" in made[3] and "RemoteUser" not in made[4] and "JobId" not in made[3]
    assert made[1] is not made[0] and made[0]["State"] == "Unclaimed"  # each state its own ad object


def test_a_gone_slot_the_collector_could_not_be_told_of_is_withdrawn_once_it_answers(tmp_path) -> None:
    """A dynamic slot that went away while the collector was out of reach (a partition)
    stays on the list and is withdrawn by the next round that reaches it, instead of
    standing there as a claimed slot until its ad expires; a name back in the table by
    then is not withdrawn."""
    from net.helpers import ThreadedServer  # tests/unit/net: the one threaded test server

    with socket.socket() as probe:  # a port nothing listens on: a collector out of reach
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    d = _startd_with_slots(tmp_path, f"COLLECTOR_HOST = 127.0.0.1:{dead}\n")
    d.daemon_name = "exec.example.org"
    withdrawn: list[str] = []

    async def invalidate_ad(req, peer):
        withdrawn.append(req["name"])
        return {"removed": 1}

    async def go(gone: set[str]) -> set[str]:
        d._gone = set()
        await d._withdraw(gone)
        return d._gone

    assert asyncio.run(go({"slot1_7", "slot1_8"})) == {"slot1_7", "slot1_8"}  # refused: kept
    with ThreadedServer({"INVALIDATE_AD": invalidate_ad}, host="127.0.0.1") as s:
        d.config = config(f"LOCAL_DIR = {tmp_path}\nCOLLECTOR_HOST = {s.server.address}\n")
        d.slots["slot1_8"] = next(iter(d.slots.values()))  # back meanwhile
        assert asyncio.run(go({"slot1_7", "slot1_8"})) == set()
    assert withdrawn == ["slot1_7@exec.example.org"]
