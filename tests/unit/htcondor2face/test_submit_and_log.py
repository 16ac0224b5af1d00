"""roost.htcondor2's Submit and JobEventLog beside HTCondor's (the PyPI bindings): the
same descriptions give the same keys, queue arguments, items and expansions; the same
log file gives the same events."""

from __future__ import annotations

import pickle
import threading
import time
from pathlib import Path

import pytest
from eventlog.samples import all_samples

import roost.htcondor2 as face
from roost.eventlog import EventLogWriter, ExecuteEvent, SubmitEvent, TerminatedEvent

real = pytest.importorskip("htcondor2")

DESCRIPTIONS = [
    {"executable": "/bin/echo", "arguments": "$(x)", "+Foo": "1", "request_memory": "10"},
    "executable = /bin/echo\narguments = $(a) $(b)\nqueue 2 a,b from (\n1 x\n2 y\n)\n",
    "executable = /bin/echo\nMY.Bar = \"z\"\nqueue x in (p q r)\n",
    "executable = /bin/echo\nqueue\n",
]


@pytest.mark.parametrize("desc", DESCRIPTIONS)
def test_submit_reads_descriptions_as_htcondor2_does(desc: object) -> None:
    ours, theirs = face.Submit(desc), real.Submit(desc)
    assert dict(ours) == dict(theirs)
    assert ours.get("EXECUTABLE") == theirs.get("EXECUTABLE") == "/bin/echo"
    assert ours.get("nothing") is theirs.get("nothing") is None
    items_ours, items_theirs = ours.itemdata(), theirs.itemdata()
    assert (items_ours is None) == (items_theirs is None)
    if items_theirs is not None:
        assert list(items_ours) == list(items_theirs)  # type: ignore[arg-type]
    if "(\n" not in str(desc):  # htcondor2 keeps an item list out of getQArgs; roost keeps it in
        assert ours.getQArgs() == theirs.getQArgs()
        # the text a DAG writer puts in a .sub file: with a queue statement, always
        assert str(ours) == str(theirs) and repr(ours) == repr(theirs)
        assert str(ours).endswith("queue\n") or "\nqueue " in str(ours)


@pytest.mark.parametrize("qargs", ["3", "queue x in (a b)", "a, b from (1 2)", "v matching *.nothing"])
def test_queue_arguments_and_items_match(qargs: str) -> None:
    ours, theirs = face.Submit({"executable": "/bin/true"}), real.Submit({"executable": "/bin/true"})
    ours.setQArgs(qargs)
    theirs.setQArgs(qargs)
    assert ours.getQArgs() == theirs.getQArgs()
    a, b = ours.itemdata(), theirs.itemdata()
    assert (a is None and b is None) or list(a) == list(b)  # type: ignore[arg-type]


def test_expand_and_type_rules_match() -> None:
    text = "executable = /bin/echo\nname = w\narguments = $(executable) $(name)x\n"
    assert face.Submit(text).expand("arguments") == real.Submit(text).expand("arguments") == "/bin/echo wx"
    for sub in (face.Submit(), real.Submit()):
        with pytest.raises(TypeError):
            sub["x"] = 1  # type: ignore[assignment]
        with pytest.raises(NotImplementedError):
            del sub["x"]
    for cls in (face.Submit, real.Submit):
        with pytest.raises(ValueError):
            cls({"queue": "3"})


def test_jobs_makes_the_ads_of_each_item() -> None:
    sub = face.Submit({"executable": "/bin/echo", "arguments": "$(w)"})
    ads = sub.jobs(count=2, itemdata=iter([{"w": "a"}, {"w": "b"}]), clusterid=7)
    assert [(a["ClusterId"], a["ProcId"], a["Args"]) for a in ads] == [
        (7, 0, "a"), (7, 1, "a"), (7, 2, "b"), (7, 3, "b")]


def test_a_bad_description_is_an_htcondor_exception_naming_the_line() -> None:
    with pytest.raises(face.HTCondorException, match="<Submit>:2"):
        face.Submit("executable = /bin/true\nif $(x)\nqueue\n")


def _write_log(path: Path) -> list[object]:
    events = all_samples()
    w = EventLogWriter(path)
    w.write_many(events)
    w.close()
    return events


def test_job_event_log_reads_what_htcondor2_reads(tmp_path: Path) -> None:
    path = tmp_path / "job.log"
    _write_log(path)
    ours = list(face.JobEventLog(str(path)).events(stop_after=0))
    theirs = list(real.JobEventLog(str(path)).events(stop_after=0))
    assert len(ours) == len(theirs) > 10
    for a, b in zip(ours, theirs, strict=True):
        assert (int(a.type), a.cluster, a.proc, a.timestamp) == (int(b.type), b.cluster, b.proc, b.timestamp)
        assert a.type.name == b.type.name
        for key in ("ReturnValue", "TerminatedNormally", "HoldReasonCode", "Size"):
            assert a.get(key) == b.get(key), (a, key)


def test_a_follower_blocks_until_the_next_event_and_resumes_after_pickling(tmp_path: Path) -> None:
    path = tmp_path / "grow.log"
    w = EventLogWriter(path)
    w.write(SubmitEvent(5, 0, time.time()))
    log = face.JobEventLog(str(path))
    first = next(log.events(stop_after=0))
    assert first.type is face.JobEventType.SUBMIT and (first.cluster, first.proc) == (5, 0)
    assert list(log.events(stop_after=0)) == []
    again = pickle.loads(pickle.dumps(log))
    threading.Timer(0.3, lambda: w.write(ExecuteEvent(5, 0, time.time(), execute_host="<127.0.0.1:1>"))).start()
    got = next(again.events(stop_after=20))
    assert got.type is face.JobEventType.EXECUTE
    w.write(TerminatedEvent(5, 0, time.time(), return_value=3))
    w.close()
    assert next(again.events())["ReturnValue"] == 3
    again.close()
    assert list(again.events(stop_after=0)) == []


def test_a_missing_log_is_an_htcondor_exception(tmp_path: Path) -> None:
    for mod in (face, real):
        with pytest.raises(mod.HTCondorException):
            mod.JobEventLog(str(tmp_path / "nope.log"))
