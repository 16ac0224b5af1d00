"""condor_status's tables: the columns of each view and the summary that follows them.

Pure formatting over JSON-form ads (no daemon, no clock: "now" is each ad's
``MyCurrentTime``), so the layouts are unit-tested byte for byte. They follow
HTCondor's print formats for output that is not a terminal (what a script
reads): columns joined by one space, a fixed WIDTH padded (negative: left
aligned) and cut unless the column may overflow, an AUTO width as wide as its
heading or widest value, then a blank line, and after the rows a blank line and
the totals table keyed by Arch/OpSys (or platform, user, activity) at width 14
(``-wide``: the longest key).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from roost.cli.printf import _duration
from roost.vocabulary import Activity, SlotState

Ad = dict[str, Any]

_STATE_LETTERS = SlotState.LETTERS
_ACT_LETTERS = Activity.LETTERS


class Col:
    """One column: its heading, how a value is drawn from an ad, and its width rule.

    ``width`` > 0 right-aligns, < 0 left-aligns, ``None`` is AUTO (left, at least the
    heading); ``cut`` truncates to the width; ``noprefix`` drops the separating space.
    """

    def __init__(self, head: str, get: Callable[[Ad], str | None], width: int | None = None, *,
                 cut: bool = True, noprefix: bool = False, alt: str = "",
                 sized_by: Callable[[Ad], str | None] | None = None) -> None:
        self.head, self.get, self.width, self.cut, self.noprefix, self.alt = head, get, width, cut, noprefix, alt
        #: an AUTO column whose values change after condor_status sized it (-compact's
        #: "   slot2" rows): the heading is sized by these, and a longer value met later
        #: widens the column from that row on
        self.sized_by = sized_by


def attr(name: str) -> Callable[[Ad], Any]:
    """The value of ``name`` (case-insensitive, as ClassAds are), None when absent."""
    low = name.lower()

    def get(ad: Ad) -> Any:
        if name in ad:
            return ad[name]
        return next((v for k, v in ad.items() if k.lower() == low), None)
    return get


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def text(name: str) -> Callable[[Ad], str | None]:
    g = attr(name)

    def get(ad: Ad) -> str | None:
        v = g(ad)
        if v is None or (isinstance(v, str) and v.startswith("/Expr(")):
            return None
        if isinstance(v, bool):
            return "true" if v else "false"
        return str(v)
    return get


def printf(name: str | Callable[[Ad], Any], fmt: str) -> Callable[[Ad], str | None]:
    """``PRINTF fmt`` of a number (an int format takes the integer part, as HTCondor does)."""
    g = attr(name) if isinstance(name, str) else name

    def get(ad: Ad) -> str | None:
        v = g(ad)
        if not _num(v):
            return None
        return fmt % (int(v) if fmt.endswith("d") else float(v))
    return get


def elapsed(seconds: float) -> str:
    """HTCondor's ``%T`` (``%3d+%02d:%02d:%02d``), never negative."""
    return _duration(max(0, int(seconds)))


def _now(ad: Ad) -> Any:
    now = attr("MyCurrentTime")(ad)
    return now if _num(now) else attr("LastHeardFrom")(ad)


def since(name: str) -> Callable[[Ad], str | None]:
    """``PRINTAS ACTIVITY_TIME``/``ELAPSED_TIME``: now minus the time in ``name``."""
    g = attr(name)

    def get(ad: Ad) -> str | None:
        t, now = g(ad), _now(ad)
        return elapsed(now - t) if _num(t) and _num(now) else None
    return get


def activity_code(ad: Ad) -> str:
    return (_STATE_LETTERS.get(str(attr("State")(ad)), " ")
            + _ACT_LETTERS.get(str(attr("Activity")(ad)), " "))


def platform(ad: Ad) -> str | None:
    """``PRINTAS PLATFORM``: ``x64/Debian12``."""
    opsys = attr("OpSysShortName" if attr("OpSys")(ad) == "WINDOWS" else "OpSysAndVer")(ad)
    if not isinstance(opsys, str):
        return None
    arch = str(attr("Arch")(ad) or "")
    arch = {"X86_64": "x64", "X86": "x86"}.get(arch, arch)
    return f"{arch}/{opsys}"


