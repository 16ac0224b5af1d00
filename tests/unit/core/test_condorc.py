"""Condor-C's pure decisions (core/condorc.py): the remote job's ad, its state in the
user's queue, the ids and tags that let a restarted grid manager find its jobs, and
where fetched output goes."""

from __future__ import annotations

import pytest

from roost.classad.jsonparse import json_to_ad
from roost.core.condorc import (
    STDERR,
    STDOUT,
    TAG_ATTR,
    CondorCError,
    grid_job_id,
    input_names,
    keep_output,
    mirror,
    output_destination,
    poll_constraint,
    remote_ad,
    remote_id,
    submit_tag,
    wanted_outputs,
)
from roost.core.spooling import SPOOLING_HOLD_CODE
from roost.vocabulary import JobStatus

LOCAL = {"ClusterId": 7, "ProcId": 0, "Owner": "bob", "User": "bob@a.test", "JobUniverse": 9,
         "GridResource": "condor schedd@b cm.b:9618", "GridJobSubmitName": "t", "Iwd": "/home/bob/run",
         "Cmd": "/home/bob/run/job.sh", "Args": "1 2", "In": "/dev/null", "Out": "out.txt",
         "Err": "/home/bob/logs/err.txt", "UserLog": "/home/bob/run/job.log", "TransferInput": "a.dat, sub/b.dat",
         "TransferOutput": "result.txt", "TransferOutputRemaps": "result.txt = keep/r.txt", "RequestMemory": 64,
         "RequestCpus": 2, "AccountingGroup": "group_a.bob", "JobStatus": 1, "QDate": 5,
         "Requirements": "/Expr(TARGET.Memory >= RequestMemory)/"}


def test_the_remote_job_is_a_held_spooled_vanilla_job_with_no_owner_or_local_bookkeeping() -> None:
    ad = remote_ad(LOCAL, "tag-1")
    assert ad["JobUniverse"] == 5 and ad[TAG_ATTR] == "tag-1"
    assert ad["JobStatus"] == JobStatus.HELD and ad["HoldReasonCode"] == SPOOLING_HOLD_CODE
    assert ad["Cmd"] == "job.sh" and ad["Args"] == "1 2" and ad["TransferInput"] == "a.dat,b.dat"
    assert (ad["Out"], ad["Err"]) == (STDOUT, STDERR) and ad["TransferOutput"] == "result.txt"
    assert ad["RequestMemory"] == 64 and ad["RequestCpus"] == 2 and ad["ShouldTransferFiles"] == "YES"
    for gone in ("Owner", "User", "ClusterId", "ProcId", "GridResource", "GridJobSubmitName", "UserLog",
                 "AccountingGroup", "QDate", "TransferOutputRemaps"):
        assert gone not in ad, gone
    # the remote schedd parses it: LeaveJobInQueue keeps a completed job until fetched
    parsed = json_to_ad(ad)
    assert "StageOutFinish" in str(parsed.lookup("LeaveJobInQueue"))
    assert str(parsed.lookup("Requirements")) == "TARGET.Memory >= RequestMemory"


def test_a_job_not_sending_its_executable_names_it_as_it_is() -> None:
    ad = remote_ad({**LOCAL, "TransferExecutable": False, "Cmd": "/usr/bin/env"}, "t")
    assert ad["Cmd"] == "/usr/bin/env"
    assert remote_ad({k: v for k, v in LOCAL.items() if k != "Requirements"}, "t")["Requirements"] == "/Expr(true)/"
    with pytest.raises(CondorCError, match="no executable"):
        remote_ad({**LOCAL, "Cmd": ""}, "t")


def test_input_files_are_read_from_iwd_and_directories_or_urls_are_refused() -> None:
    assert input_names(LOCAL.get) == [("/home/bob/run/job.sh", "job.sh"), ("/home/bob/run/a.dat", "a.dat"),
                                      ("/home/bob/run/sub/b.dat", "b.dat")]
    with pytest.raises(CondorCError, match=r"'data/': only plain files"):
        input_names({**LOCAL, "TransferInput": "data/"}.get)
    with pytest.raises(CondorCError, match="only plain files"):
        input_names({**LOCAL, "TransferInput": "https://x/y"}.get)
    with pytest.raises(CondorCError, match="same name: a.dat"):
        input_names({**LOCAL, "TransferInput": "a.dat,x/a.dat"}.get)


