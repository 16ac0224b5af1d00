"""Round-trip time of one request/response on loopback: asyncio client and blocking client,
over TCP and a Unix socket, against roost.net.server.

Prints ``figure: value unit`` lines (medians of several runs).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from roost.net.client import AsyncClient  # noqa: E402
from roost.net.server import serve  # noqa: E402
from roost.net.syncclient import SyncClient  # noqa: E402

N = 2000
RUNS = 5


async def echo(req, peer):
    return {"x": req.get("x")}


def main() -> None:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    tmp = tempfile.mkdtemp()
    sock = str(Path(tmp) / "bench.sock")
    server = asyncio.run_coroutine_threadsafe(
        serve({"ECHO": echo}, host="127.0.0.1", unix_path=sock), loop
    ).result()

    def sync_rtt(address: str) -> float:
        with SyncClient(address) as c:
            c.call("ECHO", x=0)
            times = []
            for _ in range(RUNS):
                t0 = time.perf_counter()
                for i in range(N):
                    c.call("ECHO", x=i)
                times.append((time.perf_counter() - t0) / N)
        return statistics.median(times)

    for name, address in (("tcp", server.tcp_address), ("unix", "unix:" + sock)):
        print(f"net round trip, blocking client, {name}: {sync_rtt(address) * 1e6:.0f} us")

    async def async_rtt(address: str) -> float:
        c = AsyncClient(address)
        await c.call("ECHO", x=0)
        times = []
        for _ in range(RUNS):
            t0 = time.perf_counter()
            for i in range(N):
                await c.call("ECHO", x=i)
            times.append((time.perf_counter() - t0) / N)
        await c.close()
        return statistics.median(times)

    # the async client runs in its own loop (its own thread's worth of work: the main thread)
    for name, address in (("tcp", server.tcp_address), ("unix", "unix:" + sock)):
        rtt = asyncio.run(async_rtt(address))
        print(f"net round trip, asyncio client, {name}: {rtt * 1e6:.0f} us")
    asyncio.run_coroutine_threadsafe(server.close(), loop).result()
    handshake_cost(loop)
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
    collector_rtt()


def handshake_cost(loop: asyncio.AbstractEventLoop) -> None:
    """What authentication costs: a new connection with and without the IDTOKENS
    handshake (connect + one call + close), and a call on an authenticated connection."""
    from roost.net.auth import TokenAuthority
    from roost.net.tokens import create_token

    key = b"k" * 32
    authority = TokenAuthority({"POOL": key}, "bench", clock=time.time)
    server = asyncio.run_coroutine_threadsafe(
        serve({"ECHO": echo}, host="127.0.0.1", authority=authority,
              authorize=lambda peer, cmd, req: None if peer.identity else "who?"), loop
    ).result()
    token = create_token(key, "POOL", "bench", "alice@bench", now=time.time())
    n = 300

    def connections(tok: str | None) -> float:
        times = []
        for _ in range(RUNS):
            t0 = time.perf_counter()
            for _ in range(n):
                with SyncClient(server.tcp_address, token=tok) as c:
                    try:
                        c.call("ECHO", x=0)
                    except Exception:
                        pass  # unauthenticated: refused, but the round trip is what is timed
            times.append((time.perf_counter() - t0) / n)
        return statistics.median(times)

    plain, authed = connections(None), connections(token)
    print(f"net new connection + one call, tcp, no authentication: {plain * 1e6:.0f} us")
    print(f"net new connection + one call, tcp, IDTOKENS handshake: {authed * 1e6:.0f} us "
          f"(handshake costs {(authed - plain) * 1e6:.0f} us, ratio {authed / plain:.2f})")
    with SyncClient(server.tcp_address, token=token) as c:
        c.call("ECHO", x=0)
        times = []
        for _ in range(RUNS):
            t0 = time.perf_counter()
            for i in range(N):
                c.call("ECHO", x=i)
            times.append((time.perf_counter() - t0) / N)
    print(f"net round trip on an authenticated connection (session reused), tcp: "
          f"{statistics.median(times) * 1e6:.0f} us")
    asyncio.run_coroutine_threadsafe(server.close(), loop).result()


def collector_rtt() -> None:
    """Against a real collector process (server and client not sharing a GIL)."""
    import os
    import signal
    import subprocess

    from roost.config import write_personal_config
    from roost.net.addresses import wait_address

    home = Path(tempfile.mkdtemp())
    write_personal_config(home)
    env = {k: v for k, v in os.environ.items() if not k.startswith("_ROOST_")}
    env.pop("ROOST_CONFIG", None)
    env["ROOST_HOME"] = str(home)
    proc = subprocess.Popen([sys.executable, "-m", "roost.daemons.collector"], env=env)
    # QUERY is READ, open to unauthenticated peers: the figure stays comparable
    try:
        address = wait_address(home / "run" / "collector.address", timeout=20)
        with SyncClient(address) as c:
            c.call("QUERY", type="Nothing")
            times = []
            for _ in range(RUNS):
                t0 = time.perf_counter()
                for _ in range(N):
                    c.call("QUERY", type="Nothing")
                times.append((time.perf_counter() - t0) / N)
        print(f"net round trip, blocking client to a collector process (QUERY, no ads), tcp: "
              f"{statistics.median(times) * 1e6:.0f} us")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)


if __name__ == "__main__":
    main()
