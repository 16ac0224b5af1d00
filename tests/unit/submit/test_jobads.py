"""Submit commands -> job ad attributes, as condor_submit writes them."""

from __future__ import annotations

from pathlib import Path

import pytest

from roost.submit import Expr, SubmitError, parse_submit
from roost.submit import expansion as description_mod
from roost.submit.arglist import ad_environment

DATA = Path(__file__).resolve().parent / "data"


def ads(body: str, **kw: object) -> list[dict]:
    has_queue = any(ln.strip().lower().startswith("queue") for ln in body.splitlines())
    text = "executable = /bin/echo\n" + body + ("\n" if has_queue else "\nqueue\n")
    clusters = parse_submit(text, file="job.sub", cwd="/home/u", env={"PATH": "/bin", "HOME": "/home/u"}).expand(
        cluster_id=kw.get("cluster_id", 1), qdate=1000)  # type: ignore[arg-type]
    return [ad for c in clusters for ad in c.procs()]


def ad(body: str) -> dict:
    return ads(body)[0]


def test_old_and_new_argument_syntax() -> None:
    assert ad("arguments = a  b c")["Args"] == "a b c"
    new = ad("arguments = \"one 'two three' 'it''s' \"\"q\"\"\"")
    # stored in HTCondor's canonical V2 form: only blanks and quotes are quoted
    assert new["Arguments"] == "one two' 'three it''''s \"q\"" and "Args" not in new
    # outside single quotes, '' is an empty quoted piece of the word
    assert ad("arguments = \"it''s\"")["Arguments"] == "its"


def test_paths_universe_status_and_ids() -> None:
    a = ad("output = out.txt\nerror = err.txt\nlog = job.log\ninitialdir = run")
    assert a["Cmd"] == "/bin/echo" and a["Iwd"] == "/home/u/run" and a["UserLog"] == "/home/u/run/job.log"
    assert a["Out"] == "out.txt" and a["Err"] == "err.txt" and a["In"] == "/dev/null"
    assert (a["JobUniverse"], a["JobStatus"], a["ClusterId"], a["ProcId"], a["QDate"]) == (5, 1, 1, 0, 1000)
    for u, n in (("vanilla", 5), ("scheduler", 7), ("local", 12)):
        assert ad(f"universe = {u}")["JobUniverse"] == n
    par = ads("universe = parallel\nmachine_count = 4\narguments = $(Node)\nqueue")[0]
    assert (par["JobUniverse"], par["MinHosts"], par["MaxHosts"], par["RequestCpus"]) == (11, 4, 4, 1)
    assert par["Args"] == "#pArAlLeLnOdE#" and par["KillSig"] == "SIGTERM"
    with pytest.raises(SubmitError, match="machine_count"):
        ad("universe = parallel")
    grid = ad("universe = grid\ngrid_resource = batch  Slurm\nbatch_queue = short\nbatch_runtime = 600\n"
              "request_memory = 100")
    assert (grid["JobUniverse"], grid["GridResource"], grid["BatchQueue"], grid["BatchRuntime"]) == (
        9, "batch slurm", "short", 600)
    with pytest.raises(SubmitError, match=r"job.sub:3: grid_resource = batch pbs: batch system 'pbs' is not "
                                          r"supported .*supported: batch slurm"):
        ad("universe = grid\ngrid_resource = batch pbs")
    with pytest.raises(SubmitError, match=r"universe = grid needs grid_resource; supported: 'batch slurm'"):
        ad("universe = grid")
    with pytest.raises(SubmitError, match=r"batch_runtime = soon: expected a positive number of seconds"):
        ad("universe = grid\ngrid_resource = batch slurm\nbatch_runtime = soon")


def test_hold_sets_held_status_and_reason() -> None:
    a = ad("hold = true")
    assert (a["JobStatus"], a["HoldReasonCode"]) == (5, 15)


@pytest.mark.parametrize(("value", "mb"), [("2GB", 2048), ("512M", 512), ("100", 100), ("1.5G", 1536), ("1024K", 1)])
def test_request_memory_units(value: str, mb: int) -> None:
    assert ad(f"request_memory = {value}")["RequestMemory"] == mb


