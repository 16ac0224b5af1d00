"""``roost status -flock``: the pools this pool flocks with, as its negotiator sees them
(FLOCK_STATUS, docs/flocking.md): direction, slots lent and borrowed now, the ledger's
slot-hours each way and their reciprocity, and why a pool's submitters were not served."""

from __future__ import annotations

import json
import sys
from typing import Any

from roost.api.errors import PoolError
from roost.api.home import pool_home
from roost.api.negotiator import negotiator_connection
from roost.cli.restrict import error_line

PROG = "roost status"
COLUMNS = (("Pool", "pool"), ("Direction", "direction"), ("Domain", "domain"), ("Lent", "lent"),
           ("Borrowed", "borrowed"), ("GivenHours", "given_hours"), ("ReceivedHours", "received_hours"),
           ("Reciprocity", "reciprocity"))


def flock_table(pools: list[dict[str, Any]]) -> str:
    """One line per connected pool, then each refusal reason under its pool."""
    if not pools:
        return "no connected pools (no FLOCK_TO, FLOCK_FROM or FLOCK_AGREEMENTS here)\n"

    def cell(p: dict[str, Any], key: str) -> str:
        v = p.get(key)
        return f"{v:.4g}" if isinstance(v, float) else str(v if v is not None else "")

    rows = [[h for h, _ in COLUMNS]] + [[cell(p, k) for _, k in COLUMNS] for p in pools]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    out = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    for p in pools:
        for why in p.get("refused") or []:
            out.append(f"  {p.get('pool')}: not served: {why}")
    return "\n".join(out) + "\n"


def main_flock(pool: str | None, as_json: bool) -> int:
    try:
        conn = negotiator_connection(pool_home(None), 10.0, pool=pool)
        try:
            got = conn.call("FLOCK_STATUS")
        finally:
            conn.close()
    except (PoolError, OSError, ValueError) as e:
        print(error_line(PROG, e), file=sys.stderr)
        return 1
    pools = [p for p in got.get("pools") or [] if isinstance(p, dict)]
    sys.stdout.write(json.dumps(pools, indent=2) + "\n" if as_json else flock_table(pools))
    return 0


__all__ = ["flock_table", "main_flock"]
