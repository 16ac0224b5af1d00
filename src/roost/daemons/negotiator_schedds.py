"""The negotiator's side of talking to schedds: GET_REQUESTS out, request ads checked
into matchmaker :class:`~roost.core.matchmaker.Request` s, each schedd's MATCHES back.

Its own module because it is the cycle's only conversation with schedds, apart from
the cycle (``negotiator``) that decides what to ask and what to send. A schedd that
does not take its MATCHES leaves those slots promised to nobody: they are offered
again at once (``PromiseBook.forget``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Protocol

from roost.core.matchmaker import Match, Request
from roost.core.promises import PromiseBook
from roost.net.adwire import obj_to_ad
from roost.net.client import AsyncClient
from roost.net.errors import RequestError


class Tally(Protocol):
    """What a cycle's statistics (``negotiator.CycleStats``) count of the schedds' part."""

    rejected: int
    errors: list[str]


class Schedds:
    """One client per schedd address, kept across cycles; what is said to schedds."""

    def __init__(
        self, timeout: float, promises: PromiseBook, log: logging.Logger,
        connect: Callable[..., AsyncClient] = AsyncClient,
    ) -> None:
        self.timeout = timeout
        self.connect = connect  # the negotiator's Daemon.client: it proves who we are
        self.promises = promises
        self.log = log
        self._clients: dict[str, AsyncClient] = {}

    def client(self, address: str) -> AsyncClient:
        client = self._clients.get(address)
        if client is None:
            client = self._clients[address] = self.connect(address, timeout=self.timeout)
        return client

    async def get_requests(self, sub: dict[str, Any]) -> dict[str, Any]:
        """GET_REQUESTS of the submitter that ``sub`` (its Submitter ad) names."""
        owner = sub.get("Owner")
        if not isinstance(owner, str):
            owner = str(sub.get("Name"))
        return await self.client(sub["ScheddAddress"]).call("GET_REQUESTS", owner=owner,
                                                            submitter=str(sub.get("Name")))

    def requests(self, sub: dict[str, Any], answer: dict[str, Any], stats: Tally,
                 prio: float | None = None) -> list[Request]:
        """The requests of a GET_REQUESTS ``answer``; malformed ones are counted and
        skipped. ``prio``: the submitter's effective priority (``SubmitterUserPrio``)."""
        name = str(sub.get("Name"))
        out: list[Request] = []
        items = answer.get("requests")
        if not isinstance(items, list):
            stats.errors.append(f"{name}: GET_REQUESTS answer has no requests list")
            return out
        for item in items:
            if not isinstance(item, dict):
                stats.rejected += 1
                continue
            count, ad_obj = item.get("count"), item.get("ad")
            if type(count) is not int or count <= 0 or not isinstance(ad_obj, dict):
                stats.rejected += 1
                continue
            try:
                ad = obj_to_ad(ad_obj)
            except RequestError as e:
                stats.rejected += 1
                self.log.warning("bad request ad from %s: %s", name, e)
                continue
            if prio is not None:
                ad["SubmitterUserPrio"] = prio
            out.append(Request(name, item.get("autocluster"), count, ad, sub["ScheddAddress"]))
        return out

    async def send_matches(self, matches: list[Match], stats: Tally) -> None:
        """Each schedd its MATCHES, all at once."""
        by_schedd: dict[str, list[dict[str, Any]]] = {}
        for m in matches:
            slot = m.slot
            entry = {
                "autocluster": m.request.autocluster,
                "submitter": m.request.submitter,
                "slot_name": slot.name,
                "claim_id": slot.claim_id,
                "startd_address": slot.address,
                "slot_ad": slot.extra,
            }
            if m.resources:
                entry["resources"] = m.resources
            if m.preempts:
                entry["preempt"] = True
            by_schedd.setdefault(m.request.extra, []).append(entry)

        async def send(address: str, items: list[dict[str, Any]]) -> None:
            try:
                await self.client(address).call("MATCHES", matches=items)
            except (ConnectionError, RequestError) as e:
                stats.errors.append(f"MATCHES to {address}: {e}")
                for item in items:  # never claimed: offer those slots again
                    self.promises.forget(item["slot_name"])

        await asyncio.gather(*(send(a, items) for a, items in by_schedd.items()))

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()


__all__ = ["Schedds", "Tally"]