def test_request_disk_units_and_gpus() -> None:
    a = ad("request_disk = 2GB\nrequest_gpus = 2\nrequest_cpus = 4")
    assert (a["RequestDisk"], a["RequestGPUs"], a["RequestCpus"]) == (2 * 1024 * 1024, 2, 4)
    req = a["Requirements"]
    assert "(TARGET.Cpus >= RequestCpus)" in req and "(TARGET.GPUs >= RequestGPUs)" in req


def test_default_requirements_clauses() -> None:
    req = ad("request_memory = 1GB")["Requirements"]
    assert isinstance(req, Expr)
    assert req.startswith('(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX")')
    assert "(TARGET.Memory >= RequestMemory)" in req and "TARGET.Cpus" not in req
    assert req.endswith("((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))")


def test_user_constraints_drop_matching_default_clauses() -> None:
    req = ad('requirements = OpSys == "LINUX" && TARGET.Arch == "ARM" && Disk > 10\nshould_transfer_files = YES')["Requirements"]
    assert req.startswith('(OpSys == "LINUX" && TARGET.Arch == "ARM" && Disk > 10)')
    assert '(TARGET.OpSys == "LINUX")' not in req and '(TARGET.Arch == "X86_64")' not in req
    assert "(TARGET.Disk >= RequestDisk)" in req and "versionGE" not in req
    assert req.endswith("(TARGET.HasFileTransfer)")
    assert "FileSystemDomain" in ad("should_transfer_files = NO")["Requirements"]


def test_bad_requirements_names_file_and_line() -> None:
    with pytest.raises(SubmitError) as e:
        ad("output = x\nrequirements = Memory >")
    assert "job.sub:3" in str(e.value) and "requirements" in str(e.value)


def test_environment_old_new_and_getenv() -> None:
    assert ad("environment = A=1;B=2")["Environment"] == "A=1 B=2"
    assert ad("environment = \"B='x y' A=1\"")["Environment"] == "A=1 B=x' 'y"  # sorted by name
    assert ad("getenv = true")["Environment"] == "HOME=/home/u PATH=/bin"
    assert ad("getenv = PA*")["Environment"] == "PATH=/bin"


def test_the_env_command_in_the_old_syntax_writes_env() -> None:
    # condor_submit: `env` (not `environment`) with an old-syntax value prefers the old attribute
    a = ad("env = B=2 x; A=1\ngetenv = HOME")
    assert (a["Env"], a["EnvDelim"]) == ("A=1;B=2 x;HOME=/home/u", ";") and "Environment" not in a
    assert ad('env = "A=1 B=2"')["Environment"] == "A=1 B=2" and "Env" not in ad('env = "A=1"')
    assert ad("environment = A=1;B=2")["Environment"] == "A=1 B=2"
    assert ad_environment({"Env": "A=1;B=2 x", "EnvDelim": ";"}.get) == [("A", "1"), ("B", "2 x")]
    assert ad_environment({"Environment": "A=1", "Env": "B=2"}.get) == [("A", "1")]  # the new one wins


def test_policy_expressions_and_retries() -> None:
    a = ad("periodic_hold = NumJobStarts > 3\nperiodic_hold_reason = \"too many\"\nperiodic_hold_subcode = 7\n"
           "periodic_release = true\nperiodic_remove = false\non_exit_hold = ExitCode == 2")
    assert a["PeriodicHold"] == "NumJobStarts > 3" and a["PeriodicHoldReason"] == '"too many"'
    # no default OnExitRemove (absent means true), as HTCondor 25
    assert a["OnExitHold"] == "ExitCode == 2" and "OnExitRemove" not in a
    r = ad("max_retries = 5\nsuccess_exit_code = 3\nretry_until = ExitCode == 9")
    assert r["JobMaxRetries"] == 5 and r["JobSuccessExitCode"] == 3
    assert r["OnExitRemove"] == "NumJobCompletions > JobMaxRetries || ExitCode =?= JobSuccessExitCode || ExitCode == 9"


