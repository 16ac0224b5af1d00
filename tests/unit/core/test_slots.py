"""Slot layout, carving and returning, and the slot ads the collector sees."""

from __future__ import annotations

import itertools

import pytest

from roost.classad import ClassAd
from roost.core import slots as S

MACHINE = S.Machine(
    name="exec.example.org",
    total=S.Resources(8, 16384, 1_000_000, ("GPU-0", "GPU-1")),
    opsys_and_ver="Debian12",
)


def ids():
    return (f"claim-{n}" for n in itertools.count(1))


def job(**attrs) -> ClassAd:
    base = {"Owner": "alice", "User": "alice@example.org", "Requirements": True}
    base.update(attrs)
    return ClassAd(base)


def test_default_is_one_partitionable_slot_of_the_whole_machine():
    types = S.slot_types_from_config({}, None)
    table = S.layout(types, MACHINE, ids(), now=100.0)
    assert list(table) == ["slot1"]
    s = table["slot1"]
    assert s.kind == S.PARTITIONABLE
    assert s.total == MACHINE.total == s.free
    assert s.state == "Unclaimed" and s.activity == "Idle" and s.entered_state == 100.0


def test_num_slots_gives_equal_static_slots():
    machine = S.Machine(name="h", total=S.Resources(8, 8000, 800))
    table = S.layout(S.slot_types_from_config({}, 8), machine, ids(), 0.0)
    assert [s.name for s in table.values()] == [f"slot{i}" for i in range(1, 9)]
    assert {s.total for s in table.values()} == {S.Resources(1, 1000, 100)}
    assert all(s.kind == S.STATIC for s in table.values())
    assert len({s.claim_id for s in table.values()}) == 8


def test_slot_types_name_some_resources_and_split_the_rest():
    machine = S.Machine(name="h", total=S.Resources(4, 4096, 4000))
    types = S.slot_types_from_config(
        {1: ("cpus=2, memory=2048", 1, False), 2: ("cpus=1", 2, False)}, None
    )
    table = S.layout(types, machine, ids(), 0.0)
    assert table["slot1"].total == S.Resources(2, 2048, 1333)
    assert table["slot2"].total == S.Resources(1, 1024, 1333)
    assert table["slot3"].type_id == 2


def test_percent_fraction_and_units():
    machine = S.Machine(name="h", total=S.Resources(4, 4096, 4096))
    table = S.layout(
        [S.SlotType(1, "cpus=50%, ram=1G, disk=1/4", 1, True)], machine, ids(), 0.0
    )
    assert table["slot1"].total == S.Resources(2, 1024, 1024)


@pytest.mark.parametrize(
    "spec,count",
    [("cpus=5", 1), ("cpus=1", 9), ("bogus=1", 1), ("cpus=x", 1), ("100%", 2)],
)
def test_impossible_layouts_are_refused(spec, count):
    machine = S.Machine(name="h", total=S.Resources(4, 4096, 4096))
    with pytest.raises(S.SlotConfigError):
        S.layout([S.SlotType(1, spec, count, False)], machine, ids(), 0.0)


def test_carve_and_give_back_restore_the_partitionable_slot():
    table = S.layout(S.slot_types_from_config({}, None), MACHINE, ids(), 0.0)
    p = table["slot1"]
    claim = S.Claim(schedd_address="127.0.0.1:9", user="alice@example.org")
    p1, d1 = S.carve(p, S.Resources(2, 1024, 2048, ("x",)), claim, "d-1", 5.0)
    p2, d2 = S.carve(p1, S.Resources(1, 128, 1024), claim, "d-2", 6.0)
    assert (d1.name, d2.name) == ("slot1_1", "slot1_2")
    assert d1.kind == S.DYNAMIC and d1.state == "Claimed" and d1.claim_id == "d-1"
    assert d1.total.gpus == ("GPU-0",)
    assert p2.free == S.Resources(5, 16384 - 1152, 1_000_000 - 3072, ("GPU-1",))
    back = S.give_back(S.give_back(p2, d1), d2)
    assert back.free == MACHINE.total
    # numbering goes on: a new dynamic slot never reuses a name still known to schedds
    _, d3 = S.carve(back, S.Resources(1, 1, 1), claim, "d-3", 7.0)
    assert d3.name == "slot1_3"


