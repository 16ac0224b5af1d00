"""Reservations of dedicated resources (``roost reserve``): N nodes held for a window.

During a reservation's window nothing runs on its nodes; before it, dedicated jobs run
there only when they are expected to end in time (``EstimatedRuntime``) and
opportunistic jobs until ``DEDICATED_RESERVATION_MARGIN`` seconds before it opens, when
the dedicated scheduler claims the nodes (vacating what runs there). The plan picks
the nodes (``roost.core.dedicated``); this module keeps the reservations, durably, in
``$(SPOOL)/reservations.json`` (written whole, then renamed: a crash leaves the old or
the new file), and answers the RESERVE command.
"""

from __future__ import annotations

import json
import logging
import math
import os
import secrets
import time
from collections.abc import Callable
from typing import Any

from roost.core.dedicated import Reservation
from roost.net.errors import RequestError
from roost.net.private_files import close_to_others, open_private
from roost.net.server import Peer

log = logging.getLogger("roost.schedd")

MAX_RESERVATIONS = 1000
MAX_DURATION = 366 * 86400.0


class Reservations:
    """The schedd's reservations, by id."""

    def __init__(self, path: str, changed: Callable[[], None]) -> None:
        self.path = path
        self.changed = changed  # the dedicated scheduler looks again
        self.items: dict[str, dict[str, Any]] = {}
        self.placed: dict[str, list[str]] = {}  # id -> the nodes the last plan set aside
        if close_to_others(path):  # who reserved what: the schedd's to tell (RESERVE list)
            log.warning("closed %s to group and others", path)
        try:
            with open(path) as f:
                got = json.load(f)
            self.items = {r["id"]: r for r in got if isinstance(r, dict) and isinstance(r.get("id"), str)}
        except FileNotFoundError:
            pass
        except (OSError, ValueError, TypeError, KeyError) as e:
            log.error("reservations file %s unreadable (%s): starting with none", path, e)

    def active(self, now: float) -> list[Reservation]:
        """The reservations not over yet, as the plan takes them (ended ones forgotten)."""
        ended = [k for k, r in self.items.items() if r["end"] <= now]
        if ended:
            for k in ended:
                log.info("reservation %s is over", k)
                self.items.pop(k)
                self.placed.pop(k, None)
            self._save()
        return [Reservation(id=r["id"], nodes=r["nodes"], start=r["start"], end=r["end"])
                for r in self.items.values()]

    def _save(self) -> None:
        tmp = f"{self.path}.tmp"
        with os.fdopen(open_private(tmp), "w") as f:
            json.dump(sorted(self.items.values(), key=lambda r: (r["start"], r["id"])), f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    async def h_reserve(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        op = req["op"]
        if op == "list":
            return {"reservations": [dict(r, nodes_held=self.placed.get(k, [])) for k, r in
                                     sorted(self.items.items(), key=lambda kv: (kv[1]["start"], kv[0]))]}
        if op == "remove":
            rid = req.get("id")
            if not isinstance(rid, str) or rid not in self.items:
                raise RequestError("NOT_FOUND", f"no reservation {rid!r}")
            self.items.pop(rid)
            self.placed.pop(rid, None)
            self._save()
            log.info("reservation %s removed by %s", rid, _who(peer))
            self.changed()
            return {"id": rid}
        if op != "add":
            raise RequestError("BAD_REQUEST", f"RESERVE: unknown op {op!r} (add, list, remove)")
        nodes, start, duration = req.get("nodes"), req.get("start"), req.get("duration")
        if type(nodes) is not int or nodes <= 0:
            raise RequestError("BAD_REQUEST", "RESERVE: nodes must be a positive integer")
        now = time.time()
        if start is None:
            start = now
        if not _number(start) or not now - MAX_DURATION < start < now + 10 * MAX_DURATION:
            raise RequestError("BAD_REQUEST", "RESERVE: start must be a Unix time within ten years of now")
        if not _number(duration) or not 0 < duration <= MAX_DURATION:
            raise RequestError("BAD_REQUEST", f"RESERVE: duration must be between 0 and {MAX_DURATION:g} seconds")
        if start + duration <= now:
            raise RequestError("BAD_REQUEST", "RESERVE: that window is over already")
        if len(self.items) >= MAX_RESERVATIONS:
            raise RequestError("DENIED", f"RESERVE: at most {MAX_RESERVATIONS} reservations")
        rid = f"r{secrets.token_hex(4)}"
        while rid in self.items:
            rid = f"r{secrets.token_hex(4)}"
        self.items[rid] = {"id": rid, "nodes": nodes, "start": float(start), "end": float(start) + float(duration),
                           "by": _who(peer), "created": now}
        self._save()
        log.info("reservation %s: %d nodes from %s for %g s, by %s", rid, nodes,
                 time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(start)), duration, _who(peer))
        self.changed()
        return {"id": rid, "start": float(start), "end": float(start) + float(duration)}


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _who(peer: Peer) -> str:
    return peer.identity.name if peer.identity is not None else (peer.user or "?")


__all__ = ["Reservations"]