def test_transfer_files_and_contradictions() -> None:
    a = ad("transfer_input_files = a.txt, b.txt\ntransfer_output_files = out\nshould_transfer_files = YES\n"
           "when_to_transfer_output = ON_EXIT_OR_EVICT\ntransfer_output_remaps = \"out=res/out\"")
    assert (a["TransferInput"], a["TransferOutput"], a["TransferOutputRemaps"]) == ("a.txt,b.txt", "out", "out=res/out")
    assert (a["ShouldTransferFiles"], a["WhenToTransferOutput"]) == ("YES", "ON_EXIT_OR_EVICT")
    with pytest.raises(SubmitError, match="should_transfer_files"):
        ad("transfer_input_files = a\nshould_transfer_files = NO")
    with pytest.raises(SubmitError):
        ad("should_transfer_files = IF_NEEDED\nwhen_to_transfer_output = ON_EXIT_OR_EVICT")


def test_simple_commands_and_custom_attributes() -> None:
    a = ad("priority = 5\nbatch_name = \"sweep\"\nnotification = Complete\nnotify_user = me@x\n"
           "max_job_retirement_time = 60\njob_max_vacate_time = 30\ncheckpoint_exit_code = 85\n"
           "want_io_proxy = true\nconcurrency_limits = Foo, bar:2\naccounting_group = physics\n"
           "accounting_group_user = ann\nmax_idle = 10\n+Project = \"roost\"\nMY.Weight = 2 * 3\nleave_in_queue = true")
    assert (a["JobPrio"], a["JobBatchName"], a["JobNotification"], a["NotifyUser"]) == (5, "sweep", 2, "me@x")
    assert (a["MaxJobRetirementTime"], a["JobMaxVacateTime"], a["SuccessCheckpointExitCode"]) == (60, 30, 85)
    assert a["WantFTOnCheckpoint"] is True and "CheckpointExitCode" not in a  # condor_submit's names
    assert a["WantIOProxy"] is True and a["ConcurrencyLimits"] == "bar:2,foo"
    assert (a["AcctGroup"], a["AcctGroupUser"], a["AccountingGroup"]) == ("physics", "ann", "physics.ann")
    assert a["JobMaterializeMaxIdle"] == 10 and a["Project"] == "roost" and a["Weight"] == "2 * 3"
    assert a["LeaveJobInQueue"] is True


@pytest.mark.parametrize("bad", ["-Smta=/home/alice/x@y", "|/bin/sh", "a@b c@d", "a@b,c@d", "a@b\tx",
                                 "alice@ex.org\x01", "-E"])
def test_notify_user_must_be_one_plain_address(bad: str) -> None:
    """The schedd (root) gives notify_user to the MAIL program: one word that is no option,
    no pipe and no list; the error names the file and line."""
    with pytest.raises(SubmitError, match=r"job\.sub:3: notify_user = .*(may not|not one)"):
        ad(f"notification = Always\nnotify_user = {bad}\n")
    for good in ("alice", "alice@example.org", "a.b+tag=x%y_z-w@mail-1.example.org"):
        assert ad(f"notify_user = {good}\n")["NotifyUser"] == good


def test_per_proc_differences_are_compact() -> None:
    text = "executable = /bin/echo\narguments = $(Process)\noutput = out.$(Process)\nlog = j.log\nqueue 1000\n"
    (c,) = parse_submit(text, cwd="/tmp", env={}).expand(cluster_id=42)
    assert len(c) == 1000 and c.varying_attributes() == {"Args", "Out"}
    assert all(len(d) <= 3 for d in c.proc_diffs)
    p = c.proc_ad(999)
    assert (p["ClusterId"], p["ProcId"], p["Args"], p["Out"], p["UserLog"]) == (42, 999, "999", "out.999", "/tmp/j.log")


def test_fast_path_equals_handler_rerun(monkeypatch: pytest.MonkeyPatch) -> None:
    text = ("executable = /bin/echo\narguments = \"-n $(Process) 'x $(Step)'\"\noutput = o/$(Cluster).$(Process)\n"
            "request_memory = $(Process)\nerror = $INT(Process,%04d).err\nqueue 5\n")
    fast = parse_submit(text, cwd="/tmp", env={}).expand(cluster_id=3)[0]
    monkeypatch.setattr(description_mod, "_NUMERIC_LIVE", frozenset())
    slow = parse_submit(text, cwd="/tmp", env={}).expand(cluster_id=3)[0]
    assert list(fast.procs()) == list(slow.procs())
    assert fast.proc_ad(4)["Err"] == "0004.err" and fast.proc_ad(4)["RequestMemory"] == 4


