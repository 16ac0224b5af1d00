"""Admission: the bounds on unauthenticated connections close the idlest first."""

from roost.net.admission import Admission


def test_per_host_bound_closes_that_hosts_idlest() -> None:
    a = Admission(max_total=10, max_per_host=2)
    assert a.admit("a1", "A") == [] and a.admit("a2", "A") == []
    assert a.admit("b1", "B") == []
    assert a.admit("a3", "A") == ["a1"]  # B's connection is not A's to lose
    a.touch("a2")  # a2 sent a frame: now a3 is A's idlest
    assert a.admit("a4", "A") == ["a3"]
    assert a.count("A") == 2 and len(a) == 3


def test_total_bound_closes_the_idlest_of_all_never_the_newcomer() -> None:
    a = Admission(max_total=3, max_per_host=0)
    for c, h in (("a1", "A"), ("b1", "B"), ("a2", "A")):
        assert a.admit(c, h) == []
    a.touch("a1")
    assert a.admit("c1", "C") == ["b1"]
    assert "c1" in a and "b1" not in a and a.count("B") == 0


def test_forgotten_connections_are_not_counted() -> None:
    a = Admission(max_total=2, max_per_host=2)
    a.admit("x", "A")
    a.forget("x")  # authenticated (or closed)
    a.forget("x")
    a.touch("x")
    assert len(a) == 0 and a.admit("y", "A") == [] and a.admit("z", "A") == []