def load_avg(name: str) -> Callable[[Ad], str | None]:
    g = attr(name)
    return lambda ad: f"{g(ad):.3f}" if _num(g(ad)) else None


def _ratio(num: str, den: str, scale: float = 1.0) -> Callable[[Ad], Any]:
    gn, gd = attr(num), attr(den)

    def get(ad: Ad) -> Any:
        n, d = gn(ad), gd(ad)
        return n * scale / d if _num(n) and _num(d) and d else None
    return get


def render(ads: list[Ad], cols: list[Col]) -> str:
    """The heading, a blank line and one line per ad."""
    cells = [[c.get(a) for c in cols] for a in ads]
    widths = []
    for i, c in enumerate(cols):
        if c.width is None:
            sizes = [c.sized_by(a) for a in ads] if c.sized_by else [r[i] for r in cells]
            widths.append(-max([len(c.head)] + [len(v if v is not None else c.alt) for v in sizes]))
        else:
            widths.append(c.width)
    lines = [_join(cols, [f"{c.head:<{abs(w)}}" for c, w in zip(cols, widths)]), ""]
    for row in cells:
        out = []
        for i, (c, v) in enumerate(zip(cols, row)):
            w = widths[i]
            s = c.alt if v is None else v
            n = abs(w)
            if c.width is None and len(s) > n:
                n = len(s)
                widths[i] = -n
            if len(s) > n and c.cut and c.width is not None:
                s = s[:n]
            out.append(f"{s:<{n}}" if w < 0 else f"{s:>{n}}")
        lines.append(_join(cols, out))
    return "\n".join(lines) + "\n"


def _join(cols: list[Col], parts: list[str]) -> str:
    s = ""
    for i, (c, p) in enumerate(zip(cols, parts)):
        s += ("" if i == 0 or c.noprefix else " ") + p
    return s


# -- the views ---------------------------------------------------------------------------

def normal_cols(wide: bool) -> list[Col]:
    """``condor_status`` (and ``-avail``)."""
    last = (Col("ActivityTime", since("EnteredCurrentActivity"), None, alt="-") if wide else
            Col("  ActvtyTime", since("EnteredCurrentActivity"), 12, noprefix=True, alt="-"))
    return [Col("Name", text("Name"), -34, cut=False, alt="??"),
            Col("OpSys", text("OpSys"), -10, alt="??"),
            Col("Arch", text("Arch"), -8, alt="??"),
            Col("State", text("State"), None, alt="??"),
            Col("Activity", _activity_or_ocu, -8, alt="??"),
            Col("LoadAv", load_avg("CondorLoadAvg"), 6, alt="??"),
            Col("Mem", printf("Memory", "%6d"), 6, alt="??"),
            last]


def _activity_or_ocu(ad: Ad) -> str:
    act = attr("Activity")(ad)
    if not isinstance(act, str) or not act:
        return "??"
    return "OCU" if act == Activity.IDLE and attr("OCU")(ad) is True else act


def run_cols() -> list[Col]:
    """``-claimed``/``-run``: who holds each claimed slot."""
    return [Col("Name", text("Name"), -34, cut=False, alt="??"),
            Col("OpSys", text("OpSys"), -10, alt="??"),
            Col("Arch", text("Arch"), -8, alt="??"),
            Col("LoadAv", load_avg("CondorLoadAvg"), 6, alt="??"),
            Col("RemoteUser", text("RemoteUser"), -20, alt="??"),
            Col("ClientMachine", text("ClientMachine"), -16, alt="??")]


def state_cols() -> list[Col]:
    """``-state``."""
    return [Col("Name", text("Name"), -34, cut=False, alt="??"),
            Col("Cpu", text("Cpus"), None, alt="??"),
            Col(" Mem", text("Memory"), 5, alt="??"),
            Col("LoadAv", load_avg("CondorLoadAvg"), 6, alt="??"),
            Col("  KbdIdle", lambda a: elapsed(a["KeyboardIdle"]) if _num(a.get("KeyboardIdle")) else None,
                12, alt="??"),
            Col("State", text("State"), -7, alt="??"),
            Col("  StateTime", since("EnteredCurrentState"), 12, alt="??"),
            Col("Activ", text("Activity"), None, alt="??"),
            Col("  ActvtyTime", since("EnteredCurrentActivity"), 12, alt="-")]


