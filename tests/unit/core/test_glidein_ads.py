"""core.glidein_ads: a glide-in's token touches glide-in ads of its annex only."""

from __future__ import annotations

from roost.core.glidein_ads import annex_of, replace_refusal, startd_only, update_refusal

GLIDE = {"Name": "slot1@g1", "IsGlidein": True, "AnnexName": "a1"}


def test_only_a_token_limited_to_advertising_a_startd_is_a_glideins() -> None:
    assert startd_only(["ADVERTISE_STARTD", "READ"])
    assert startd_only(["advertise_startd"])
    assert not startd_only([])  # no scopes: the pool's policy alone decides
    assert not startd_only(["READ"])
    assert not startd_only(["ADVERTISE_STARTD", "DAEMON"])
    assert not startd_only(["ADVERTISE_STARTD", "ADMINISTRATOR"])


def test_annex_of_needs_isglidein_true_and_a_name() -> None:
    assert annex_of(GLIDE) == "a1"
    assert annex_of({"isglidein": True, "annexname": "x"}) == "x"
    assert annex_of({"IsGlidein": "true", "AnnexName": "x"}) is None
    assert annex_of({"IsGlidein": True}) is None
    assert annex_of({"IsGlidein": True, "AnnexName": ""}) is None
    assert annex_of(None) is None


def test_updates() -> None:
    assert update_refusal("Machine", GLIDE, None) is None
    assert update_refusal("machine", GLIDE, GLIDE) is None
    assert "Machine ads only" in update_refusal("Scheduler", GLIDE, None)
    assert "IsGlidein" in update_refusal("Machine", {"Name": "slot1@x"}, None)
    own = {"Name": "slot1@exec", "State": "Unclaimed"}
    assert "not a glide-in" in update_refusal("Machine", {**own, "IsGlidein": True, "AnnexName": "a1"}, own)
    other = {**GLIDE, "AnnexName": "a2"}
    assert "annex 'a2'" in update_refusal("Machine", GLIDE, other)


def test_refresh_and_withdraw() -> None:
    assert replace_refusal(None, None) is None
    assert replace_refusal(GLIDE, None) is None
    assert replace_refusal(GLIDE, "a1") is None
    assert "not a glide-in" in replace_refusal({"Name": "slot1@exec"}, None)


def test_a_token_that_names_its_annex_touches_that_annexs_ads_only() -> None:
    """roost annex's token carries its annex's name: a glide-in of annex a1 may advertise,
    replace and withdraw a1's ads, never take a new annex name or another annex's ads."""
    assert update_refusal("Machine", GLIDE, None, "a1") is None
    assert update_refusal("Machine", GLIDE, GLIDE, "a1") is None
    posing = {**GLIDE, "Name": "slot1@g9", "AnnexName": "a9"}
    assert "the token is for annex 'a1', not 'a9'" in update_refusal("Machine", posing, None, "a1")
    assert update_refusal("Machine", posing, None) is None  # a hand-made token naming no annex: a new name is free
    assert replace_refusal(GLIDE, None, "a1") is None
    assert "annex 'a1', not 'a2'" in replace_refusal(GLIDE, None, "a2")
    assert "not a glide-in" in replace_refusal({"Name": "slot1@exec"}, None, "a1")