def test_multiple_queue_statements_make_one_cluster() -> None:
    """condor_submit (submit.cpp: a cluster is allocated once, "NewExecutable" retired) keeps
    every queue statement in one cluster; ProcId counts on, $(Step) and $(ItemIndex) restart."""
    text = (DATA / "multi_queue.sub").read_text()
    (c,) = parse_submit(text, cwd="/tmp", env={}).expand(cluster_id=10)
    got = [(ad["ProcId"], ad["Args"], ad["Cmd"]) for ad in c.procs()]
    assert got == [
        (0, "a 0 0", "/tmp/run.sh"), (1, "a 1 1", "/tmp/run.sh"),
        (2, "b 2 0 x", "/tmp/run.sh"), (3, "b 3 0 y", "/tmp/run.sh"),
        (4, "b 4 0", "/bin/echo"),
    ]
    assert c.cluster_id == 10 and c.cluster_ad["Cmd"] == "/tmp/run.sh"


def test_log_is_relative_to_each_procs_initialdir() -> None:
    """condor_submit makes UserLog absolute against the proc's own Iwd (full_path)."""
    text = (DATA / "multi_initialdir.sub").read_text()
    (c,) = parse_submit(text, cwd="/home/u", env={}).expand()
    got = [(ad["Iwd"], ad["UserLog"]) for ad in c.procs()]
    assert got == [("/home/u/run0", "/home/u/run0/logs.log"), ("/home/u/run2", "/home/u/run2/logs.log")]


def test_empty_queue_statements_make_no_cluster() -> None:
    d = parse_submit("executable = /bin/true\nqueue 0\n", file="z.sub", cwd="/tmp", env={})
    assert d.num_procs() == 0 and d.expand() == []
    assert [str(w) for w in d.warnings] == [
        'z.sub: WARNING: "z.sub" has only empty "queue" commands -- no jobs queued']
    # a later non-empty statement still numbers from 0
    (c,) = parse_submit("executable = /bin/true\nqueue 0\nqueue 2\n", cwd="/tmp", env={}).expand()
    assert [ad["ProcId"] for ad in c.procs()] == [0, 1]


def test_unknown_command_is_a_warning_not_an_error() -> None:
    d = parse_submit("executable = /bin/true\nfrobnicate = 3\nused = x\narguments = $(used)\nqueue\n", file="j.sub",
                     cwd="/tmp", env={})
    (c,) = d.expand()
    msgs = [str(w) for w in c.warnings]
    assert any("frobnicate" in m and "j.sub:2" in m for m in msgs)
    assert not any("'used" in m for m in msgs)


def test_missing_executable_and_bad_universe() -> None:
    with pytest.raises(SubmitError, match="executable"):
        parse_submit("arguments = x\nqueue\n", cwd="/tmp", env={}).expand()
    with pytest.raises(SubmitError, match="universe"):
        ad("universe = nonsense")


def test_macros_used_only_by_queue_or_if_are_not_unused() -> None:
    d = parse_submit("N = 2\nflag = true\nif $(flag)\nexecutable = /bin/true\nendif\nqueue $(N)\n", cwd="/tmp", env={})
    (c,) = d.expand()
    assert len(c) == 2 and c.warnings == []


def test_copy_to_spool_is_a_command_not_a_typo() -> None:
    """condor_submit_dag wrote copy_to_spool = False for years and users' files keep it:
    false is what roost does anyway; true warns that the executable is not copied."""
    (c,) = parse_submit("executable = /bin/true\ncopy_to_spool = false\nqueue\n", cwd="/tmp", env={}).expand()
    assert c.warnings == []
    (c,) = parse_submit("executable = /bin/true\ncopy_to_spool = true\nqueue\n", cwd="/tmp", env={}).expand()
    assert [(w.line, "does not copy the executable" in w.message) for w in c.warnings] == [(2, True)]


def test_cluster_only_values_stay_in_the_cluster_ad() -> None:
    text = "executable = /bin/echo\nlog = job.$(Cluster).log\noutput = o.$(Cluster).$(Process)\nqueue 3\n"
    (c,) = parse_submit(text, cwd="/tmp", env={}).expand(cluster_id=8)
    assert c.varying_attributes() == {"Out"} and c.cluster_ad["UserLog"] == "/tmp/job.8.log"
    assert c.proc_ad(2)["Out"] == "o.8.2"