def compact_cols() -> list[Col]:
    """``-compact``: a line per machine (and slot type), from :func:`fold_compact` rows."""
    return [Col("Machine", _machine_cell, None, sized_by=text("Machine")),
            Col("Platform", platform, None),
            Col("Slot", printf("_Slots", "%4d"), None, alt=" "),
            Col("s", text("_SlotTag"), None, noprefix=True),
            Col("Cpus", printf("TotalSlotCpus", "%4d"), None),
            Col("Gpus", printf(lambda a: attr("TotalSlotGPUs")(a) or 0, "%4d"), None),
            Col(" TotalGb", printf(_ratio("TotalSlotMemory", "_One", 1 / 1024), "%8.2f"), None),
            Col("FreCpu", printf("_FreeCpus", "%6d"), None),
            Col(" FreeGb ", printf("_FreeGb", "%8.2f"), None),
            Col("CpuLoad", printf(_ratio("TotalLoadAvg", "TotalCpus"), "%7.2f"), None),
            Col("ST", text("_ActCode"), None),
            Col("Jobs/Min", printf(_ratio("_JobStarts", "_One", 1 / 20), "%8.2f"), None, alt="_"),
            Col("MaxSlotGb", printf("_MaxSlotGb", "%9.2f"), None, alt="*")]


def _machine_cell(row: Ad) -> str | None:
    """A machine's first row names it; a further row of the same machine (another slot
    type) shows ``   `` and its slot's name instead, as condor_status -compact does."""
    return row["_SlotLabel"] if "_SlotLabel" in row else text("Machine")(row)


def claimed_compact_cols() -> list[Col]:
    return [Col("Machine", _machine_cell, None, sized_by=text("Machine")),
            Col("Platform", platform, None),
            Col("Slot", printf("_Slots", "%4d"), None, alt=" "),
            Col("s", text("_SlotTag"), None, noprefix=True),
            Col("Users", text("_Users"), None)]


def fold_compact(ads: list[Ad], dynamic: list[Ad]) -> list[Ad]:
    """One row per machine and slot type, as condor_status -compact folds its slots:
    a partitionable slot with its dynamic slots (``dynamic``), static slots summed."""
    kids: dict[str, list[Ad]] = {}
    for d in dynamic:
        kids.setdefault(str(attr("Machine")(d)), []).append(d)
    rows: list[Ad] = []
    by_key: dict[tuple[str, Any], Ad] = {}
    for a in ads:
        key = (str(attr("Machine")(a)), attr("SlotTypeID")(a))
        busy = attr("State")(a) in (SlotState.CLAIMED, SlotState.MATCHED, SlotState.PREEMPTING)
        mem = attr("Memory")(a) if _num(attr("Memory")(a)) else 0
        cpus = attr("Cpus")(a) if _num(attr("Cpus")(a)) else 0
        if attr("PartitionableSlot")(a) is True:
            mine = [d for d in kids.get(key[0], []) if attr("SlotTypeID")(d) in (key[1], -key[1] if _num(key[1]) else None)]
            users = sorted({str(attr("RemoteUser")(d)) for d in mine if attr("RemoteUser")(d)})
            n = attr("NumDynamicSlots")(a)
            n = n if _num(n) else len(mine)
            row = {**a, "_One": 1, "_Slots": n, "_SlotTag": " ", "_FreeCpus": cpus,
                   "_JobStarts": attr("RecentJobStarts")(a),
                   "_FreeGb": mem / 1024, "_ActCode": activity_code(a),
                   "_MaxSlotGb": max((d.get("Memory") or 0 for d in mine), default=None),
                   "_Users": " ".join(users)}
            if row["_MaxSlotGb"] is not None:
                row["_MaxSlotGb"] /= 1024
            rows.append(row)
            continue
        row = by_key.get(key)
        if row is None:
            tag = str(attr("SlotType")(a) or "")
            # Cpus, TotalGb and CpuLoad stay the first slot's (condor_status folds only the
            # free, slot-count, largest-slot, job-start and state columns of static slots)
            starts = attr("RecentJobStarts")(a)
            row = {**a, "_One": 1, "_Slots": 0, "_SlotTag": "S" if tag == "Static" else tag[:1], "_FreeCpus": 0, "_FreeGb": 0.0,
                   "_MaxSlotGb": 0.0, "_ActCode": activity_code(a), "_Users": "",
                   "_JobStarts": 0 if _num(starts) else None}
            by_key[key] = row
            rows.append(row)
        row["_Slots"] += 1
        starts = attr("RecentJobStarts")(a)
        if row["_JobStarts"] is not None and _num(starts):
            row["_JobStarts"] += starts
        row["_MaxSlotGb"] = max(row["_MaxSlotGb"], mem / 1024)
        if not busy:
            row["_FreeCpus"] += cpus
            row["_FreeGb"] += mem / 1024
        if activity_code(a) != row["_ActCode"]:
            row["_ActCode"] = "**"
        user = attr("RemoteUser")(a)
        if user and str(user) not in row["_Users"].split():
            row["_Users"] = " ".join(sorted(row["_Users"].split() + [str(user)]))
    seen: set[str] = set()
    for row in rows:
        machine = str(attr("Machine")(row))
        if machine in seen:
            row["_SlotLabel"] = "   " + str(attr("Name")(row) or "").split("@")[0]
        seen.add(machine)
    return rows


