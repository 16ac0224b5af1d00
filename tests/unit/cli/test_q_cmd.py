"""``roost q``'s option spellings: condor_q's abbreviations keep working next to -better-analyze."""

import io
import time

import pytest

from roost.cli import q_cmd
from roost.cli.options import Parser, UsageError
from roost.cli.q_cmd import ALIASES, SPEC, _io_view


def parse(*argv: str):  # type: ignore[no-untyped-def]
    return Parser("roost q", "", SPEC, ALIASES).parse(list(argv))


@pytest.mark.parametrize("flag", ["-ba", "-bat", "-batch", "--batch"])
def test_batch_abbreviations_stay_batch(flag: str) -> None:
    o = parse(flag)
    assert o.batch is True and o.values["better-analyze"] is False


@pytest.mark.parametrize("flag", ["-be", "-better", "-better-analyze", "-better-analyse"])
def test_better_analyze_spellings(flag: str) -> None:
    o = parse(flag, "12.0")
    assert o.values["better-analyze"] is True and o.batch is False and o.positional == ["12.0"]


@pytest.mark.parametrize("flag", ["-an", "-analyze", "-analyse"])
def test_analyze_spellings(flag: str) -> None:
    assert parse(flag).analyze is True


def test_bare_b_is_ambiguous_and_says_between_what() -> None:
    with pytest.raises(UsageError, match=r"-b is ambiguous \(-batch, -better-analyze\)"):
        parse("-b")


def test_io_view_shows_transfer_and_checkpoint_state() -> None:
    out = io.StringIO()
    _io_view([
        {"ClusterId": 3, "ProcId": 0, "Owner": "ann", "JobStatus": 2, "BytesSent": 20_000_000,
         "BytesRecvd": 1_500_000, "TransferringOutput": True, "NumCkpts": 2, "CheckpointSizeKB": 20480,
         "LastCheckpointTime": 1_790_000_000, "StreamOut": True},
        {"ClusterId": 3, "ProcId": 1, "Owner": "ann", "JobStatus": 1},
    ], out)
    head, running, idle = out.getvalue().splitlines()
    assert head.split()[:5] == ["ID", "OWNER", "ST", "SENT_MB", "RECVD_MB"]
    cols = running.split()
    assert cols[:8] == ["3.0", "ann", "R", "20.0", "1.5", "out", "2", "21.0"] and cols[-1] == "out"
    assert idle.split() == ["3.1", "ann", "I", "0.0", "0.0", "-", "0", "-", "-", "-"]


def test_condor_q_short_spellings() -> None:
    o = parse("-n", "schedd@h", "-p", "cm:9618", "-s", "alice", "-g", "-c", "true", "-all-users", "-x")
    assert (o.name, o.pool, o.submitter, o.values["global"], o.constraint) == ("schedd@h", "cm:9618", "alice",
                                                                              True, "true")
    assert o.allusers is True and o.xml is True


@pytest.mark.parametrize("argv", [["-af", "ClusterId +"], ["-af:j", "ProcId", "foo("], ["-format", "%d", "1 +* 2"]])
def test_an_expression_that_does_not_parse_is_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    # refused before any pool is asked: condor_q would drop it and what follows silently
    assert q_cmd.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("roost q: -") and "is not a ClassAd expression: 1:" in err
    assert repr(argv[-1]) in err


def _running(proc: int, host: str, pool: str | None = None) -> dict:
    now = int(time.time())
    j = {"ClusterId": 7, "ProcId": proc, "Owner": "alice", "QDate": now - 600, "JobStatus": 2,
         "JobUniverse": 5, "RemoteHost": host, "JobCurrentStartDate": now - 60}
    return {**j, "RemotePool": pool} if pool is not None else j


def test_q_run_names_the_pool_of_a_flocked_job_and_keeps_condor_q_s_layout_otherwise() -> None:
    out = io.StringIO()
    q_cmd._run_view([_running(0, "slot1@exa"), _running(1, "slot1_1@exb", "b")], out, display=None)
    head, home, there = out.getvalue().splitlines()
    assert head.split() == ["ID", "OWNER", "SUBMITTED", "RUN_TIME", "POOL", "HOST(S)"]
    assert home.split()[-2:] == ["home", "slot1@exa"] and there.split()[-2:] == ["b", "slot1_1@exb"]
    assert head.index("POOL") == there.index(" b ") + 1 == home.index(" home ") + 1  # the column lines up
    out = io.StringIO()
    q_cmd._run_view([_running(0, "slot1@exa")], out, display=None)
    head, row = out.getvalue().splitlines()
    assert head.split() == ["ID", "OWNER", "SUBMITTED", "RUN_TIME", "HOST(S)"] and row.split()[-1] == "slot1@exa"