def test_carve_refuses_what_does_not_fit():
    p = S.layout(S.slot_types_from_config({}, None), MACHINE, ids(), 0.0)["slot1"]
    with pytest.raises(S.SlotError, match="free"):
        S.carve(p, S.Resources(9, 1, 1), S.Claim(), "d", 0.0)
    with pytest.raises(S.SlotError):
        S.carve(p, S.Resources(1, 1, 1, ("a", "b", "c")), S.Claim(), "d", 0.0)


def test_static_claim_and_release_changes_claim_id():
    machine = S.Machine(name="h", total=S.Resources(2, 2048, 2048))
    table = S.layout(S.slot_types_from_config({}, 2), machine, ids(), 0.0)
    s = S.claim_static(table["slot1"], S.Claim(user="bob"), 3.0)
    assert s.state == "Claimed" and s.entered_state == 3.0 and s.claim.user == "bob"
    with pytest.raises(S.SlotError):
        S.claim_static(s, S.Claim(), 4.0)
    free = S.unclaim_static(s, "fresh", 9.0)
    assert free.state == "Unclaimed" and free.claim is None and free.claim_id == "fresh"
    assert free.claim_id != s.claim_id
    assert S.is_free(free) and not S.is_free(s)


def test_transitions_follow_the_state_diagram():
    s = S.layout(S.slot_types_from_config({}, 1), S.Machine("h", S.Resources(1, 1, 1)), ids(), 0)
    slot = s["slot1"]
    busy = S.transition(S.transition(slot, "Claimed", "Idle", 1), "Claimed", "Busy", 2)
    assert busy.entered_state == 1 and busy.entered_activity == 2
    with pytest.raises(S.SlotError):
        S.transition(busy, "Claimed", "Vacating", 3)
    with pytest.raises(S.SlotError):
        S.transition(slot, "Preempting", "Vacating", 3)


def test_request_size_quantizes_like_htcondor():
    p = S.layout(S.slot_types_from_config({}, None), MACHINE, ids(), 0.0)["slot1"]
    ad = S.slot_ad(p, MACHINE, S.Policy(), "127.0.0.1:1", 0.0)
    want = S.request_size(job(RequestCpus=2, RequestMemory=300, RequestDisk=10), ad, S.Policy())
    assert want == S.Resources(2, 384, 1024)
    # expressions are evaluated against the slot; undefined requests get the defaults
    j = job(RequestMemory=ClassAd("[x = TARGET.TotalMemory / 128]").lookup("x"))
    want = S.request_size(j, ad, S.Policy())
    assert want == S.Resources(1, 128, 1024)


def test_accepts_checks_start_and_both_requirements():
    p = S.layout(S.slot_types_from_config({}, None), MACHINE, ids(), 0.0)["slot1"]
    policy = S.Policy(start='TARGET.Owner != "mallory"')
    ad = S.slot_ad(p, MACHINE, policy, "127.0.0.1:1", 0.0)
    assert S.accepts(ad, job()) is None
    assert "START" in S.accepts(ad, job(Owner="mallory"))
    j = job(Requirements=ClassAd("[r = TARGET.Cpus > 100]").lookup("r"))
    assert "job's Requirements" in S.accepts(ad, j)


def test_slot_ads_carry_htcondor_attributes():
    p = S.layout(S.slot_types_from_config({}, None), MACHINE, ids(), 0.0)["slot1"]
    claim = S.Claim(schedd_address="127.0.0.1:7", user="alice@example.org", job="3.1", job_start=8)
    p, d = S.carve(p, S.Resources(2, 1024, 1024), claim, "d-1", 5.0)
    d = S.transition(d, "Claimed", "Busy", 8.0)
    pad = S.slot_ad(p, MACHINE, S.Policy(), "127.0.0.1:5", 9.0)
    dad = S.slot_ad(d, MACHINE, S.Policy(), "127.0.0.1:5", 9.0)
    assert pad["Name"] == "slot1@exec.example.org"
    assert pad["SlotType"] == "Partitionable" and pad["PartitionableSlot"] is True
    assert pad.eval("Cpus") == 6 and pad.eval("TotalSlotCpus") == 8 and pad.eval("TotalCpus") == 8
    assert dad["Name"] == "slot1_1@exec.example.org" and dad["SlotType"] == "Dynamic"
    assert dad.eval("Cpus") == 2 and dad.eval("Memory") == 1024
    assert dad["State"] == "Claimed" and dad["Activity"] == "Busy"
    assert dad["EnteredCurrentActivity"] == 8 and dad["JobId"] == "3.1"
    assert dad["RemoteUser"] == "alice@example.org"
    assert dad.eval("Requirements") is True and dad.eval("SlotWeight") == 2
    assert pad["MyAddress"] == "127.0.0.1:5" and pad["HasFileTransfer"] is True
    assert pad["OpSysAndVer"] == "Debian12" and pad["Arch"] == "X86_64"
    assert "ClaimId" not in pad