def schedd_cols() -> list[Col]:
    return [Col("Name", text("Name"), None), Col("Machine", text("Machine"), None),
            Col("RunningJobs", printf("TotalRunningJobs", "%11d"), None),
            Col("  IdleJobs", printf("TotalIdleJobs", "%10d"), None),
            Col("  HeldJobs", printf("TotalHeldJobs", "%10d"), None)]


def submitter_cols() -> list[Col]:
    return [Col("Name", text("Name"), None), Col("Machine", text("Machine"), None),
            Col("RunningJobs", printf("RunningJobs", "%11d"), None),
            Col("  IdleJobs", printf("IdleJobs", "%10d"), None),
            Col("  HeldJobs", printf("HeldJobs", "%10d"), None)]


def negotiator_cols(date: Callable[[Any], str]) -> list[Col]:
    end, began = attr("LastNegotiationCycleEnd0"), attr("LastNegotiationCycleTime0")

    def g(ad: Ad) -> Any:  # roost's negotiator advertises when its last cycle ran, not when it ended
        v = end(ad)
        return v if _num(v) else began(ad)
    return [Col("Name", text("Name"), None),
            Col("LastCycleEnd", lambda a: date(g(a)) if _num(g(a)) else None, 12),
            Col("(Sec)", printf("LastNegotiationCycleDuration0", "%5d"), None),
            Col("  Slots", printf("LastNegotiationCycleCandidateSlots0", "%7d"), None),
            Col("Submitrs", printf("LastNegotiationCycleActiveSubmitterCount0", "%8d"), None),
            Col("Schedds", printf("LastNegotiationCycleNumSchedulers0", "%7d"), None),
            Col("   Jobs", printf("LastNegotiationCycleNumIdleJobs0", "%7d"), None),
            Col("Matches", printf("LastNegotiationCycleMatches0", "%7d"), None),
            Col("Rejections", printf("LastNegotiationCycleRejections0", "%10d"), None)]


def readable_mb(ad: Ad) -> str | None:
    v = attr("DetectedMemory")(ad)
    if not _num(v):
        return None
    for unit, scale in (("TB", 1 << 20), ("GB", 1 << 10)):
        if v >= scale:
            return f"{v / scale:.1f} {unit}"
    return f"{v:.1f} MB"


def _version(ad: Ad) -> str | None:
    v = attr("CondorVersion")(ad)
    if not isinstance(v, str):
        return None
    parts = v.split()
    return parts[1] if len(parts) > 1 else v


def master_cols() -> list[Col]:
    return [Col("Name", text("Name"), None),
            Col("Version", _version, -14, alt="??"),
            Col("Cpus", printf("DetectedCpus", "%4d"), 4, alt="??"),
            Col("  Memory", readable_mb, 10, alt="??"),
            Col("   Uptime", since("DaemonStartTime"), 13)]


def collector_cols() -> list[Col]:
    return [Col("Name", text("Name"), None), Col("Machine", text("Machine"), None),
            Col("RunningJobs", printf("RunningJobs", "%11d"), None),
            Col("  IdleJobs", printf("IdleJobs", "%10d"), None),
            Col("HostsTotal", printf("HostsTotal", "%10d"), None)]


