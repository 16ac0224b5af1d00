"""What print(), str() and repr() show for classad2's Undefined and Error values and for
htcondor2's JobEvent, beside HTCondor's own bindings (PyPI ``htcondor``): scripts that
print these values or match on the text see the same thing under roost."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from eventlog.samples import all_samples

import roost.classad2 as face_classad
import roost.htcondor2 as face
from roost.eventlog import EventLogWriter

real = pytest.importorskip("htcondor2")
real_classad = pytest.importorskip("classad2")

AD_TEXT = "[a = undefined; b = error; c = 1/0; d = {undefined, error}; e = x.y]"


def _printed(*values: object) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print(*values)
    return out.getvalue()


def _value_texts(lib: object) -> list[str]:
    und, err = lib.Value.Undefined, lib.Value.Error
    ad = lib.ClassAd(AD_TEXT)
    got = [ad.eval(k) for k in ("a", "b", "c", "d", "e")] + [ad["a"], ad["b"], ad.get("zz")]
    got += [lib.ExprTree("undefined").eval(), lib.ExprTree("error").eval()]
    texts = [_printed(und), _printed(err), _printed(und, err), _printed([und, err]),
             f"{und}|{err}|{und!r}|{err!r}", format(und), format(err, ">6")]
    texts += [str(v) for v in got] + [repr(v) for v in got]
    texts += [str(ad.lookup("a")), repr(ad.lookup("b")), str(ad), ad.printOld()]
    texts += [und.name, str(int(err)), str(und == 2), str(bool(err)), repr(lib.Value)]
    return texts


def test_undefined_and_error_print_as_classad2_prints_them() -> None:
    ours, theirs = _value_texts(face_classad), _value_texts(real_classad)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        assert a == b


#: events whose text htcondor2 prints from what HTCondor's reader kept of them, which
#: is less than the log holds (roost prints the logged text): a requeue eviction's
#: resource table is not read back; a non-critical remote error is read back as
#: critical ("Message from" → "Error from"); a job-ad-information event's attributes
#: come back in another order; an attribute-set event loses its name and value; a
#: submit event's DAG node line and warning are re-written.
REFORMATTED_BY_HTCONDOR = {"004", "021", "028", "033"}


def test_a_job_event_prints_and_reprs_as_htcondor2s(tmp_path: Path) -> None:
    path = tmp_path / "job.log"
    w = EventLogWriter(path)
    w.write_many(all_samples())
    w.close()
    ours = list(face.JobEventLog(str(path)).events(stop_after=0))
    theirs = list(real.JobEventLog(str(path)).events(stop_after=0))
    assert len(ours) == len(theirs) > 10
    compared = 0
    for a, b in zip(ours, theirs, strict=True):
        assert repr(a) == repr(b)
        text = str(b)
        assert not str(a).endswith("...\n")
        if text[:3] in REFORMATTED_BY_HTCONDOR or "DAG Node" in str(a) or "WARNING" in str(a):
            assert str(a).split(" ")[:3] == text.split(" ")[:3]  # number, job id, time
            continue
        assert str(a) == text
        assert _printed(a) == _printed(b)
        compared += 1
    assert compared > len(ours) // 2
