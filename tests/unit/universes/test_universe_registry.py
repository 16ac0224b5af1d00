"""The universe registry: every universe roost runs is registered under HTCondor's name
and number, submit and the execute side find a job's universe there, and a universe
registered later is picked up by submit like a built-in one (issue 28)."""

from __future__ import annotations

import importlib

import pytest

from roost.submit import SubmitError, parse_submit
from roost.universes import registry
from roost.universes.base import RunsOn, SubmitBuild, Universe

#: HTCondor's JobUniverse numbers (condor_universe.h: CONDOR_UNIVERSE_*); docker and
#: container are vanilla jobs with an image
HTCONDOR_NUMBERS = {"standard": 1, "vanilla": 5, "scheduler": 7, "grid": 9, "java": 10, "parallel": 11,
                    "local": 12, "vm": 13, "docker": 5, "container": 5}


def ad(text: str) -> dict:
    (c,) = parse_submit(text + "\nqueue\n", file="job.sub", cwd="/home/u", env={}).expand(cluster_id=1, qdate=1000)
    return c.proc_ad(0)


def test_every_universe_roost_runs_is_registered_under_htcondors_number() -> None:
    assert sorted(registry.supported()) == sorted(["vanilla", "container", "docker", "java", "parallel",
                                                   "scheduler", "local", "grid"])
    for name in registry.supported():
        u = registry.named(name)
        assert u is not None and u.number == HTCONDOR_NUMBERS[name], name
    for name, (number, why) in registry.REFUSED.items():
        assert number == HTCONDOR_NUMBERS[name] and why and registry.named(name) is None


def test_names_are_read_in_any_case_and_the_alias_is_its_universe() -> None:
    assert registry.named("Docker") is registry.named("container")
    assert registry.named(" JAVA ").name == "java"  # type: ignore[union-attr]
    assert registry.named("mars") is None


def test_where_each_universe_runs() -> None:
    where = {u.name: u.runs_on for u in registry.all_universes()}
    assert where == {"vanilla": RunsOn.SLOT, "container": RunsOn.SLOT, "java": RunsOn.SLOT,
                     "parallel": RunsOn.DEDICATED, "scheduler": RunsOn.SCHEDD, "local": RunsOn.SCHEDD,
                     "grid": RunsOn.GRID}
    assert registry.numbers(RunsOn.SCHEDD) == {7, 12} and registry.numbers(RunsOn.DEDICATED) == {11}
    assert registry.numbers(RunsOn.GRID) == {9}


def test_a_jobs_universe_by_its_attributes() -> None:
    assert registry.for_job({}.get).name == "vanilla"  # type: ignore[union-attr]
    assert registry.for_job({"JobUniverse": 5}.get).name == "vanilla"  # type: ignore[union-attr]
    # a vanilla job with an image is a container job, docker's or not
    assert registry.for_job({"JobUniverse": 5, "WantContainer": True}.get).name == "container"  # type: ignore[union-attr]
    assert registry.for_job({"JobUniverse": 5, "WantDocker": True}.get).name == "container"  # type: ignore[union-attr]
    assert registry.for_job({"JobUniverse": 5, "WantDocker": False}.get).name == "vanilla"  # type: ignore[union-attr]
    assert registry.for_job({"JobUniverse": 10, "WantContainer": True}.get).name == "java"  # type: ignore[union-attr]
    assert registry.for_job({"JobUniverse": 9}.get).name == "grid"  # type: ignore[union-attr]
    assert registry.for_job({"JobUniverse": 13}.get) is None
    assert registry.for_job({"JobUniverse": "5"}.get) is None
    assert registry.by_number(5).name == "vanilla" and registry.name_of(13) == "vm"  # type: ignore[union-attr]


def test_every_execute_side_a_universe_names_exists() -> None:
    """The dotted paths are strings here (this package never imports the daemons): each
    names a module that has what its runner calls."""
    for u in registry.all_universes():
        side = importlib.import_module(u.execute)
        if u.runs_on == RunsOn.SCHEDD:
            assert hasattr(side, "start_local"), u.name
        elif u.runs_on == RunsOn.GRID:
            assert hasattr(side, "GridManager"), u.name
        else:
            assert callable(side.command) and callable(side.ad), u.name


def test_a_name_or_a_plain_number_is_taken_once() -> None:
    with pytest.raises(registry.UniverseError, match="already taken"):
        registry.register(Universe(name="docker", number=42, runs_on=RunsOn.SLOT, execute="x"))
    with pytest.raises(registry.UniverseError, match="already taken"):
        registry.register(Universe(name="grid", number=9, runs_on=RunsOn.SLOT, execute="x"))
    with pytest.raises(registry.UniverseError, match="already has a plain universe"):
        registry.register(Universe(name="other", number=5, runs_on=RunsOn.SLOT, execute="x"))
    with pytest.raises(ValueError, match="runs_on"):
        Universe(name="odd", number=42, runs_on="moon", execute="x")
    assert "other" not in registry.supported()


def _paint(b: SubmitBuild, universe: str) -> None:
    color = b.get("paint_color")
    if color not in ("red", "blue"):
        b.error(f"universe = {universe}: paint_color = {color}: use red or blue", "paint_color")
    b.set("PaintColor", color)


PAINT = Universe(name="paint", aliases=("paint2",), number=42, runs_on=RunsOn.SCHEDD,
                 execute="roost.daemons.schedd.localuniverse", keys=frozenset(["paint_color"]),
                 early=_paint, transfers_files=False, lease=False,
                 platform=lambda b, machine: ["TARGET.HasPaint"])


def test_a_universe_registered_later_is_picked_up_by_submit() -> None:
    with registry.registered(PAINT):
        a = ad("universe = paint\nexecutable = /bin/true\npaint_color = blue")
        assert a["JobUniverse"] == 42 and a["PaintColor"] == "blue"
        req = str(a["Requirements"])
        assert req.startswith("TARGET.HasPaint") and "HasFileTransfer" not in req and "Arch" not in req
        assert "JobLeaseDuration" not in a and a["KillSig"] == "SIGTERM"
        (c,) = parse_submit("universe = paint2\nexecutable = /bin/true\npaint_color = red\nqueue\n",
                            cwd="/tmp", env={}).expand()
        assert c.proc_ad(0)["PaintColor"] == "red" and c.warnings == []  # paint_color is no typo
        with pytest.raises(SubmitError, match=r"job.sub:3: universe = paint: paint_color = green: use red"):
            ad("universe = paint\nexecutable = /bin/true\npaint_color = green")
        assert 42 in registry.numbers(RunsOn.SCHEDD) and "paint" in registry.supported()
    assert registry.named("paint") is None and 42 not in registry.numbers(RunsOn.SCHEDD)
    with pytest.raises(SubmitError, match=r"job.sub:1: universe = paint: unknown universe \(use vanilla, "):
        ad("universe = paint\nexecutable = /bin/true")


def test_a_refused_universe_names_the_file_the_line_and_the_supported_ones() -> None:
    with pytest.raises(SubmitError) as e:
        ad("executable = /bin/true\nuniverse = vm\nvm_type = kvm")
    message = str(e.value)
    assert "job.sub:2: universe = vm: not supported by roost" in message
    assert "(supported: vanilla, container, docker, java, parallel, scheduler, local or grid)" in message