def any_cols() -> list[Col]:
    return [Col("MyType", lambda a: str(attr("MyType")(a) or "None"), -18),
            Col("TargetType", lambda a: str(attr("TargetType")(a) or "None"), -18),
            Col("Name", text("Name"), -41, cut=False, alt="?")]


# -- the summary -------------------------------------------------------------------------

#: view -> (heading fields with their widths, row format); condor_status's totals tables
NORMAL_HEAD = (("Total", 6), (SlotState.OWNER, 5), (SlotState.CLAIMED, 7), (SlotState.UNCLAIMED, 9),
               (SlotState.MATCHED, 7), (SlotState.PREEMPTING, 10), ("Drain", 6), (SlotState.BACKFILL, 8),
               ("BkIdle", 6))
STATE_HEAD = (("Total", 6), (SlotState.OWNER, 5), (SlotState.UNCLAIMED, 9), (SlotState.CLAIMED, 7),
              (SlotState.PREEMPTING, 10), (SlotState.MATCHED, 7), ("Drain", 6), (SlotState.BACKFILL, 8),
              ("BkIdle", 6))
_STATE_KEY = {
    SlotState.OWNER: SlotState.OWNER,
    SlotState.UNCLAIMED: SlotState.UNCLAIMED,
    SlotState.CLAIMED: SlotState.CLAIMED,
    SlotState.MATCHED: SlotState.MATCHED,
    SlotState.PREEMPTING: SlotState.PREEMPTING,
    SlotState.DRAINED: "Drain",
    SlotState.BACKFILL: SlotState.BACKFILL,
}


def _count_states(states: list[str], backfill: bool) -> dict[str, int]:
    c: dict[str, int] = {}
    for st in states:
        if backfill and st == SlotState.UNCLAIMED:
            c["BkIdle"] = c.get("BkIdle", 0) + 1
            continue
        if backfill and st == SlotState.CLAIMED:
            st = SlotState.BACKFILL
        k = _STATE_KEY.get(st)
        if k is None:
            continue
        c[k] = c.get(k, 0) + 1
        c["Total"] = c.get("Total", 0) + 1
    return c


def _table(keyed: dict[str, dict[str, int]], head: tuple[tuple[str, int], ...], wide: bool,
           key_width: int = 14) -> str:
    grand: dict[str, int] = {}
    for c in keyed.values():
        for k, n in c.items():
            grand[k] = grand.get(k, 0) + n
    kw = max([5] + [len(k) for k in keyed]) if wide else max(key_width, 5)

    def row(key: str, c: dict[str, int]) -> str:
        return f"{key[:kw]:>{kw}}" + " ".join(f"{c.get(name, 0):>{w}d}" for name, w in head) + "\n"
    out = " " * kw + " ".join(f"{name:>{w}.{w}}" for name, w in head) + "\n\n"
    out += "".join(row(k, c) for k, c in sorted(keyed.items()))
    if keyed:
        out += "\n"
    return out + row("Total", grand)


def slot_totals(ads: list[Ad], *, state_view: bool = False, wide: bool = False,
                key: Callable[[Ad], str | None] | None = None, rollup: bool = False,
                counts: list[int] | None = None) -> str:
    """The state-count table (keyed by Arch/OpSys; by Activity for ``-state``; by
    ``key`` for ``-compact``). ``rollup`` counts a partitionable slot's children
    (``ChildState``) instead of the slot, skipping dynamic slots, as -compact does.
    ``counts``: how many slots each ad stands for (a grouped query's answer)."""
    keyed: dict[str, dict[str, int]] = {}
    # the getters made once, not once per ad (100,000 slots)
    activity, arch_of, opsys_of, state_of = attr("Activity"), attr("Arch"), attr("OpSys"), attr("State")
    dynamic, backfill_of, partitionable = attr("DynamicSlot"), attr("SlotBackfill"), attr("PartitionableSlot")
    for i, a in enumerate(ads):
        weight = counts[i] if counts is not None else 1
        if state_view:
            k = activity(a)
        elif key is not None:
            k = key(a)
        else:
            arch, opsys = arch_of(a), opsys_of(a)
            k = f"{arch}/{opsys}" if isinstance(arch, str) and isinstance(opsys, str) else None
        if not isinstance(k, str):
            continue
        if rollup and dynamic(a) is True:
            continue
        backfill = backfill_of(a) is True
        if rollup and partitionable(a) is True:
            kids = attr("ChildState")(a)
            states = [s for s in kids if isinstance(s, str)] if isinstance(kids, list) else []
            if attr("Cpus")(a) and attr("Memory")(a):
                states.append(str(state_of(a)))
        else:
            states = [str(state_of(a))]
        c = keyed.setdefault(k, {})
        for name, n in _count_states(states, backfill).items():
            c[name] = c.get(name, 0) + n * weight
    return _table(keyed, STATE_HEAD if state_view else NORMAL_HEAD, wide)


