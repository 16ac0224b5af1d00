"""htcondor2's ``param``, ``reload_config`` and ``set_subsystem`` beside HTCondor's own
(PyPI ``htcondor``), both reading the same configuration file: assignments last until
a reload, a subsystem's ``SUBSYS.KNOB`` wins over ``KNOB``, and the daemons' log knobs
name the files roost's daemons write."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

import roost.htcondor2 as face
from roost.config import Config

real = pytest.importorskip("htcondor2")

CONFIG = "TEST_FOO = foo\nSCHEDD.TEST_FOO = bar\nLOG = /var/roost-test/log\n"


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "condor_config"
    path.write_text(CONFIG)
    monkeypatch.setenv("CONDOR_CONFIG", str(path))
    monkeypatch.setenv("ROOST_CONFIG", str(path))
    monkeypatch.setenv("ROOST_HOME", str(tmp_path))
    for mod in (face, real):
        mod.set_subsystem("TOOL")
        mod.reload_config()
    yield path
    for mod in (face, real):
        mod.set_subsystem("TOOL")
    monkeypatch.undo()
    for mod in (face, real):
        mod.reload_config()


def _session(mod: ModuleType) -> list[object]:
    """What a tutorial-style session sees, step by step."""
    p = mod.param
    seen: list[object] = [p["TEST_FOO"], p.get("TOOL_LOG"), p["SCHEDD_LOG"], p["MASTER_LOG"]]
    p["TOOL_LOG"] = "/tmp/log"
    seen += [p["TOOL_LOG"], p.get("tool_log")]
    mod.reload_config()
    seen.append(p.get("TOOL_LOG"))  # the assignment is gone
    p["LOCAL_X"] = "plain"
    p["SCHEDD.LOCAL_X"] = "schedd's"
    seen.append(p["LOCAL_X"])
    mod.set_subsystem("SCHEDD")
    seen += [p["TEST_FOO"], p["LOCAL_X"], p["SCHEDD.TEST_FOO"]]
    mod.set_subsystem("TOOL")
    seen += [p["TEST_FOO"], p["LOCAL_X"], "LOCAL_X" in p]
    with pytest.raises(KeyError):
        p["NOT_A_KNOB_ANYWHERE"]
    return seen


def test_a_session_sees_what_htcondor2s_sees(config_file: Path) -> None:
    ours, theirs = _session(face), _session(real)
    assert ours == theirs
    assert ours[:4] == ["foo", None, "/var/roost-test/log/SchedLog", "/var/roost-test/log/MasterLog"]


def test_reload_config_reads_another_root_file(config_file: Path, tmp_path: Path) -> None:
    other = tmp_path / "other_config"
    other.write_text("TEST_FOO = other\n")
    face.param["TEST_FOO"] = "set"
    face.reload_config(str(other))
    assert face.param["TEST_FOO"] == "other"
    face.reload_config()
    assert face.param["TEST_FOO"] == "foo"
    with pytest.raises(TypeError):
        face.reload_config(5)  # type: ignore[arg-type]


def test_set_subsystem_needs_a_name() -> None:
    with pytest.raises(ValueError, match="subsystem"):
        face.set_subsystem("two words")


def test_the_daemons_log_knobs_default_to_htcondors_names_under_log(tmp_path: Path) -> None:
    cfg = Config.load(env={"ROOST_HOME": str(tmp_path), "ROOST_CONFIG": "/dev/null"})
    log = cfg.get("LOG")
    assert [cfg.get(f"{d}_LOG") for d in ("MASTER", "COLLECTOR", "NEGOTIATOR", "SCHEDD", "STARTD")] == [
        f"{log}/MasterLog", f"{log}/CollectorLog", f"{log}/NegotiatorLog", f"{log}/SchedLog", f"{log}/StartLog"]


def test_typed_knobs_have_htcondor2s_types(config_file: Path) -> None:
    """Every knob of roost's defaults is read by both: where HTCondor's table types it,
    roost's value has that type (a roost-only knob is a string in both)."""
    from roost.config.defaults import _KNOBS

    compared = 0
    for knob in _KNOBS:
        try:
            theirs = real.param[knob.name]
        except KeyError:
            continue
        ours = face.param.get(knob.name)
        if ours is None:
            continue  # a default that is empty here (a host fact it waits for)
        if isinstance(theirs, int) and isinstance(ours, float) and not isinstance(theirs, bool):
            assert not ours.is_integer(), (knob.name, ours)  # roost's default has a fraction of a second
        else:
            assert type(ours) is type(theirs), (knob.name, ours, theirs)
        compared += 1
    assert compared > 40
    p = face.param
    p["UPDATE_INTERVAL"] = "5 * 60"
    p["NEGOTIATOR_MIN_INTERVAL"] = "0.5"
    p["ENABLE_SSH_TO_JOB"] = "0"
    p["MASTER_BACKOFF_FACTOR"] = "3"
    assert (p["UPDATE_INTERVAL"], p["NEGOTIATOR_MIN_INTERVAL"], p["ENABLE_SSH_TO_JOB"], p["MASTER_BACKOFF_FACTOR"]) \
        == (300, 0.5, False, 3.0)
    p["UPDATE_INTERVAL"] = "soon"
    with pytest.raises(face.HTCondorException, match="UPDATE_INTERVAL = 'soon' is not a number"):
        p["UPDATE_INTERVAL"]
