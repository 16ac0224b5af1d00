"""roost.htcondor2 against HTCondor's own bindings (the PyPI ``htcondor`` package):
every name roost offers exists there, enumerations have the same members and
numbers, and each method roost implements takes the same arguments (names, order,
defaults) as htcondor2's."""

from __future__ import annotations

import inspect
import re

import pytest

import roost.classad
import roost.classad2
import roost.htcondor2 as face

real = pytest.importorskip("htcondor2")

ENUMS = ["JobAction", "JobStatus", "AdType", "DaemonType", "JobEventType", "QueryOpt", "TransactionFlag",
         "DaemonCommand", "SubsystemType"]

METHODS = {
    "Schedd": ["__init__", "query", "act", "edit", "history", "jobEpochHistory", "submit", "spool",
               "reschedule"],
    "Submit": ["__init__", "expand", "jobs", "procs", "getQArgs", "setQArgs", "itemdata", "setSubmitMethod",
               "getSubmitMethod", "from_dag", "from_dag_options"],
    "SubmitResult": ["__init__", "__int__", "cluster", "clusterad", "first_proc", "num_procs"],
    "Collector": ["__init__", "query", "directQuery", "locate", "locateAll"],
    "JobEventLog": ["__init__", "events", "close", "__iter__", "__next__"],
}


def test_every_public_name_exists_in_htcondor2() -> None:
    assert set(face.__all__) <= set(dir(real))
    for name in ["Schedd", "Submit", "SubmitResult", "Collector", "JobEventLog", "JobEvent", "JobEventType",
                 "JobAction", "JobStatus", "AdTypes", "DaemonTypes", "param", "HTCondorException"]:
        assert name in face.__all__


@pytest.mark.parametrize("name", ENUMS)
def test_enumerations_have_htcondor2s_members_and_numbers(name: str) -> None:
    ours, theirs = getattr(face, name), getattr(real, name)
    assert {m.name: int(m.value) for m in theirs} == {m.name: int(m.value) for m in ours}
    assert getattr(ours, "Default", None) == getattr(theirs, "Default", None)


def _params(fn: object) -> list[tuple[str, object, object]]:
    sig = inspect.signature(fn)  # type: ignore[arg-type]
    return [(p.name, p.kind, repr(p.default) if p.default is not p.empty else None)
            for p in sig.parameters.values()]


@pytest.mark.parametrize("cls,method", [(c, m) for c, ms in METHODS.items() for m in ms])
def test_methods_take_htcondor2s_arguments(cls: str, method: str) -> None:
    ours = getattr(getattr(face, cls), method)
    theirs = getattr(getattr(real, cls), method)
    mine, want = _params(ours), _params(theirs)
    assert [p[:2] for p in mine] == [p[:2] for p in want]
    # defaults: the same value where htcondor2's is plain (not an enum member or a sentinel object)
    for (n, _, d1), (_, _, d2) in zip(mine, want, strict=True):
        if d2 is not None and "object at" not in d2 and "<" not in d2:
            assert d1 == d2 or (d1, d2) in {("None", "[]"), ("None", "{}")}, (n, d1, d2)


@pytest.mark.parametrize("fn", ["send_command", "reload_config"])
def test_functions_take_htcondor2s_arguments(fn: str) -> None:
    assert [p[:3] for p in _params(getattr(face, fn))] == [p[:3] for p in _params(getattr(real, fn))]


def test_set_subsystem_rejects_what_htcondor2_rejects() -> None:
    for mod in (face, real):
        with pytest.raises(TypeError):
            mod.set_subsystem(5)
        with pytest.raises(TypeError):
            mod.set_subsystem("SCHEDD", 7)
        with pytest.raises(TypeError):
            mod.set_subsystem(name="SCHEDD")
    face.set_subsystem("TOOL", face.SubsystemType.Tool)


def test_classad2_is_roosts_classad_library() -> None:
    assert roost.classad2.ClassAd is roost.classad.ClassAd
    assert face.classad is roost.classad
    assert {"ClassAd", "ExprTree", "parseAds", "quote"} <= set(dir(roost.classad2))


def test_dir_of_roost_api_lists_its_classes() -> None:
    import roost.api

    assert {"Schedd", "Collector", "Pool", "PoolError"} <= set(dir(roost.api))


def _type_names(annotation: object) -> set[str]:
    """The type names an annotation mentions, lower-cased, without modules and Optional."""
    if annotation is inspect.Signature.empty:
        return set()
    text = annotation.__name__ if isinstance(annotation, type) else str(annotation)
    names = {t.rsplit(".", 1)[-1].lower() for t in re.findall(r"[A-Za-z_][\w.]*", str(text).replace("typing.", ""))}
    return names - {"optional", "none", "union", "nonetype"}


@pytest.mark.parametrize("cls,method", [(c, m) for c, ms in METHODS.items() for m in ms])
def test_methods_return_htcondor2s_types(cls: str, method: str) -> None:
    theirs = _type_names(inspect.signature(getattr(getattr(real, cls), method)).return_annotation)
    ours = _type_names(inspect.signature(getattr(getattr(face, cls), method)).return_annotation)
    if theirs:  # htcondor2 leaves a few unannotated (jobs, procs: not implemented there)
        assert ours == theirs
