"""Property tests: the per-proc fast path and the argument syntax round trip."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roost.submit import expansion as description_mod
from roost.submit import parse_submit
from roost.submit.arglist import join_v2_raw, split_v2_raw

words = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=8)


@given(st.lists(words, max_size=6))
def test_v2_arguments_round_trip(args: list[str]) -> None:
    assert split_v2_raw(join_v2_raw(args)) == args


piece = st.sampled_from(["$(Process)", "$(Cluster)", "$(Step)", "$(ItemIndex)", "x", "-", "/", " ", "'", "a b"])


@settings(max_examples=60, deadline=None)
@given(st.lists(piece, min_size=1, max_size=6), st.lists(piece, min_size=1, max_size=4), st.integers(1, 4))
def test_fast_path_matches_running_every_handler(arg_parts: list[str], out_parts: list[str], n: int) -> None:
    args = "".join(arg_parts).replace("'", "")
    out = "".join(out_parts).strip() or "o"
    text = f"executable = /bin/echo\narguments = {args}\noutput = {out}\ninitialdir = d$(Step)\nqueue {n}\n"
    fast = list(parse_submit(text, cwd="/tmp", env={}).expand(cluster_id=5)[0].procs())
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(description_mod, "_NUMERIC_LIVE", frozenset())
        slow = list(parse_submit(text, cwd="/tmp", env={}).expand(cluster_id=5)[0].procs())
    assert fast == slow
