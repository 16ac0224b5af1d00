"""``roost config``: condor_config_val's behaviour for roost."""

from __future__ import annotations

from pathlib import Path

import pytest

from roost.cli.config_cmd import main


@pytest.fixture
def pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    f = tmp_path / "roost_config"
    f.write_text("use ROLE : Personal\nBASE = /srv\nLOGDIR = $(BASE)/log\nSCHEDD.LOGDIR = /sched\n")
    monkeypatch.setenv("ROOST_CONFIG", str(f))
    monkeypatch.setenv("ROOST_HOME", str(tmp_path))
    for k in [k for k in __import__("os").environ if k.upper().startswith("_ROOST_")]:
        monkeypatch.delenv(k)
    return f


def test_prints_expanded_values(pool: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["LOGDIR", "negotiator_interval"]) == 0
    assert capsys.readouterr().out == "/srv/log\n60\n"


def test_raw(pool: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-raw", "LOGDIR"]) == 0
    assert capsys.readouterr().out == "$(BASE)/log\n"


def test_verbose_says_where(pool: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-v", "LOGDIR", "DAEMON_LIST", "UPDATE_INTERVAL"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "LOGDIR = /srv/log"
    assert out[1] == f"  # at: {pool}:3"
    assert out[3] == f"  # at: {pool}:1 (use ROLE:Personal)"
    assert out[5] == "  # at: <default>"


def test_subsystem_view(pool: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-subsystem", "schedd", "LOGDIR"]) == 0
    assert capsys.readouterr().out == "/sched\n"


def test_unknown_knob(pool: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["LOGDIR", "NO_SUCH_THING"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "/srv/log\n"
    assert captured.err == "Not defined: NO_SUCH_THING\n"


def test_dump(pool: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-dump"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "LOGDIR = /srv/log" in lines
    assert "NEGOTIATOR_INTERVAL = 60" in lines
    assert "BIND_ADDRESS = 127.0.0.1" in lines
    names = [line.split(" = ")[0].split(" =")[0] for line in lines]
    assert names == sorted(names, key=str.upper)


def test_config_files_listed(pool: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-config"]) == 0
    assert capsys.readouterr().out == f"{pool}\n"


def test_bad_config_is_reported_not_raised(
    pool: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pool.write_text("A = 1\nbroken\n")
    assert main(["A"]) == 1
    assert capsys.readouterr().err.startswith(f"roost config: {pool}:2: expected NAME = value")


def test_loop_is_reported_not_raised(pool: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pool.write_text("A = $(B)\nB = $(A)\n")
    assert main(["A"]) == 1
    assert "macro loop" in capsys.readouterr().err


def test_usage(pool: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "roost config" in capsys.readouterr().err
    assert main(["-bogus"]) == 2
    assert main(["-help"]) == 0
