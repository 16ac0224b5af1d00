"""The accountant's state on disk and the commands that change it.

``$(SPOOL)/accountant.json`` holds the accountant (``roost.core.accountant``) and the
Up-Down indexes (``roost.core.updown``); :class:`AccountantFile` reads it (a corrupt
file is set aside, never fatal) and writes it (temp file, fsync, rename).
:class:`PriorityCommands` answers SET_FACTOR, SET_PRIORITY, RESET_USAGE, SET_FLOOR and
SET_CEILING: each changes the accountant, has it saved at once and asks for a cycle.

Its own module because none of this is the cycle: the negotiator decides when to
save (``ACCOUNTANT_SAVE_INTERVAL``) and what the cycle charges; this part knows the
file and the commands. USERPRIO, which reports the last cycle's figures, stays with
the cycle.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import time
from pathlib import Path
from typing import Any, Protocol

from roost.core.accountant import Accountant, UserRecord
from roost.core.updown import UpDown
from roost.net.errors import RequestError
from roost.net.private_files import close_to_others, open_private
from roost.net.server import Handler, Peer


def is_nice(name: str) -> bool:
    """A nice_user submitter: submit puts its jobs in the ``nice-user`` accounting
    group (HTCondor's NICE_USER_ACCOUNTING_GROUP_NAME), so its name starts so."""
    return name.lower().startswith("nice-user.")


def record_obj(rec: UserRecord, accountant: Accountant) -> dict[str, Any]:
    """A UserRecord as USERPRIO's wire form (docs/protocol.md)."""
    out: dict[str, Any] = {
        "name": rec.name, "priority": rec.priority, "factor": rec.factor,
        "effective": accountant.effective_priority(rec.name, nice=is_nice(rec.name)),
        "usage": rec.usage, "accumulated_usage": rec.accumulated_usage,
        "begin_usage": rec.begin_usage_time, "resources_used": rec.resources_used,
        "floor": rec.floor, "ceiling": rec.ceiling, "last_usage": rec.last_usage_time, "group": rec.group,
    }
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in out.items()}


class AccountantFile:
    """``accountant.json``: the accountant's state and the Up-Down indexes."""

    def __init__(self, path: Path, log: logging.Logger) -> None:
        self.path = path
        self.log = log

    def load(self, **kw: Any) -> tuple[Accountant, UpDown | None]:
        """The saved accountant (configured by ``kw``) and Up-Down state; an empty
        accountant and None when there is no file or it cannot be read (a corrupt
        file is renamed aside and logged)."""
        path = self.path
        with contextlib.suppress(OSError):  # each user's usage: the negotiator's to tell (userprio)
            for p in [path, *sorted(path.parent.glob(f"{path.name}.corrupt.*"))]:
                if close_to_others(p):
                    self.log.warning("closed %s to group and others", p)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return Accountant(**kw), None
        except OSError as e:
            self.log.error("cannot read %s (%s): starting with empty usage", path, e)
            return Accountant(**kw), None
        try:
            obj = json.loads(text)
            if not isinstance(obj, dict):
                raise ValueError("not a JSON object")
            accountant = Accountant.from_json(obj, **kw)
            updown = UpDown.from_json(obj.get("updown"))
        except Exception as e:
            aside = path.with_name(f"{path.name}.corrupt.{int(time.time())}")
            with contextlib.suppress(OSError):
                os.replace(path, aside)
            self.log.error("%s is corrupt (%s): set aside as %s; starting with empty usage", path, e, aside.name)
            return Accountant(**kw), None
        self.log.info("accountant state loaded from %s", path)
        return accountant, updown

    def write(self, accountant: Accountant, updown: UpDown) -> bool:
        """Write both (temp file + rename); False, logged, when that fails."""
        path = self.path
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            data = json.dumps({**accountant.to_json(), "updown": updown.to_json()},
                              sort_keys=True, allow_nan=False)
            with os.fdopen(open_private(tmp), "w", encoding="utf-8") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except (OSError, ValueError, TypeError) as e:
            self.log.error("cannot write %s: %s", path, e)
            with contextlib.suppress(OSError):
                tmp.unlink()
            return False
        return True


class Host(Protocol):
    """What the priority commands need of the negotiator around them."""

    accountant: Accountant
    log: logging.Logger

    def accountant_changed(self) -> None:
        """Save the accountant now and ask for a cycle."""


class PriorityCommands:
    """SET_FACTOR, SET_PRIORITY, RESET_USAGE, SET_FLOOR, SET_CEILING (``roost userprio``)."""

    def __init__(self, host: Host) -> None:
        self.host = host

    def handlers(self) -> dict[str, Handler]:
        return {
            "SET_FACTOR": self.h_set_factor,
            "SET_PRIORITY": self.h_set_priority,
            "RESET_USAGE": self.h_reset_usage,
            "SET_FLOOR": self.h_set_floor,
            "SET_CEILING": self.h_set_ceiling,
        }

    async def h_set_factor(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        factor = req["factor"]
        if not (isinstance(factor, (int, float)) and math.isfinite(factor) and factor >= 1):
            raise RequestError("BAD_REQUEST", "SET_FACTOR: factor must be a number >= 1")
        self.host.accountant.set_factor(req["name"], float(factor))
        self.host.log.info("priority factor of %s set to %g by %s", req["name"], factor, peer.address)
        self.host.accountant_changed()
        return {}

    async def h_set_priority(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        prio = req["priority"]
        if isinstance(prio, bool) or not (isinstance(prio, (int, float)) and math.isfinite(prio)):
            raise RequestError("BAD_REQUEST", "SET_PRIORITY: priority must be a finite number")
        acct = self.host.accountant
        acct.set_priority(req["name"], float(prio))
        got = acct.real_priority(req["name"])
        self.host.log.info("real priority of %s set to %g by %s", req["name"], got, peer.address)
        self.host.accountant_changed()
        return {"priority": got}

    async def h_reset_usage(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        acct = self.host.accountant
        name = req["name"]
        names = [r.name for r in acct.records()] if name == "*" else [name]
        now = time.time()
        for n in names:
            acct.reset_usage(n, now)
        self.host.log.info("usage of %s reset by %s", "everyone" if name == "*" else name, peer.address)
        self.host.accountant_changed()
        return {"count": len(names)}

    @staticmethod
    def _weight_arg(req: dict[str, Any], key: str) -> float | None:
        v = req.get(key)
        if v is None:
            return None
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
            raise RequestError("BAD_REQUEST", f"{key} must be a number >= 0 or null")
        return float(v)

    async def h_set_floor(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        self.host.accountant.set_floor(req["name"], self._weight_arg(req, "floor"))
        self.host.accountant_changed()
        return {}

    async def h_set_ceiling(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        self.host.accountant.set_ceiling(req["name"], self._weight_arg(req, "ceiling"))
        self.host.accountant_changed()
        return {}


__all__ = ["AccountantFile", "PriorityCommands", "is_nice", "record_obj"]
