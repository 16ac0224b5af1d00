"""The starters' shared connections to schedds (peers.py): a burst of exchanges opens
one connection each, and only MAX_IDLE of them stay open afterwards (issue 27: a
startd kept hundreds, a descriptor each, long after its burst of starts)."""

from __future__ import annotations

import asyncio
import contextlib
import os

import pytest

from roost.daemons.startd import peers as peers_mod
from roost.daemons.startd.peers import Peers


def _sockets() -> int:
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            n += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
    return n


def test_a_burst_leaves_at_most_max_idle_connections_open() -> None:
    async def go() -> None:
        accepted: list[asyncio.StreamWriter] = []

        async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            accepted.append(writer)
            await reader.read()  # until the startd's side closes
            writer.close()

        # a backlog for the whole burst: with the default 100, connects past it wait
        # for SYN retries (1 s, 3 s, 7 s) and the burst outlasts the timeout
        server = await asyncio.start_server(client, "127.0.0.1", 0, backlog=4096)
        address = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
        peers = Peers()
        burst = peers_mod.MAX_IDLE * 4
        release = asyncio.Event()

        async def exchange() -> None:
            async with peers.connection(address, bounded=False):  # past MAX_BUSY
                await release.wait()  # all at once: each needs a connection of its own

        tasks = [asyncio.ensure_future(exchange()) for _ in range(burst)]
        async with asyncio.timeout(30):
            while len(accepted) < burst:
                await asyncio.sleep(0.01)
        before = _sockets()
        release.set()
        await asyncio.gather(*tasks)
        for _ in range(100):  # the server's side sees the closes
            await asyncio.sleep(0.01)
            if sum(not w.is_closing() for w in accepted) <= peers_mod.MAX_IDLE:
                break
        assert sum(not w.is_closing() for w in accepted) == peers_mod.MAX_IDLE
        # ours: the extra connections' descriptors are gone, and the kept ones serve again
        assert before - _sockets() >= 2 * (burst - peers_mod.MAX_IDLE) - 2
        async with peers.connection(address):
            pass
        assert len(accepted) == burst  # reused: no new connection
        peers.close()
        server.close()

    asyncio.run(go())


def test_at_most_max_busy_exchanges_at_once_but_a_checkpoint_never_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(peers_mod, "MAX_BUSY", 4)

    async def go() -> None:
        open_now = 0
        most = 0

        async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal open_now, most
            open_now += 1
            most = max(most, open_now)
            await reader.read()
            open_now -= 1
            writer.close()

        # a backlog for the whole burst: with the default 100, connects past it wait
        # for SYN retries (1 s, 3 s, 7 s) and the burst outlasts the timeout
        server = await asyncio.start_server(client, "127.0.0.1", 0, backlog=4096)
        address = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
        peers = Peers()
        release = asyncio.Event()
        done = 0

        async def exchange() -> None:
            nonlocal done
            async with peers.connection(address) as conn:
                await release.wait()
                conn.close()  # not kept: the next one opens its own, so the server counts them
            done += 1

        tasks = [asyncio.ensure_future(exchange()) for _ in range(12)]
        for _ in range(200):
            await asyncio.sleep(0.01)
            if open_now >= 4:
                break
        await asyncio.sleep(0.1)  # time is the point: a fifth let through would have connected by now
        assert open_now == 4 and done == 0  # the other 8 wait their turn
        # a checkpoint upload takes no turn: it gets through while all four are busy
        async with asyncio.timeout(5), peers.connection(address, bounded=False):
            for _ in range(200):
                if open_now == 5:
                    break
                await asyncio.sleep(0.01)
            assert open_now == 5
        release.set()
        await asyncio.gather(*tasks)
        assert done == 12 and most <= 5
        peers.close()
        server.close()

    asyncio.run(go())