@pytest.mark.parametrize(("remote", "status", "grid", "done"), [
    ({"JobStatus": 5, "HoldReasonCode": SPOOLING_HOLD_CODE}, JobStatus.IDLE, "STAGING_IN", False),
    ({"JobStatus": 1}, JobStatus.IDLE, "IDLE", False),
    ({"JobStatus": 2}, JobStatus.RUNNING, "RUNNING", False),
    ({"JobStatus": 6}, JobStatus.RUNNING, "RUNNING", False),
    ({"JobStatus": 7}, JobStatus.SUSPENDED, "SUSPENDED", False),
    ({"JobStatus": 4, "ExitCode": 3}, JobStatus.COMPLETED, "COMPLETED", True),
    ({"JobStatus": 5, "HoldReason": "over quota", "HoldReasonCode": 34}, JobStatus.HELD, "HELD", True),
    ({"JobStatus": 3}, JobStatus.HELD, "REMOVED", True),
])
def test_the_remote_state_in_the_users_queue(remote: dict, status: int, grid: str, done: bool) -> None:
    m = mirror(remote)
    assert (m.status, m.grid_status, m.done) == (status, grid, done)


def test_exits_and_remote_holds_carry_the_remote_words() -> None:
    assert mirror({"JobStatus": 4, "ExitCode": 3}).exit_code == 3
    sig = mirror({"JobStatus": 4, "ExitBySignal": True, "ExitSignal": 15})
    assert (sig.exit_code, sig.exit_signal) == (None, 15)
    held = mirror({"JobStatus": 5, "HoldReason": "over quota", "HoldReasonCode": 34})
    assert held.hold_reason == "the remote schedd held the job: over quota" and held.hold_code == 34
    assert "outside roost" in (mirror({"JobStatus": 3}).hold_reason or "")


def test_ids_tags_and_the_poll_constraint() -> None:
    gid = grid_job_id("schedd@b", "cm.b:9618", "12.0")
    assert gid == "condor schedd@b cm.b:9618 12.0" and remote_id(gid) == "12.0"
    assert remote_id("batch slurm 12") is None and remote_id(None) is None and remote_id("condor a b c") is None
    assert submit_tag("schedd@a x", 7, 0, 2, "n1") == "roost-condorc:schedd@a_x#7.0#2#n1"
    assert submit_tag("s", 7, 0, 1, "n") != submit_tag("s", 7, 0, 2, "n") != submit_tag("s", 17, 0, 2, "n")
    # a random nonce: another user of the remote pool cannot plant the next tag
    first, second = submit_tag("s", 7, 0, 1), submit_tag("s", 7, 0, 1)
    assert first != second and first.startswith("roost-condorc:s#7.0#1#") and len(first.split("#")[-1]) == 16
    assert poll_constraint(["3.0", "12.1", "3.0"]) == "(ClusterId == 12 && ProcId == 1) || (ClusterId == 3 && ProcId == 0)"
    assert poll_constraint([]) == "false"


def test_fetched_output_goes_where_the_job_said() -> None:
    assert output_destination(LOCAL.get, STDOUT) == "/home/bob/run/out.txt"
    assert output_destination(LOCAL.get, STDERR) == "/home/bob/logs/err.txt"
    assert output_destination(LOCAL.get, "result.txt") == "/home/bob/run/keep/r.txt"
    assert output_destination(LOCAL.get, "other.txt") == "/home/bob/run/other.txt"
    assert output_destination({**LOCAL, "Out": "/dev/null"}.get, STDOUT) is None


def test_only_the_files_the_job_asked_for_come_back() -> None:
    wanted = wanted_outputs({"TransferOutput": "result.txt, sub/deep.dat"}.get)
    assert wanted == {STDOUT, STDERR, "result.txt", "deep.dat"}
    assert keep_output("result.txt", wanted) and keep_output(STDOUT, wanted)
    assert not keep_output(".bashrc", wanted) and not keep_output("evil.sh", wanted)
    # no transfer_output_files: every new top-level file, as HTCondor's transfer does
    assert wanted_outputs({}.get) is None and keep_output("anything.txt", None)
    assert not keep_output("a/b", None) and not keep_output("..", None) and not keep_output("", None)
