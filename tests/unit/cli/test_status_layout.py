"""condor_status's tables, byte for byte (HTCondor's print formats for output that is not a terminal)."""

from __future__ import annotations

from roost.cli import status_cmd
from roost.cli import status_layout as lay

NOW = 100000


def slot(name: str, state: str = "Unclaimed", activity: str = "Idle", **kw: object) -> dict[str, object]:
    ad: dict[str, object] = {"Name": name, "Machine": name.partition("@")[2] or name, "OpSys": "LINUX",
                             "Arch": "X86_64", "State": state, "Activity": activity, "CondorLoadAvg": 0.0,
                             "Memory": 1966, "EnteredCurrentActivity": NOW - 898, "MyCurrentTime": NOW}
    ad.update(kw)
    return ad


def test_normal_view_columns_and_summary() -> None:
    ads = [slot("slot1@host.example.org"),
           slot("slot2@host.example.org", "Claimed", "Busy", CondorLoadAvg=1.0625, Memory=512,
                EnteredCurrentActivity=NOW - 90061)]
    out = status_cmd._table(ads, [], "Machine", "normal", False, False, False)
    assert out.splitlines() == [
        "Name" + " " * 30 + " OpSys      Arch     State     Activity LoadAv Mem     ActvtyTime",
        "",
        "slot1@host.example.org" + " " * 12 + " LINUX      X86_64   Unclaimed Idle      0.000   1966  0+00:14:58",
        "slot2@host.example.org" + " " * 12 + " LINUX      X86_64   Claimed   Busy      1.062    512  1+01:01:01",
        "",
        " " * 14 + " Total Owner Claimed Unclaimed Matched Preempting  Drain Backfill BkIdle",
        "",
        "  X86_64/LINUX     2     0       1         1       0          0      0        0      0",
        "",
        "         Total     2     0       1         1       0          0      0        0      0",
    ]


def test_long_names_overflow_short_columns_cut_and_missing_values_print_question_marks() -> None:
    long_name = "slot1_12@a-very-long-host-name.example.org"
    ad = slot(long_name, OpSys="FREEBSD13_EXTRA", Arch="AARCH64_LONG")
    del ad["CondorLoadAvg"]
    del ad["MyCurrentTime"]
    row = lay.render([ad], lay.normal_cols(False)).splitlines()[2]
    assert row.startswith(long_name + " FREEBSD13_ AARCH64_ Unclaimed Idle    ")
    assert row.endswith("     ??   1966           -")


def test_wide_view_left_aligns_activity_time_and_keys_totals_by_their_length() -> None:
    out = status_cmd._table([slot("slot1@h")], [], "Machine", "normal", False, True, False).splitlines()
    assert out[0].endswith("Mem    ActivityTime")
    assert out[2].endswith("  1966   0+00:14:58")
    assert out[4] == " " * 12 + " Total Owner Claimed Unclaimed Matched Preempting  Drain Backfill BkIdle"
    assert out[6] == "X86_64/LINUX     1     0       0         1       0          0      0        0      0"


def test_totals_only_is_the_summary_after_a_blank_line() -> None:
    out = status_cmd._table([slot("slot1@h")], [], "Machine", "normal", False, False, True)
    assert out.startswith("\n" + " " * 14 + " Total Owner") and "slot1@h" not in out


def test_claimed_view_and_its_summary() -> None:
    ad = slot("slot1@h", "Claimed", "Busy", RemoteUser="alice@h", ClientMachine="submit.example.org",
              LoadAvg=1.5, Mips=100, KFlops=2000)
    out = status_cmd._table([ad], [], "Machine", "claimed", False, False, False).splitlines()
    assert out[0] == "Name" + " " * 30 + " OpSys      Arch     LoadAv RemoteUser           ClientMachine   "
    assert out[2] == "slot1@h" + " " * 27 + " LINUX      X86_64    0.000 alice@h              submit.example.o"
    assert out[4] == " " * 14 + " Machines         MIPS       KFLOPS   AvgLoadAvg"
    assert out[6] == "  X86_64/LINUX        1          100         2000   1.500"


def test_state_view_keys_its_summary_by_activity() -> None:
    ad = slot("slot1@h", KeyboardIdle=65, Cpus=4, EnteredCurrentState=NOW - 5)
    out = status_cmd._table([ad], [], "Machine", "state", False, False, False).splitlines()
    # headings are padded to their column's width (" Mem" to 5, "  KbdIdle" to 12, ...)
    assert out[0] == "Name" + " " * 30 + " Cpu  Mem  LoadAv   KbdIdle    State     StateTime  Activ   ActvtyTime"
    assert out[2] == "slot1@h" + " " * 27 + " 4    1966  0.000   0+00:01:05 Unclaim   0+00:00:05 Idle    0+00:14:58"
    assert out[4] == " " * 14 + " Total Owner Unclaimed Claimed Preempting Matched  Drain Backfill BkIdle"
    assert out[6] == "          Idle     1     0         1       0          0       0      0        0      0"


