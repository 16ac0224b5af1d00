"""The glide-in's batch script, run by a real /bin/sh with the Slurm job's variables and a
stand-in for Python that keeps what the startd would have been given."""

from __future__ import annotations

import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from roost.cli.annex_script import GlideinSpec, script
from roost.config import Config


def run_script(tmp_path: Path, spec: GlideinSpec) -> tuple[subprocess.CompletedProcess[str], Path]:
    kept = tmp_path / "kept"
    fake = tmp_path / "python"
    fake.write_text(f"""#!/bin/sh
cp -a "$ROOST_HOME" {kept}
echo "args: $* PYTHONPATH=$PYTHONPATH"
env | grep -i '^_roost_' | sed 's/^/left: /'
""")
    fake.chmod(0o755)
    path = tmp_path / "job.sh"
    path.write_text(script(GlideinSpec(spec.annex, spec.duration, spec.token, str(fake), spec.pythonpath,
                                       spec.config)))
    env = {"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": "42", "SLURM_CPUS_ON_NODE": "2", "SLURM_MEM_PER_NODE": "300",
           "TMPDIR": str(tmp_path), "ROOST_CONFIG": "/somewhere/else",
           # the central manager's own overrides, which sbatch passes on
           "_ROOST_NETWORK_INTERFACE": "10.213.7.1", "_roost_BIND_ADDRESS": "10.213.7.1"}
    done = subprocess.run(["/bin/sh", str(path)], env=env, capture_output=True, text=True, timeout=30)
    return done, kept


def test_the_script_gives_the_startd_its_own_home_config_and_private_token(tmp_path: Path) -> None:
    spec = GlideinSpec("night-1", 600, "aaa.bbb.ccc", "", "/src", {"COLLECTOR_HOST": "127.0.0.1:9618",
                                                                  "STARTD_NOCLAIM_SHUTDOWN": "30"})
    before = int(time.time())
    done, kept = run_script(tmp_path, spec)
    assert done.returncode == 0, done.stderr
    assert "args: -m roost.daemons.startd PYTHONPATH=/src" in done.stdout
    assert "left:" not in done.stdout, "no _ROOST_ override of the submitting host reaches the startd"
    token = kept / "tokens.d" / "annex"
    assert token.read_text() == "aaa.bbb.ccc\n"
    assert stat.S_IMODE(os.stat(token).st_mode) == 0o600 and stat.S_IMODE(os.stat(kept / "tokens.d").st_mode) == 0o700
    cfg = Config.load(str(kept / "roost_config"), subsys="STARTD")
    assert cfg.get("STARTD_NAME") == "glidein42" and cfg.get("NUM_CPUS") == "2" and cfg.get("MEMORY") == "300"
    assert cfg.get("AnnexName") == '"night-1"' and cfg.get("IsGlidein") == "True"
    assert cfg.get("SlurmJobId") == '"42"' and cfg.get("COLLECTOR_HOST") == "127.0.0.1:9618"
    assert before + 600 <= float(cfg.get("GLIDEIN_ToDie") or 0) <= time.time() + 600
    assert set("IsGlidein AnnexName GLIDEIN_ToDie SlurmJobId".split()) <= set(cfg.get_list("STARTD_ATTRS", []) or [])
    assert cfg.get("LOCAL_DIR", "").startswith(str(tmp_path) + "/roost-gi-")
    assert not list(tmp_path.glob("roost-gi-*")), "its home is removed when the startd exits"


def test_config_text_is_not_run_by_the_shell(tmp_path: Path) -> None:
    """A knob with $(MACRO) or backquotes reaches the configuration as written."""
    spec = GlideinSpec("a", 60, "t", "", "", {"START": "$(START) && `x` != $HOME"})
    done, kept = run_script(tmp_path, spec)
    assert done.returncode == 0, done.stderr
    assert "START = $(START) && `x` != $HOME" in (kept / "roost_config").read_text()


def test_a_token_with_spaces_is_refused() -> None:
    with pytest.raises(ValueError, match="one word"):
        script(GlideinSpec("a", 60, "two words", "python", "", {}))


