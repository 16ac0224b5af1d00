"""`roost status` views from a real collector: the projected, grouped and batched paths
print exactly what the whole ads print, and UPDATE_ADS / refresh keep the collector's
soft state as single updates do."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from roost.cli import status_cmd
from roost.cli import status_layout as lay
from roost.net.errors import RemoteError
from roost.net.syncclient import SyncClient

from .daemon_procs import make_home, pool_token, start_daemon, stop_daemon

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
from collector_bench import machine_ads  # noqa: E402


def _odd_ads(now: int) -> list[dict]:
    """Slots the bench's machines do not show: backfill, drained, matched, preempting, an
    ad without Arch, a partitionable slot without NumDynamicSlots, a lower-case spelling."""
    base = {"MyType": "Machine", "Machine": "odd.example.org", "OpSys": "LINUX", "Arch": "X86_64",
            "OpSysAndVer": "Rocky9", "Cpus": 1, "Memory": 100, "Activity": "Idle", "MyCurrentTime": now,
            "EnteredCurrentActivity": now - 5, "SlotTypeID": 1, "SlotType": "Static",
            "TotalSlotCpus": 1, "TotalSlotMemory": 100, "TotalCpus": 8, "TotalLoadAvg": 0.5}
    ads = []
    for i, (state, extra) in enumerate([("Unclaimed", {"SlotBackfill": True}), ("Claimed", {"SlotBackfill": True}),
                                        ("Drained", {}), ("Matched", {}), ("Preempting", {"Activity": "Vacating"}),
                                        ("Claimed", {"Arch": None}), ("Owner", {"memory": 7, "Memory": None})]):
        ad = {**base, "Name": f"slot{i + 1}@odd.example.org", "State": state, **extra}
        ads.append({k: v for k, v in ad.items() if v is not None})
    ads.append({**base, "Machine": "p.example.org", "Name": "slot1@p.example.org", "SlotType": "Partitionable",
                "PartitionableSlot": True, "Cpus": 6, "Memory": 600, "State": "Unclaimed"})
    ads.append({**base, "Machine": "p.example.org", "Name": "slot1_1@p.example.org", "SlotType": "Dynamic",
                "DynamicSlot": True, "SlotTypeID": -1, "State": "Claimed", "RemoteUser": "ann@x"})
    return ads


@pytest.fixture(scope="module")
def fed(tmp_path_factory):
    home = make_home(tmp_path_factory.mktemp("views"))
    proc, address = start_daemon("collector", home)
    try:
        now = int(time.time())
        with SyncClient(address, timeout=30, token=pool_token(home)) as c:
            for i in range(12):
                got = c.call("UPDATE_ADS", type="Machine", ads=[{"ad": a, "private": {"ClaimId": f"c-{a['Name']}"}}
                                                                for a in machine_ads(i, now)])
                assert got == {"updated": 32, "missing": []}
            for a in _odd_ads(now):
                c.call("UPDATE_AD", type="Machine", ad=a)
            full = c.call("QUERY", type="Machine")["ads"]
        yield home, proc, address, full
    finally:
        stop_daemon(proc)


def _status(capsys, address: str, *args: str) -> str:
    capsys.readouterr()
    assert status_cmd.main(["-pool", address, "-wide", *args]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("view", [[], ["-state"]], ids=["normal", "state"])
def test_grouped_totals_are_the_totals_of_the_whole_ads(fed, capsys, view):
    _, _, address, full = fed
    out = _status(capsys, address, "-totals", *view)
    expected = "\n" + lay.slot_totals(status_cmd._sort(full, [], False), state_view=bool(view), wide=True)
    assert out == expected


def test_totals_count_every_slot(fed, capsys):
    _, _, address, full = fed
    out = _status(capsys, address, "-totals")
    total_row = [ln for ln in out.splitlines() if ln.strip().startswith("Total ") or ln.split()[:1] == ["Total"]][-1]
    # every slot with an Arch and OpSys is counted once (the one without Arch is not)
    countable = [a for a in full if "Arch" in a and a.get("State") in
                 ("Owner", "Unclaimed", "Claimed", "Matched", "Preempting", "Drained")]
    assert int(total_row.split()[1]) == len(countable) - sum(1 for a in countable if a.get("SlotBackfill")
                                                             and a["State"] == "Unclaimed")


@pytest.mark.parametrize("args", [["-totals"], ["-state", "-totals"], [], ["-compact"], ["-compact", "-claimed"], ["-claimed", "-totals"],
                                  ["-compact", "-totals"], ["-sort", "Memory"], ["-totals", "-limit", "40"]],
                         ids=["totals", "state-totals", "default", "compact", "compact-claimed", "claimed-totals", "compact-totals",
                              "sort", "limit-totals"])
def test_projected_views_print_what_whole_ads_print(fed, capsys, monkeypatch, args):
    _, _, address, _ = fed
    projected = _status(capsys, address, *args)
    # the same view from whole ads, by the collector's constraints (as before projections)
    monkeypatch.setattr(status_cmd, "_projection", lambda *a, **k: None)
    monkeypatch.setattr(status_cmd, "_split_compact", lambda ads: (None, []))
    monkeypatch.setattr(status_cmd.Collector, "query_grouped",
                        lambda self, t, c, p: (ads := self.query_objs(t, c, None), [1] * len(ads)))
    whole = _status(capsys, address, *args)
    assert projected == whole
    assert projected.count("\n") > 5


def test_refresh_renews_only_what_the_collector_holds(tmp_path):
    home = make_home(tmp_path, "CLASSAD_LIFETIME = 2\n")
    proc, address = start_daemon("collector", home)
    try:
        with SyncClient(address, timeout=10, token=pool_token(home)) as c:
            got = c.call("UPDATE_ADS", type="Machine", ads=[{"ad": {"Name": "a@h", "Cpus": 1}},
                                                            {"ad": {"Name": "b@h", "R": "/Expr(1 +)/"}},
                                                            {"ad": {"Cpus": 2}}, {"ad": {"Name": "c@h"}, "private": 3}])
            assert got["updated"] == 1 and [e["index"] for e in got["errors"]] == [1, 2, 3]
            assert "bad expression" in got["errors"][0]["error"] and "Name" in got["errors"][1]["error"]
            first = c.call("QUERY", type="Machine", projection=["Name", "LastHeardFrom"])["ads"]
            assert [a["Name"] for a in first] == ["a@h"]
            deadline = time.monotonic() + 6
            while time.monotonic() < deadline:  # refreshed before it expires, it stays
                assert c.call("UPDATE_ADS", type="Machine", refresh=["A@h", "nope@h"])["missing"] == ["nope@h"]
                time.sleep(0.5)
            ads = c.call("QUERY", type="Machine", projection=["Name", "LastHeardFrom"])["ads"]
            assert [a["Name"] for a in ads] == ["a@h"] and ads[0]["LastHeardFrom"] > first[0]["LastHeardFrom"]
            deadline = time.monotonic() + 15  # not refreshed, it expires
            while c.call("QUERY", type="Machine")["ads"] and time.monotonic() < deadline:
                time.sleep(0.2)
            assert c.call("QUERY", type="Machine")["ads"] == []
            assert c.call("UPDATE_ADS", type="Machine", refresh=["a@h"])["missing"] == ["a@h"]
            c.call("UPDATE_ADS", type="Machine", ads=[{"ad": {"Name": f"s{i}@h", "State": s, "L": [1, i % 2]}}
                                                      for i, s in enumerate(["Claimed", "Owner", "Claimed"])])
            grouped = c.call("QUERY", type="Machine", projection=["state"], group=True)
            assert grouped == {"ads": [{"State": "Claimed"}, {"State": "Owner"}], "counts": [2, 1]}
            grouped = c.call("QUERY", type="Machine", projection=["L"], group=True)  # lists group too
            assert sorted(zip(grouped["counts"], map(str, grouped["ads"]))) == [(1, "{'L': [1, 1]}"),
                                                                               (2, "{'L': [1, 0]}")]
            with pytest.raises(RemoteError):
                c.call("QUERY", type="Machine", group=True)
    finally:
        stop_daemon(proc)