def test_expired_leases():
    c = S.Claim(lease=10, lease_expires=50)
    table = S.layout(S.slot_types_from_config({}, 2), S.Machine("h", S.Resources(2, 2, 2)), ids(), 0)
    a = S.claim_static(table["slot1"], c, 40)
    b = S.claim_static(table["slot2"], S.Claim(lease=0), 40)
    assert S.expired([a, b], 49) == []
    assert S.expired([a, b], 51) == ["slot1"]


def test_gpu_requests_carve_named_devices():
    p = S.layout(S.slot_types_from_config({}, None), MACHINE, ids(), 0.0)["slot1"]
    ad = S.slot_ad(p, MACHINE, S.Policy(), "127.0.0.1:1", 0.0)
    assert ad["GPUs"] == 2 and ad["AssignedGPUs"] == "GPU-0,GPU-1"
    want = S.request_size(job(RequestGPUs=1), ad, S.Policy())
    assert len(want.gpus) == 1
    p, d = S.carve(p, want, S.Claim(), "g", 0.0)
    assert d.total.gpus == ("GPU-0",) and p.free.gpus == ("GPU-1",)
    assert S.slot_ad(d, MACHINE, S.Policy(), "a", 0.0)["AssignedGPUs"] == "GPU-0"
    with pytest.raises(S.SlotError):
        S.carve(p, S.request_size(job(RequestGPUs=2), ad, S.Policy()), S.Claim(), "h", 0.0)
    assert S.request_size(job(), ad, S.Policy()).gpus == ()


def test_readopt_takes_back_dynamic_slots_with_their_devices_and_ids():
    """A restarted startd carves again what its predecessor had carved: same names,
    same GPUs, same claim ids, Busy; numbering goes on after the highest."""
    table = S.layout(S.slot_types_from_config({}, None), MACHINE, ids(), 0.0)
    claim = S.Claim(schedd_address="127.0.0.1:9", user="alice@example.org", job="1.0")
    for slot in S.readopt(table, "slot1_3", S.Resources(2, 1024, 10, ("GPU-1",)), claim, "old-3", 5.0):
        table[slot.name] = slot
    for slot in S.readopt(table, "slot1_1", S.Resources(1, 512, 10), claim, "old-1", 5.0):
        table[slot.name] = slot
    d3, d1 = table["slot1_3"], table["slot1_1"]
    assert (d3.claim_id, d3.state, d3.activity, d3.total.gpus) == ("old-3", "Claimed", "Busy", ("GPU-1",))
    assert d1.claim_id == "old-1" and d1.sub_id == 1 and d1.claim == claim
    assert table["slot1"].free == S.Resources(5, 16384 - 1536, 1_000_000 - 20, ("GPU-0",))
    _, d4 = S.carve(table["slot1"], S.Resources(1, 1, 1), claim, "new", 6.0)
    assert d4.name == "slot1_4"
    with pytest.raises(S.SlotError, match="exists"):
        S.readopt(table, "slot1_3", S.Resources(1, 1, 1), claim, "again", 7.0)
    with pytest.raises(S.SlotError, match="free"):  # that GPU is taken
        S.readopt(table, "slot1_7", S.Resources(1, 1, 1, ("GPU-1",)), claim, "x", 7.0)
    with pytest.raises(S.SlotError, match="no partitionable"):
        S.readopt(table, "slot9_1", S.Resources(1, 1, 1), claim, "x", 7.0)


def test_readopt_takes_back_a_static_slot_only_as_it_was():
    machine = S.Machine(name="h", total=S.Resources(2, 2048, 2048))
    table = S.layout(S.slot_types_from_config({}, 2), machine, ids(), 0.0)
    size = table["slot2"].total
    [s] = S.readopt(table, "slot2", size, S.Claim(user="bob"), "kept-id", 3.0)
    assert (s.state, s.activity, s.claim_id, s.claim.user) == ("Claimed", "Busy", "kept-id", "bob")
    with pytest.raises(S.SlotError, match="no longer"):  # the configuration changed its size
        S.readopt(table, "slot1", S.Resources(2, 2048, 2048), S.Claim(), "x", 3.0)
