"""A daemon of a flocking pool: it presents its own pool's token and then other pools'
(each issuer once), and the connected pools' daemon identities get exactly the levels
their part needs; a pool without FLOCK_* knobs decides as before."""

from __future__ import annotations

import time
from pathlib import Path

from roost.config import Config
from roost.daemons.security import Security
from roost.net.signing_key import ensure_key_file
from roost.net.token_store import write_token_file
from roost.net.tokens import DEFAULT_KEY, create_token, decode_token

from .daemon_procs import make_home

AGREEMENT = """
UID_DOMAIN = a.example
FLOCK_AGREEMENTS = b
FLOCK_AGREEMENT_b = collector = 10.9.9.9:9618; direction = both; domain = b.example
"""


def load(home: Path) -> Config:
    return Config.load(str(home / "roost_config"), env={"ROOST_HOME": str(home)})


def other_pool_token(tmp_path: Path, issuer: str, identity: str) -> str:
    key_file = tmp_path / f"{issuer}.key"
    return create_token(ensure_key_file(str(key_file)), DEFAULT_KEY, issuer, identity, now=time.time())


def test_a_daemon_presents_its_own_token_then_one_of_each_other_pool(tmp_path: Path) -> None:
    home = make_home(tmp_path, AGREEMENT)
    tokens = home / "tokens.d"
    tokens.mkdir(mode=0o700, exist_ok=True)
    b1 = other_pool_token(tmp_path, "cm.b.example", "condor@a.example")
    write_token_file(str(tokens / "pool-b"), b1)
    write_token_file(str(tokens / "pool-b-again"), other_pool_token(tmp_path, "cm.b.example", "alice@a.example"))
    sec = Security(load(home), "SCHEDD", make_key=True)
    assert sec.token is not None and sec.tokens[0] == sec.token
    assert [decode_token(t)[1].issuer for t in sec.tokens] == [sec.trust_domain, "cm.b.example"]
    assert sec.tokens[1] == b1  # the first of that issuer, in file-name order
    assert sec.client_args()["token"] == sec.tokens


def test_one_pool_s_daemon_presents_its_token_alone(tmp_path: Path) -> None:
    sec = Security(load(make_home(tmp_path)), "SCHEDD", make_key=True)
    assert sec.client_args()["token"] == sec.token and sec.tokens == [sec.token]


def test_the_connected_pool_negotiates_for_our_schedd_and_claims_our_slots(tmp_path: Path) -> None:
    home = make_home(tmp_path, AGREEMENT)
    cfg = load(home)
    theirs = "condor@b.example"
    schedd = Security(cfg, "SCHEDD", make_key=True).policy.decide
    assert schedd(theirs, "10.9.9.9", "GET_REQUESTS", "SCHEDD").allowed
    assert schedd(theirs, "10.9.9.8", "JOB_UPDATE", "SCHEDD").allowed  # their starters
    startd = Security(cfg, "STARTD", make_key=False).policy.decide
    assert startd(theirs, "10.9.9.7", "REQUEST_CLAIM", "STARTD").allowed
    assert not startd(theirs, "10.9.9.7", "DRAIN", "STARTD").allowed
    collector = Security(cfg, "COLLECTOR", make_key=False).policy.decide
    assert collector(theirs, "10.9.9.7", "UPDATE_AD", "COLLECTOR", {"type": "Submitter"}).allowed
    assert not collector(theirs, "10.9.9.7", "UPDATE_AD", "COLLECTOR", {"type": "Machine"}).allowed
    # and a pool we have no agreement with gets nothing of that
    assert not schedd("condor@c.example", "10.9.9.9", "GET_REQUESTS", "SCHEDD").allowed
    assert not startd("condor@c.example", "10.9.9.7", "REQUEST_CLAIM", "STARTD").allowed


def test_without_flock_knobs_another_pool_s_daemons_get_nothing(tmp_path: Path) -> None:
    home = make_home(tmp_path, "UID_DOMAIN = a.example\n")
    schedd = Security(load(home), "SCHEDD", make_key=True).policy.decide
    assert not schedd("condor@b.example", "10.9.9.9", "GET_REQUESTS", "SCHEDD").allowed
    assert schedd("condor@a.example", "10.9.9.9", "GET_REQUESTS", "SCHEDD").allowed
