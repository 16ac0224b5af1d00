"""Pure pieces of the job commands: ids, restrictions, totals lines, autoformat."""

import pytest

from roost.api.jobids import is_job_id, normalize_ids, parse_job_id
from roost.api.schedd import merge_jobs
from roost.cli.adtext import AutoFormat
from roost.cli.jobview import command, duration, totals_line, totals_of
from roost.cli.restrict import Restriction, split_af
from roost.submit import Expr
from roost.submit.wire import wire_ad, wire_procs


def test_job_ids_as_users_write_them():
    assert parse_job_id("12") == (12, None)
    assert parse_job_id("12.3") == (12, 3)
    assert is_job_id("7.0") and not is_job_id("alice") and not is_job_id("1.x")
    assert normalize_ids([1, "2.3", (4, 5)]) == ["1", "2.3", "4.5"]
    with pytest.raises(ValueError):
        parse_job_id("12.")


def test_restrictions_split_ids_from_users():
    r = Restriction.parse(["12", "alice", "3.1", "bob"])
    assert r.ids == ["12", "3.1"] and r.users == ["alice", "bob"]
    assert r.owner() is None
    assert r.constraint("JobPrio > 0") == '(Owner == "alice" || Owner == "bob") && (JobPrio > 0)'
    assert Restriction.parse(["alice"]).owner() == "alice"
    assert split_af(["-af:jh", "A", "B"]) == (["-af", "A", "B"], "jh")


def test_totals_line_reads_like_condor_q():
    jobs = [{"JobStatus": 1}, {"JobStatus": 1}, {"JobStatus": 2}, {"JobStatus": 5}]
    assert totals_line("query", totals_of(jobs)) == (
        "Total for query: 4 jobs; 0 completed, 0 removed, 2 idle, 1 running, 1 held, 0 suspended")


def test_durations_and_commands():
    assert duration(0) == "0+00:00:00"
    assert duration(90061) == "1+01:01:01"
    assert command({"Cmd": "/bin/sleep", "Arguments": "60"}) == "sleep 60"


def test_merge_jobs_puts_proc_differences_over_the_cluster_ad():
    answer = {"clusters": {"5": {"Owner": "a", "Cmd": "x", "JobStatus": 1}},
              "jobs": [[5, 0, {}], [5, 1, {"JobStatus": 2}]]}
    jobs = list(merge_jobs(answer))
    assert [(j["ClusterId"], j["ProcId"], j["JobStatus"], j["Owner"]) for j in jobs] == [
        (5, 0, 1, "a"), (5, 1, 2, "a")]


def test_wire_form_of_submit_values():
    ad = wire_ad({"A": 1, "B": "s", "C": Expr("A + 1"), "D": 2.5, "E": True, "F": float("nan")})
    assert ad == {"A": 1, "B": "s", "C": "/Expr(A + 1)/", "D": 2.5, "E": True, "F": '/Expr(real("NaN"))/'}
    diffs = [{"ProcId": 0, "Args": "a"}, {"ProcId": 1, "Req": Expr("true")}]
    assert wire_procs(diffs) == [{"ProcId": 0, "Args": "a"}, {"ProcId": 1, "Req": "/Expr(true)/"}]


def test_autoformat_plain_attributes_and_expressions():
    af = AutoFormat(["Owner", "RequestCpus", "RequestCpus * 2", "Missing", "Rank"], "")
    line = af.line({"Owner": "alice", "RequestCpus": 2, "Rank": "/Expr(RequestCpus + 1)/"})
    assert line == "alice 2 4 undefined 3"  # -af evaluates, as condor_q -af does
    af = AutoFormat(["Owner"], "jl")
    assert af.line({"ClusterId": 3, "ProcId": 1, "Owner": "bob"}) == "ID = 3.1 Owner = bob"  # as condor_q labels it
