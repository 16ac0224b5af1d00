"""Job ids as users write them (``12``, ``12.3``) and as the API accepts them."""

from __future__ import annotations

import pytest

import roost.api as roost
from roost.api.jobids import is_job_id, normalize_ids, parse_job_id


@pytest.mark.parametrize("text", ["0", "12", "12.0", "12.3", "007.010"])
def test_cluster_and_cluster_dot_proc_are_job_ids(text: str) -> None:
    assert is_job_id(text)


@pytest.mark.parametrize("text", ["", ".", "12.", ".3", "12.3.4", "-1", "1.-2", "a", "1.x",
                                  " 12", "12 ", "1,2", "+1", "1e3"])
def test_anything_else_is_not(text: str) -> None:
    assert not is_job_id(text)
    with pytest.raises(ValueError, match="is not a job id") as err:
        parse_job_id(text)
    assert repr(text) in str(err.value)  # the message quotes what the user typed


def test_parse_splits_cluster_and_proc() -> None:
    assert parse_job_id("12.3") == (12, 3)
    assert parse_job_id("12") == (12, None)
    assert parse_job_id("12.0") == (12, 0)  # proc 0 is a proc, not "the whole cluster"
    assert parse_job_id("007.010") == (7, 10)


def test_normalize_accepts_one_id_in_any_form() -> None:
    assert normalize_ids("12") == ["12"]
    assert normalize_ids("12.3") == ["12.3"]
    assert normalize_ids(12) == ["12"]
    assert normalize_ids((12, 3)) == ["12.3"]
    assert normalize_ids("  12.3\n") == ["12.3"]


def test_normalize_accepts_many_ids_mixed_and_keeps_their_order() -> None:
    assert normalize_ids(["5.1", 3, (4, 0), " 2 "]) == ["5.1", "3", "4.0", "2"]
    assert normalize_ids(iter(["1", "2"])) == ["1", "2"]
    assert normalize_ids([]) == []
    assert normalize_ids(None) == []


@pytest.mark.parametrize("ids, want", [(("5.0", "6.0"), ["5.0", "6.0"]),
                                       (((1, 0), (2, 0)), ["1.0", "2.0"])])
def test_a_tuple_of_two_ids_is_two_ids(ids: tuple, want: list[str]) -> None:
    assert normalize_ids(ids) == want


@pytest.mark.parametrize("ids", ["x", ["1", "two"], ["1.2.3"], -4, [(1, "x")]])
def test_normalize_refuses_a_bad_id_among_good_ones(ids: object) -> None:
    with pytest.raises(ValueError):
        normalize_ids(ids)


def test_a_bad_id_is_refused_before_the_schedd_is_contacted(tmp_path) -> None:
    """No pool runs under tmp_path: the ValueError, not NoPoolError, shows the ids were
    checked first (a typo is reported as a typo, not as a pool problem)."""
    schedd = roost.Schedd(tmp_path)
    with pytest.raises(ValueError, match="'1.x' is not a job id"):
        schedd.act("remove", "1.x")
    with pytest.raises(ValueError, match="is not a job id"):
        schedd.query(ids=["3", "oops"])
    with pytest.raises(ValueError, match="is not a job id"):
        schedd.wait(["1.0", "1/1"])
    with pytest.raises(roost.NoPoolError):
        schedd.act("remove", "1.0")
