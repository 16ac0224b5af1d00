"""condor_userprio's table, column for column as HTCondor 25 prints it.

Which columns show is condor_userprio's set of detail flags: the default view
(effective priority, factor, weighted resources in use, total usage, time since
last usage, floor and ceiling), ``-all`` (adds real priority and the usage start
and last-usage dates), ``-usage`` (usage columns only), ``-priority`` (the three
priority columns). Each column has condor_userprio's fixed width, its two-line
heading centred over it, numbers right-aligned; the footer counts users and totals
the usage columns. Pure: records and the time in, text out.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

PRIORITY, REAL_PRIO, FACTOR, RES_USED, WT_RES_USED = 0x2, 0x1000, 0x4, 0x10, 0x20
USE_TIME1, USE_TIME2, USE_DELTA_T, FLOOR, CEILING = 0x40, 0x80, 0x4000, 0x40000, 0x20000
USAGE = RES_USED | WT_RES_USED
PRIOS = PRIORITY | FACTOR | REAL_PRIO
#: the default view (condor_userprio's DetailMost without the group-quota columns)
DEFAULT = PRIORITY | FACTOR | USAGE | USE_DELTA_T | CEILING | FLOOR
ALL = DEFAULT | PRIOS | USE_TIME1 | USE_TIME2
USAGE_VIEW = USAGE | USE_TIME1 | USE_TIME2

#: flag, width, first and second heading line
COLUMNS = (
    (PRIORITY, 12, "Effective", "Priority"),
    (REAL_PRIO, 8, "Real", "Priority"),
    (FACTOR, 9, "Priority", "Factor"),
    (RES_USED, 6, "Wghted", "In Use"),
    (WT_RES_USED, 12, "Total Usage", "(wghted-hrs)"),
    (USE_TIME1, 16, "Usage", "Start Time"),
    (USE_TIME2, 16, "Last", "Usage Time"),
    (USE_DELTA_T, 10, "Time Since", "Last Usage"),
    (FLOOR, 9, "Submitter", "Floor"),
    (CEILING, 9, "Submitter", "Ceiling"),
)
ACTIVE_WINDOW = 86400  # without -allusers: submitters used in the last day


def _center(text: str, width: int) -> str:
    text = text[:width]
    left = (width - len(text)) // 2
    return (" " * left + text).ljust(width)


def _float(value: float, width: int, decimals: int) -> str:
    s = f"{value:{width}.{decimals}f}"
    if len(s) > width:
        s = f"{value:.{max(width - 6, 1)}g}"
    return s[:width].rjust(width)


def _date_year(t: float) -> str:
    tm = time.localtime(t)
    return f"{tm.tm_mon:2d}/{tm.tm_mday:02d}/{tm.tm_year:<4d} {tm.tm_hour:02d}:{tm.tm_min:02d}"


def _delta(seconds: float) -> str:
    s = int(seconds)
    if s < 0:
        return "[?????]"
    d, rem = divmod(s, 86400)
    return f"{d:3d}+{rem // 3600:02d}:{rem % 3600 // 60:02d}"


def _num(u: dict[str, Any], key: str) -> float | None:
    v = u.get(key)
    return float(v) if type(v) in (int, float) else None


def _accumulated(u: dict[str, Any]) -> float:
    v = _num(u, "accumulated_usage")
    return v if v is not None else (_num(u, "usage") or 0.0)


def _cell(flag: int, width: int, u: dict[str, Any], now: float) -> str:
    if flag == PRIORITY:
        v = _num(u, "effective")
        return _float(v, width, 2) if v is not None else " " * width
    if flag == REAL_PRIO:
        v = _num(u, "priority")
        return _float(v, width, 2) if v is not None else " " * width
    if flag == FACTOR:
        v = _num(u, "factor")
        return _float(v, width, 2) if v is not None and v > 0 else " " * width
    if flag == RES_USED:
        return _float(_num(u, "resources_used") or 0.0, width, 0)
    if flag == WT_RES_USED:
        return _float(_accumulated(u) / 3600.0, width, 2)
    if flag in (USE_TIME1, USE_TIME2):
        t = _num(u, "begin_usage" if flag == USE_TIME1 else "last_usage")
        return _date_year(t).rjust(width) if t and t > 0 else " " * width
    if flag == USE_DELTA_T:
        t = _num(u, "last_usage")
        if not t:
            return " " * width
        return ("<now>" if now - t <= 0 else _delta(now - t)).rjust(width)
    if flag == FLOOR:
        v = _num(u, "floor")
        return _float(v, width, 2) if v is not None and v > 0 else " " * width
    v = _num(u, "ceiling")  # CEILING
    return _float(v, width, 2) if v is not None and v > -1 else " " * width


def shown(users: Sequence[dict[str, Any]], now: float, all_users: bool) -> list[dict[str, Any]]:
    """The records condor_userprio lists: used within the last day (a record with no
    last usage counts as just that old), or everyone with ``-allusers``."""
    if all_users:
        return list(users)
    floor = now - ACTIVE_WINDOW
    return [u for u in users if (_num(u, "last_usage") or floor) >= floor or (_num(u, "resources_used") or 0) > 0]


def table(users: Sequence[dict[str, Any]], now: float, flags: int = DEFAULT, all_users: bool = False) -> str:
    """condor_userprio's listing of ``users`` (USERPRIO records) as of ``now``."""
    rows = shown(users, now, all_users)
    if flags & PRIORITY:
        rows.sort(key=lambda u: (_num(u, "effective") or 0.0, str(u.get("name"))))
    elif flags & USAGE:
        rows.sort(key=lambda u: (_accumulated(u), str(u.get("name"))))
    else:
        rows.sort(key=lambda u: str(u.get("name")))
    cols = [c for c in COLUMNS if c[0] & flags]
    name_w = max([10, *(len(str(u.get("name"))) for u in rows)])
    name_w = max(min(name_w, 99), len(f"Number of users: {len(users)}"))

    def line(name: str, cells: list[str]) -> str:
        return name[:name_w].ljust(name_w) + "".join(" " + c for c in cells)

    tm = time.localtime(now)
    out = [f"Last Priority Update: {tm.tm_mon:2d}/{tm.tm_mday:<2d} {tm.tm_hour:02d}:{tm.tm_min:02d}",
           line("", [_center(h1, w) for _, w, h1, _ in cols]),
           line("User Name", [_center(h2, w) for _, w, _, h2 in cols]),
           line("-" * name_w, ["-" * w for _, w, _, _ in cols])]
    count, in_use, hours = 0, 0.0, 0.0
    for u in rows:
        name = str(u.get("name"))
        if "@" in name:  # a group's record ("physics") is listed, not counted
            count += 1
            in_use += _num(u, "resources_used") or 0.0
            hours += _accumulated(u) / 3600.0
        out.append(line(name, [_cell(f, w, u, now) for f, w, _, _ in cols]))
    out.append(line("-" * name_w, ["-" * w for _, w, _, _ in cols]))
    total = []
    for f, w, _, _ in cols:
        if f == RES_USED:
            total.append(_float(in_use, w, 0))
        elif f == WT_RES_USED:
            total.append(_float(hours, w, 2))
        elif f == USE_TIME2 and not all_users:
            total.append(_date_year(now - ACTIVE_WINDOW).rjust(w))
        elif f == USE_DELTA_T and not all_users:
            total.append(_delta(ACTIVE_WINDOW).rjust(w))
        else:
            total.append(" " * w)
    out.append(line(f"Number of users: {count}", total))
    return "\n".join(out)
