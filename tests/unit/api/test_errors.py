"""What a refusal or a lost daemon looks like to a user of the API: a ``PoolError``
carrying the daemon's own one-line message (and its ``code``), never a bare protocol
exception, and a client that keeps working after a refusal."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest
from daemons.daemon_procs import make_home, pool_token, start_daemon, stop_daemon, user_identity

import roost.api as roost
from roost.net.addresses import write_address
from roost.net.errors import RequestError
from roost.net.token_store import write_token_file


def test_a_refused_query_is_a_pool_error_with_the_schedds_message(schedd_daemon) -> None:
    with roost.Schedd(schedd_daemon.home) as schedd:
        with pytest.raises(roost.PoolError) as err:
            schedd.query("(((")
        e = err.value
        assert not isinstance(e, roost.NoPoolError)  # the pool runs; the request was bad
        assert not isinstance(e, RequestError)  # the wire's exception does not leak out
        assert e.code == "BAD_REQUEST"
        assert str(e).startswith("bad constraint '((('")  # the daemon's line, as it wrote it
        # the same client goes on working after a refusal
        assert schedd.totals()["Total"] >= 0


def test_an_unknown_command_is_refused_not_fatal(schedd_daemon) -> None:
    with roost.Schedd(schedd_daemon.home) as schedd:
        with pytest.raises(roost.PoolError, match="unknown command 'NO_SUCH_COMMAND'") as err:
            schedd.call("NO_SUCH_COMMAND")
        assert err.value.code == "BAD_REQUEST"
        with pytest.raises(roost.PoolError, match="ids") as err:
            schedd.call("WAIT_JOBS", ids="not a list", timeout=0)  # malformed argument
        assert err.value.code == "BAD_REQUEST"
        assert "Total" in schedd.totals()


def test_a_refused_ad_query_is_a_pool_error_too(collector_daemon) -> None:
    c = roost.Collector(collector_daemon.home)
    try:
        with pytest.raises(roost.PoolError) as err:
            c.query("Machine", constraint="Memory >")
        assert err.value.code == "BAD_REQUEST" and "Memory >" in str(err.value)
        assert c.query_objs("Collector")  # still usable
    finally:
        c.close()


def test_submitting_over_tcp_without_a_token_is_refused_in_one_line(schedd_daemon, tmp_path: Path) -> None:
    """A client that can only reach the schedd's TCP address and holds no token of the
    pool (no run/schedd.sock, no tokens.d) may query, but not submit."""
    write_address(tmp_path / "run" / "schedd.address", schedd_daemon.address)
    with roost.Schedd(tmp_path) as schedd:
        assert schedd.totals()["Total"] >= 0
        with pytest.raises(roost.PoolError) as err:
            schedd.submit({"executable": "/bin/true"})
        assert err.value.code == "PERMISSION_DENIED" and not isinstance(err.value, roost.NoPoolError)
        assert str(err.value).startswith("NEW_CLUSTER refused to an unauthenticated peer: ")
        assert "\n" not in str(err.value)
        assert schedd.totals()["Total"] >= 0  # still answering


@pytest.mark.skipif(os.geteuid() != 0, reason="a schedd that is not root runs only its own user's jobs")
def test_a_token_submits_over_tcp_only_for_its_own_user(schedd_daemon, tmp_path: Path) -> None:
    """With a token in tokens.d the same client submits over TCP, as the token's user:
    this user's token (what ``roost up`` writes) submits this user's job; bob's token
    may not submit a job owned by this user."""
    write_address(tmp_path / "run" / "schedd.address", schedd_daemon.address)
    me = pwd.getpwuid(os.geteuid()).pw_name
    token_file = tmp_path / "tokens.d" / "token"
    write_token_file(token_file, pool_token(schedd_daemon.home, user_identity(schedd_daemon.home, "bob")))
    with roost.Schedd(tmp_path) as schedd:
        with pytest.raises(roost.PoolError) as err:
            schedd.submit({"executable": "/bin/true"})
        assert err.value.code == "DENIED"
        assert str(err.value) == f"SUBMIT: user bob may not submit jobs owned by {me!r}"
    write_token_file(token_file, pool_token(schedd_daemon.home, user_identity(schedd_daemon.home, me)))
    with roost.Schedd(tmp_path) as schedd:
        result = schedd.submit({"executable": "/bin/true", "hold": "true"})
        [job] = schedd.query(f"ClusterId == {result.cluster}", ["Owner"])
        assert job["Owner"] == me
        assert schedd.act("remove", str(result.cluster))


def test_a_schedd_that_dies_under_a_client_is_reported_then_seen_as_gone(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    proc, _ = start_daemon("schedd", home)
    try:
        schedd = roost.Schedd(home)
        assert schedd.totals()["Total"] == 0
        proc.kill()
        proc.wait()
        with pytest.raises(roost.PoolError, match="lost the connection to the schedd") as err:
            schedd.totals()
        assert not isinstance(err.value, roost.NoPoolError)
        # the next call looks again, finds only the dead schedd's files, and says so
        with pytest.raises(roost.NoPoolError, match="no pool is running"):
            schedd.totals()
    finally:
        stop_daemon(proc)