@pytest.mark.parametrize(("argv", "said"), [
    ([], "give -slurm N"),
    (["-slurm", "0"], "-slurm takes a whole number of at least 1, not '0'"),
    (["-slurm", "2", "-duration", "soon"], "-duration 'soon' is not a duration"),
    (["-slurm", "2", "-idle", "0"], "-idle must be more than 0"),
    (["-slurm", "2", "-name", "a b"], "-name 'a b': letters, digits"),
    (["-slurm", "2", "extra"], "unexpected argument 'extra'"),
    (["-slurm", "2", "-owners", "a b"], "-owners 'a b': user names"),
    (["-slurm", "2", "-owners", ","], "-owners ',': user names"),
])
def test_bad_annex_command_lines_say_what_is_wrong(argv: list[str], said: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from roost.cli.annex_cmd import main

    assert main(argv) == 2
    assert said in capsys.readouterr().err


def test_without_the_pool_key_annex_says_where_to_run_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from roost.cli.annex_cmd import main

    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "collector.address").write_text("127.0.0.1:9618\n")
    (tmp_path / "roost_config").write_text(f"LOCAL_DIR = {tmp_path}\n")
    monkeypatch.setenv("ROOST_HOME", str(tmp_path))
    monkeypatch.delenv("ROOST_CONFIG", raising=False)
    assert main(["-slurm", "1"]) == 1
    assert "run roost annex on the central manager" in capsys.readouterr().err
    assert not (tmp_path / "annex").exists() or not list((tmp_path / "annex").glob("*.json"))


def test_cancelled_by_slurm_the_script_still_removes_its_home(tmp_path: Path) -> None:
    """scancel sends SIGTERM to every process of the job: the startd stops, the shell's
    trap removes the glide-in's directory (a plain EXIT trap does not run on a signal)."""
    import signal

    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho up\nexec sleep 30\n")
    fake.chmod(0o755)
    path = tmp_path / "job.sh"
    path.write_text(script(GlideinSpec("c", 60, "t", str(fake), "", {})))
    env = {"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": "7", "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen(["/bin/sh", str(path)], env=env, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        assert proc.stdout is not None
        while "up" not in proc.stdout.readline():
            pass
        assert list(tmp_path.glob("roost-gi-*"))
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=20) != 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert not list(tmp_path.glob("roost-gi-*"))


def test_glideins_run_only_their_owners_jobs() -> None:
    """A glide-in runs every job as its own user, beside its token: only the annex's
    owners' jobs may start there (condor_annex's -owners, default its user)."""
    from roost.classad import ClassAd
    from roost.classad.evaluate import evaluate
    from roost.classad.parser import parse_expr
    from roost.classad.values import Value
    from roost.cli.annex_cmd import owners_start

    start = parse_expr(owners_start(["alice", "bob"]))
    slot = ClassAd()
    for owner, want in (("alice", True), ("bob", True), ("mallory", False)):
        job = ClassAd({"Owner": owner})
        assert evaluate(start, slot, job) is want
    # with no job it is undefined, not false: the slot is not in the Owner state
    assert evaluate(start, slot, None) is Value.Undefined


@pytest.mark.parametrize(("pool", "glidein"), [
    (None, "0.0.0.0"), ("", "0.0.0.0"), ("0.0.0.0", "0.0.0.0"), ("::", "::"),
    ("127.0.0.1", "127.0.0.1"), ("::1", "::1"), ("localhost", "localhost"),
    # the central manager's own address: no Slurm node has it, its startd could not listen
    ("10.213.7.1", "0.0.0.0"), ("cm.example.org", "0.0.0.0"), ("fd00::1", "::"),
])
def test_glideins_bind_every_interface_unless_the_pool_is_wildcard_or_loopback(pool: str | None,
                                                                               glidein: str) -> None:
    from roost.cli.annex_cmd import glidein_bind_address

    assert glidein_bind_address(pool) == glidein
