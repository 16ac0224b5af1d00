"""How condor_q 25 sizes its tables to the data (pure: no pool, no clock).

condor_q adjusts a few columns after it has seen every row: the job id grows past
``%4d.%-3d`` for big cluster or proc numbers; on a terminal (the *display*, its
width) OWNER grows past 14 as far as the display allows, the batch view's OWNER /
BATCH_NAME / JOB_IDS share what the 50 columns of the others leave, and every line
is cut to fit. Into a pipe or a file, or with ``-wide``, there is no display
(``None`` here): nothing is shrunk or cut, and OWNER stays 14 (queue.cpp's
``fixup_std_column_widths`` and ``reduce_results``; ``widescreen``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator

#: OWNER's width in the per-job views (``-dag``: OWNER/NODENAME's)
OWNER_WIDTH, DAG_OWNER_WIDTH = 14, 17


def terminal_width() -> int | None:
    """The display condor_q fits its tables to: stdout's terminal, else None."""
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return None


def summarize_sinful(addr: str) -> str:
    """A daemon address as condor_q heads a section: the sinful up to its ``?``, then
    ``?...`` (no closing ``>``); one without parameters unchanged."""
    quest = addr.find("?")
    return addr if quest < 0 else addr[:quest] + "?..."


def sinful(host_port: str, alias: str) -> str:
    """roost's ``host:port`` as the sinful string an HTCondor daemon advertises
    (``<ip:port?addrs=ip-port&alias=host>``)."""
    host, _, port = host_port.rpartition(":")
    return f"<{host_port}?addrs={host}-{port}&alias={alias}>"


def title(label: str, stamp: str) -> str:
    """A section's title line: condor_q puts two blank lines before every one."""
    return f"\n\n-- {label} @ {stamp}\n"


def id_widths(max_cluster: int, max_proc: int) -> tuple[int, int]:
    """Digits for the cluster (4 up to 9) and proc (3 up to 9) parts of the ID column."""
    cw, pw = len(str(max_cluster)), len(str(max_proc))
    return (cw if 4 < cw <= 9 else 4), (pw if 3 < pw <= 9 else 3)


def id_cell(cluster: int, proc: int, widths: tuple[int, int]) -> str:
    """``  12.0  ``: the dot stays in its column, as ``%4d.%-3d`` keeps it."""
    return f"{cluster:>{widths[0]}}.{proc:<{widths[1]}}"


def id_heading(widths: tuple[int, int]) -> str:
    return f"{' ID':<{widths[0] + 1}}{'':<{widths[1]}}"


def owner_width(longest: int, dag: bool = False, display: int | None = None) -> int:
    """OWNER's width in a per-job view: 14 (17 with ``-dag``), wider only on a display
    for longer names and only as far as it leaves room; longer names are cut."""
    base = DAG_OWNER_WIDTH if dag else OWNER_WIDTH
    if longest <= OWNER_WIDTH or display is None:
        return base
    most = OWNER_WIDTH + (display - 80) + (3 if dag else 0)
    return max(base, min(longest, most))


def widths_fixed(max_cluster: int, max_proc: int, longest: int) -> bool:
    """Does condor_q adjust the per-job columns at all (big ids, or a name past 14)?"""
    return max_cluster >= 9999 or max_proc >= 999 or longest > OWNER_WIDTH


def dag_name_width(fixed: bool, owner_w: int, display: int | None) -> int:
    """How much of `` |-NODE`` -dag keeps: the OWNER/NODENAME column's width, except
    that with no display and no adjustment condor_q keeps its default of 14."""
    return owner_w if display is not None or fixed else OWNER_WIDTH


def fit(text: str, width: int) -> str:
    """Left-aligned in ``width``, cut to it (a fixed-width column truncates)."""
    return f"{text[:width]:<{width}}"


def batch_widths(owner: int, batch: int, ids: int, display: int | None = None) -> tuple[int, int, bool]:
    """OWNER and BATCH_NAME widths of the batch view: each as wide as its longest
    value (BATCH_NAME at least 10), shrunk on a display when OWNER + BATCH_NAME +
    JOB_IDS would pass what the other 50 columns leave. The flag: OWNER is cut to its
    width, as BATCH_NAME always is."""
    longest_owner = owner
    if display is not None:
        var_wid = display - 50
        if batch + owner + ids > var_wid:
            var_min = 8 + 10 + 9
            bw = nw = iw = int((var_wid - var_min) / 3)
            if iw < ids:
                needed = (batch + owner) - (bw + nw + 10 + 8)
                if needed > 7 and bw < 10:
                    ids //= 2
            if iw + 9 > ids:
                rw = iw + 9 - ids
                nw += rw // 2
                bw += rw - rw // 2
            if bw + 10 > batch:
                rw = bw + 10 - batch
                nw = min(8 + nw + rw, owner) - 8
            if nw + 8 > owner:
                rw = nw + 8 - owner
                bw = min(10 + bw + rw, batch) - 10
            batch = min(batch, bw + 10)
            owner = min(owner, nw + 8)
    # OWNER is at least as wide as its heading until condor_q fixes it: narrower than
    # that (a short name, or shrunk) it becomes a fixed, cut column of at least 8
    if owner < max(len("OWNER"), longest_owner):
        return max(8, owner), max(10, batch), True
    return owner, max(10, batch), False


def counter(n: int, width: int) -> str:
    """A batch count: ``_`` for none, right-aligned."""
    return f"{n if n else '_':>{width}}"


def batch_table(rows: list[tuple[str, str, str, list[int], str]], any_held: bool,
                display: int | None = None) -> Iterator[str]:
    """The batch view's heading and rows. A row: owner, batch name, submitted,
    [done, run, idle, hold, total], job ids. OWNER keeps growing to each longer
    BATCH_NAME is cut to its width; OWNER only when it had to shrink."""
    owner_w = max((len(r[0]) for r in rows), default=0)
    batch_w = max((len(r[1]) for r in rows), default=0)
    ids_w = max((len(r[4]) for r in rows), default=0)
    owner_w, batch_w, owner_cut = batch_widths(owner_w, batch_w, ids_w, display)
    counts_w = [max([6] + [len(str(r[3][i])) for r in rows]) for i in range(5)]
    shown = [0, 1, 2, 3, 4] if any_held else [0, 1, 2, 4]
    heads = ["  DONE", "  RUN ", "  IDLE", "  HOLD", " TOTAL"]
    yield " ".join([f"{'OWNER':<{owner_w}}", f"{'BATCH_NAME':<{batch_w}}", f"{'   SUBMITTED':<12}",
                    *(f"{heads[i]:<{counts_w[i]}}" for i in shown), "JOB_IDS"])
    for owner, name, submitted, counts, ids in rows:
        yield " ".join([fit(owner, owner_w) if owner_cut else f"{owner:<{owner_w}}", fit(name, batch_w), f"{submitted:>12}",
                        *(counter(counts[i], counts_w[i]) for i in shown), ids])


def longest(names: Iterable[str]) -> int:
    return max((len(n) for n in names), default=0)


def cut(lines: list[str], display: int | None = None) -> list[str]:
    """On a display condor_q cuts every line of a table to one less than its width."""
    return lines if display is None else [line[:display - 1] for line in lines]
