"""The collector's table of ads without sockets: the tallies a grouped query keeps stay
equal to counting the live ads afresh, through updates, refreshes, invalidations and
expiry (time passed in)."""

from __future__ import annotations

import random
from collections import Counter

from roost.daemons.adstore import AdStore

NAMES = ["Arch", "OpSys", "State", "SlotBackfill"]


def _fresh(store: AdStore, mono: float) -> Counter:
    keys = [sp[0] for _, sp in store.names_for("Machine", NAMES) if sp]
    return Counter(tuple(e.obj.get(k) for k in keys) for e in store.of_type("Machine", mono))


def _answer(store: AdStore, got: dict) -> Counter:
    keys = [sp[0] for _, sp in store.names_for("Machine", NAMES) if sp]
    return Counter({tuple(ad.get(k) for k in keys): n for ad, n in zip(got["ads"], got["counts"])})


def test_tallies_follow_every_change() -> None:
    rng = random.Random(27)
    store = AdStore(100.0)
    mono = 0.0
    states = ["Claimed", "Unclaimed", "Owner", "Drained"]
    for step in range(3000):
        mono += rng.random()
        op = rng.random()
        name = f"slot{rng.randrange(60)}@h{rng.randrange(3)}"
        if op < 0.5:
            ad = {"Name": name, "Arch": rng.choice(["X86_64", "aarch64"]), "OpSys": "LINUX",
                  "State": rng.choice(states)}
            if rng.random() < 0.2:
                ad["SlotBackfill"] = True
            if rng.random() < 0.1:
                ad["ClassAdLifetime"] = rng.choice([1, 5])
            store.update("Machine", ad, None, mono, 1e9 + mono)
        elif op < 0.8:
            store.refresh("Machine", [{"Name": name, "State": rng.choice(states)} if rng.random() < 0.5 else name],
                          mono, 1e9 + mono)
        elif op < 0.9:
            store.invalidate("Machine", name)
        else:
            store.expire(mono)
        if step % 7 == 0:
            if store.due(mono):
                store.expire(mono)
            got = store.grouped("Machine", store.names_for("Machine", NAMES), mono)
            assert got is not None
            assert _answer(store, got) == _fresh(store, mono), step
    assert store.tallies["machine"]  # the answers came from a kept tally


def test_a_second_spelling_or_a_list_drops_the_tally() -> None:
    store = AdStore(100.0)
    store.update("Machine", {"Name": "a", "State": "Claimed"}, None, 0.0, 1e9)
    got = store.grouped("Machine", store.names_for("Machine", ["State"]), 0.0)
    assert got == {"ads": [{"State": "Claimed"}], "counts": [1]}
    store.update("Machine", {"Name": "b", "state": "Owner"}, None, 0.0, 1e9)
    assert not store.tallies["machine"]
    assert store.grouped("Machine", store.names_for("Machine", ["State"]), 0.0) is None  # two spellings
    store.update("Machine", {"Name": "c", "L": [1]}, None, 0.0, 1e9)
    assert store.grouped("Machine", store.names_for("Machine", ["L"]), 0.0) is None
    store.update("Machine", {"Name": "d", "M": 1}, None, 0.0, 1e9)
    got = store.grouped("Machine", store.names_for("Machine", ["M"]), 0.0)
    assert sorted(zip(map(str, got["ads"]), got["counts"])) == [("{'M': 1}", 1), ("{}", 3)]
    store.update("Machine", {"Name": "e", "M": [2]}, None, 0.0, 1e9)  # a list arrives: no tally
    assert ("M",) not in store.tallies["machine"]