def test_streamed_json_equals_classad_json() -> None:
    from roost.submit.wire import iter_json, to_json

    text = ("executable = /bin/echo\narguments = \"a 'b c' $(Process)\"\nperiodic_hold = \"x\"\n+F = 2.5\n"
            "+G = \"tab\\there\"\nrequirements = Memory > 2\nqueue 3\nexecutable = /bin/b\nqueue\n")
    cs = parse_submit(text, cwd="/tmp", env={}).expand(cluster_id=2, qdate=9)
    assert "".join(iter_json(cs)) == to_json([a for c in cs for a in c.procs()])
    assert "".join(iter_json([])) == ""


def test_an_error_in_any_proc_fails_the_whole_submission() -> None:
    text = "executable = /bin/true\nrequirements = Memory > $(x)\nqueue x in (1 2 +)\n"
    with pytest.raises(SubmitError) as e:
        parse_submit(text, file="j.sub", cwd="/tmp", env={}).expand()
    assert e.value.line == 2


def test_relative_executable_and_request_typos() -> None:
    text = "executable = bin/run\ninitialdir = work\nrequest_cpu = 2\nqueue\n"
    (c,) = parse_submit(text, file="j.sub", cwd="/home/u", env={}).expand()
    assert c.cluster_ad["Cmd"] == "/home/u/bin/run" and c.cluster_ad["Iwd"] == "/home/u/work"
    assert any("did you mean request_cpus" in str(w) for w in c.warnings)
    with pytest.raises(SubmitError, match="gpus_minimum_memory"):
        parse_submit("executable = /bin/x\nrequest_gpu_memory = 4\nqueue\n", cwd="/tmp", env={}).expand()


def test_random_integer_varies_per_proc() -> None:
    text = "executable = /bin/true\narguments = $RANDOM_INTEGER(0, 1000000)\nqueue 20\n"
    (c,) = parse_submit(text, cwd="/tmp", env={}).expand()
    values = {ad["Args"] for ad in c.procs()}
    assert len(values) > 10 and all(0 <= int(v) <= 1000000 for v in values)


def test_nice_user_and_accounting_defaults() -> None:
    text = "executable = /bin/true\nnice_user = true\nqueue\n"
    (c,) = parse_submit(text, cwd="/tmp", env={}).expand(owner="ann")
    a = c.proc_ad(0)
    assert (a["AcctGroup"], a["AccountingGroup"], a["MaxJobRetirementTime"]) == ("nice-user", "nice-user.ann", 0)
    (c,) = parse_submit("executable = /bin/true\naccounting_group_user = bob\nqueue\n", cwd="/tmp", env={}).expand()
    assert c.proc_ad(0)["AccountingGroup"] == "bob" and "AcctGroup" not in c.proc_ad(0)


def test_classad_views_evaluate() -> None:
    text = "executable = /bin/true\nrequest_memory = 2GB\nrequest_cpus = 2\narguments = $(Process)\nqueue 2\n"
    (c,) = parse_submit(text, cwd="/tmp", env={}).expand(cluster_id=4)
    job = c.proc_classad(1)
    assert job["ProcId"] == 1 and job["Args"] == "1" and job["RequestMemory"] == 2048
    machine = {"Arch": "X86_64", "OpSys": "LINUX", "Disk": 10**8, "Memory": 4096, "Cpus": 4,
               "HasFileTransfer": True, "CondorVersion": "$CondorVersion: 25.0.0 2025-01-01 $"}
    from roost.classad import ClassAd

    # classad2 semantics: a.matches(b) evaluates b's Requirements with a as TARGET
    assert ClassAd(machine).matches(job)
    assert not ClassAd({**machine, "Memory": 1024}).matches(job)
    assert not ClassAd({**machine, "OpSys": "WINDOWS"}).matches(job)
    assert c.cluster_classad()["ClusterId"] == 4


def test_input_sizes_are_measured_per_proc() -> None:
    sizes = {"/d/in.0": 0, "/d/in.1": 5 * 2**20}
    text = "executable = /bin/true\ntransfer_input_files = in.$(Process)\nqueue 2\n"
    (c,) = parse_submit(text, cwd="/d", env={}, file_size=lambda p: sizes.get(p, 0)).expand()
    assert [ad["TransferInputSizeMB"] for ad in c.procs()] == [0, 5]