def test_compact_folds_a_partitionable_slot_and_static_slots_per_machine() -> None:
    pslot = slot("slot1@a", Machine="a", PartitionableSlot=True, SlotType="Partitionable", SlotTypeID=1,
                 NumDynamicSlots=2, Cpus=2, Memory=2048, TotalSlotCpus=8, TotalSlotMemory=16384,
                 TotalSlotGPUs=0, TotalLoadAvg=2.0, TotalCpus=8, OpSysAndVer="Debian12")
    dyn = [slot(f"slot1_{i}@a", "Claimed", "Busy", Machine="a", DynamicSlot=True, SlotTypeID=-1,
                Memory=1024 * (i + 1), RemoteUser="alice") for i in range(2)]
    statics = [slot(f"slot{i}@b", Machine="b", SlotType="Static", SlotTypeID=1, Cpus=1, Memory=1024,
                    TotalSlotCpus=1, TotalSlotMemory=1024, RecentJobStarts=20 * i,
                    TotalSlotGPUs=0, TotalLoadAvg=0.5, TotalCpus=2, OpSysAndVer="Debian12",
                    State="Claimed" if i == 1 else "Unclaimed", Activity="Busy" if i == 1 else "Idle")
               for i in (1, 2)]
    out = status_cmd._table([pslot, *statics], dyn, "Machine", "normal", True, False, False).splitlines()
    assert out[0] == ("Machine Platform     Slots Cpus Gpus  TotalGb FreCpu  FreeGb  CpuLoad ST "
                      "Jobs/Min MaxSlotGb")
    assert out[2] == "a       x64/Debian12    2     8    0    16.00      2     2.00    0.25 Ui _             2.00"
    # static slots: Cpus and TotalGb stay the first slot's; free resources and job starts add up
    assert out[3] == "b       x64/Debian12    2S    1    0     1.00      1     1.00    0.25 **     3.00      1.00"
    # the summary counts the slots themselves: a's two claimed dynamic slots and its unclaimed rest
    assert out[7] == "  x64/Debian12     5     0       3         2       0          0      0        0      0"


def test_schedd_and_submitter_tables() -> None:
    schedds = [{"Name": "s1", "Machine": "m1", "TotalRunningJobs": 3, "TotalIdleJobs": 10, "TotalHeldJobs": 0}]
    out = status_cmd._table(schedds, [], "Scheduler", "normal", False, False, False).splitlines()
    assert out == ["Name Machine RunningJobs   IdleJobs   HeldJobs", "",
                   "s1   m1                3         10          0", "",
                   # condor_status: "%14.14s" keys, "%18s %18s %18s" heading, "%18d %18d %18d" totals
                   "%14.14s%18s %18s %18s" % ("", "TotalRunningJobs", "TotalIdleJobs", "TotalHeldJobs"),  # noqa: UP031
                   "",
                   " " * 14, "%14.14s%18d %18d %18d" % ("Total", 3, 10, 0)]  # noqa: UP031
    subs = [{"Name": "alice@pool", "Machine": "m1", "RunningJobs": 1, "IdleJobs": 2, "HeldJobs": 3},
            {"Name": "bob@pool", "Machine": "m1", "RunningJobs": 4, "IdleJobs": 0, "HeldJobs": 0}]
    out = status_cmd._table(subs, [], "Submitter", "normal", False, False, False).splitlines()
    assert out[5:] == ["          RunningJobs   IdleJobs   HeldJobs", "",
                       "alice@pool          1          2          3",
                       "  bob@pool          4          0          0", "",
                       "     Total          5          2          3"]


def test_sort_orders_by_expressions_then_machine_and_name() -> None:
    ads = [slot("slot10@a", Cpus=1), slot("slot2@a", Cpus=1), slot("slot1@b", Cpus=4)]
    assert [a["Name"] for a in status_cmd._sort(ads, [], False)] == ["slot2@a", "slot10@a", "slot1@b"]
    assert [a["Name"] for a in status_cmd._sort(ads, ["Cpus * -1"], False)][0] == "slot1@b"
    assert [a["Name"] for a in status_cmd._sort(ads, ["none"], False)] == ["slot10@a", "slot2@a", "slot1@b"]


def test_options_take_prefixes_and_repeat() -> None:
    opts, many = status_cmd._parse(["-avail", "-const", "Cpus > 1", "-cons", "Memory > 1", "-sort", "Memory",
                                    "-lim", "3", "-format", "%s\\n", "Name", "host1"])
    assert opts.avail and opts.limit == "3" and opts.positional == ["host1"]
    assert many == {"constraint": ["Cpus > 1", "Memory > 1"], "sort": ["Memory"], "format": [("%s\\n", "Name")]}


def test_compact_names_a_machines_further_slot_type_by_its_slot() -> None:
    pslot = slot("slot1@a", Machine="a", PartitionableSlot=True, SlotType="Partitionable", SlotTypeID=1,
                 NumDynamicSlots=0, Cpus=2, Memory=2048, TotalSlotCpus=2, TotalSlotMemory=2048,
                 TotalSlotGPUs=0, TotalLoadAvg=0.0, TotalCpus=4, OpSysAndVer="Debian12")
    static = slot("slot2@a", Machine="a", SlotType="Static", SlotTypeID=2, Cpus=2, Memory=1024,
                  TotalSlotCpus=2, TotalSlotMemory=1024, TotalSlotGPUs=0, TotalLoadAvg=0.0, TotalCpus=4,
                  OpSysAndVer="Debian12")
    out = status_cmd._table([pslot, static], [], "Machine", "normal", True, False, False).splitlines()
    assert out[0].startswith("Machine Platform ")
    assert out[2].startswith("a       x64/Debian12    0 ")
    assert out[3].startswith("   slot2 x64/Debian12    1S")
