"""SUBMIT's checks of each proc's differences (``submission._check_procs``): decided
once per set of attribute names for speed, so each case here also comes after many
procs of the same names, where a cached decision could hide it."""

from __future__ import annotations

import pytest

from roost.daemons.schedd.submission import _check_procs
from roost.net.errors import RequestError

CLUSTER = {"Cmd": "/bin/true", "Owner": "alice", "User": "alice@x", "JobStatus": 1}


def _check(procs, accounting=None):
    _check_procs(procs, dict(CLUSTER), "alice", accounting or (lambda d: None))
    return procs


def _refused(procs, words: str) -> None:
    with pytest.raises(RequestError, match=words):
        _check(procs)


def test_plain_procs_pass_in_any_order_without_repeats():
    assert len(_check([{"ProcId": i} for i in range(1000)])) == 1000
    _check([{"ProcId": i} for i in (5, 3, 9, 0)])
    _check([{"ProcId": i, "Arguments": str(i)} for i in range(100)] + [{"ProcId": 100}])
    _check([{"Arguments": "a"}, {"Arguments": "b"}])  # no ProcId: their place


@pytest.mark.parametrize("tail", [
    [{"ProcId": 3}],                    # a repeat after increasing ids
    [{"ProcId": 0, "Arguments": "x"}],  # a repeat with differences of its own
    [{"ProcId": 7}, {"ProcId": 7}],     # a repeat once the order broke
])
def test_a_repeated_proc_id_is_refused(tail):
    _refused([{"ProcId": i} for i in range(5)] + tail, "bad or repeated ProcId")


@pytest.mark.parametrize("bad", [{"ProcId": -1}, {"ProcId": "3"}, {"ProcId": 2.5}, {"ProcId": True, "A": 1}])
def test_a_bad_proc_id_is_refused(bad):
    _refused([{"ProcId": 0}, bad], "bad or repeated ProcId")


def test_not_an_ad_and_case_twins_and_other_owners_are_refused_after_many_good_procs():
    good = [{"ProcId": i, "Arguments": str(i)} for i in range(50)]
    _refused([*good, "x"], "is not an ad")
    _refused([*good, {"ProcId": 50, "Arguments": "a", "arguments": "b"}], "twice")
    _refused([*good, {"ProcId": 50, "Arguments": "a", "Owner": "bob"}], "different Owner")
    _refused([*good, {"ProcId": 50, "User": "bob@x"}], "different User")
    _refused([*good, {"ProcId": 50, "Arguments": "/Expr(1 +)/"}], "bad expression")
    _refused([*good, {"ProcId": 50, "NotifyUser": "a@b; rm -rf /"}], "NotifyUser")


def test_a_procs_attribute_takes_the_clusters_spelling_and_accounting_is_asked():
    procs = _check([{"ProcId": 0, "cmd": "/bin/false"}, {"ProcId": 1, "cmd": "/bin/sh"}])
    assert procs == [{"ProcId": 0, "Cmd": "/bin/false"}, {"ProcId": 1, "Cmd": "/bin/sh"}]
    asked = []
    _check([{"ProcId": i, "AcctGroupUser": "g"} for i in range(3)], asked.append)
    assert len(asked) == 3