#: what each view's totals read of a slot ad (``roost status -totals`` asks only for these);
#: the claimed view's sums are of reals, added in the rows' order: it is not grouped
TOTALS_ATTRS = {"normal": ["Arch", "OpSys", "State", "SlotBackfill"],
                "state": ["Activity", "State", "SlotBackfill"],
                "claimed": ["Arch", "OpSys", "Mips", "KFlops", "LoadAvg", "Machine", "Name"]}


def run_totals(ads: list[Ad], *, wide: bool = False) -> str:
    """``-claimed``: Machines, MIPS, KFLOPS, AvgLoadAvg per Arch/OpSys."""
    keyed: dict[str, list[float]] = {}
    for a in ads:
        arch, opsys = attr("Arch")(a), attr("OpSys")(a)
        if not (isinstance(arch, str) and isinstance(opsys, str)):
            continue
        t = keyed.setdefault(f"{arch}/{opsys}", [0, 0, 0, 0.0])
        t[0] += 1
        for i, name in ((1, "Mips"), (2, "KFlops"), (3, "LoadAvg")):
            v = attr(name)(a)
            t[i] += v if _num(v) else 0
    kw = max([5] + [len(k) for k in keyed]) if wide else 14

    def row(key: str, t: list[float]) -> str:
        avg = t[3] / t[0] if t[0] else 0.0
        return f"{key[:kw]:>{kw}}{int(t[0]):9d}  {int(t[1]):11d}  {int(t[2]):11d}   {avg:.3f}\n"
    grand = [sum(t[i] for t in keyed.values()) for i in range(4)]
    out = " " * kw + f"{'Machines':>9.9}  {'MIPS':>11.11}  {'KFLOPS':>11.11}  {'AvgLoadAvg':>11.11}\n\n"
    out += "".join(row(k, t) for k, t in sorted(keyed.items()))
    if keyed:
        out += "\n"
    return out + row("Total", grand)


def job_totals(ads: list[Ad], *, schedd: bool, wide: bool = False) -> str:
    """``-schedd`` (one Total row) or ``-submitters`` (a row per submitter name)."""
    if schedd:
        keys = ("TotalRunningJobs", "TotalIdleJobs", "TotalHeldJobs")
        sums = [sum(v for a in ads if _num(v := attr(k)(a))) for k in keys]
        return (" " * 14 + f"{keys[0]:>18} {keys[1]:>18} {keys[2]:>18}\n\n" + " " * 14 + "\n"
                + f"{'Total':>14}" + "".join(f"{int(s):>18d} " for s in sums).rstrip() + "\n")
    keyed: dict[str, list[int]] = {}
    for a in ads:
        name = attr("Name")(a)
        if not isinstance(name, str):
            continue
        t = keyed.setdefault(name, [0, 0, 0])
        for i, k in enumerate(("RunningJobs", "IdleJobs", "HeldJobs")):
            v = attr(k)(a)
            t[i] += int(v) if _num(v) else 0
    kw = max([5] + [len(k) for k in keyed])

    def row(key: str, t: list[int]) -> str:
        return f"{key:>{kw}}{t[0]:11d} {t[1]:10d} {t[2]:10d}\n"
    grand = [sum(t[i] for t in keyed.values()) for i in range(3)]
    out = " " * kw + f"{'RunningJobs':>11} {'IdleJobs':>10} {'HeldJobs':>10}\n\n"
    out += "".join(row(k, t) for k, t in sorted(keyed.items()))
    if keyed:
        out += "\n"
    return out + row("Total", grand)
