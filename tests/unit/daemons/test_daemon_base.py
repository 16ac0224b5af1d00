"""The shared daemon scaffolding, in-process: config, addresses, advertising, shutdown."""

import asyncio

import pytest

from roost.config import Config
from roost.daemons.base import MAX_FD_LIMIT, Daemon, fd_limit_wanted
from roost.net.addresses import read_address, write_address
from roost.net.server import serve


def config(home, text=""):
    return Config.from_text(f"LOCAL_DIR = {home}\n{text}", facts={"FULL_HOSTNAME": "h.example"},
                            subsys="TESTD")


def test_collector_address_forms(tmp_path):
    d = Daemon("testd", "TESTD", config=config(tmp_path, "COLLECTOR_HOST = cm.example:9000"))
    assert d.collector_address() == "cm.example:9000"
    d = Daemon("testd", "TESTD", config=config(tmp_path, "COLLECTOR_HOST = cm.example\nCOLLECTOR_PORT = 9700"))
    assert d.collector_address() == "cm.example:9700"
    d = Daemon("testd", "TESTD", config=config(tmp_path, "COLLECTOR_HOST = 127.0.0.1:0"))
    assert d.collector_address() is None  # not published yet
    write_address(tmp_path / "run" / "collector.address", "127.0.0.1:4567")
    assert d.collector_address() == "127.0.0.1:4567"
    assert (tmp_path / "log").is_dir() and d.log_file().name == "TestdLog"
    assert Daemon("schedd", "SCHEDD", config=config(tmp_path)).log_file().name == "SchedLog"


def test_a_daemon_bound_to_every_interface_advertises_a_reachable_address(tmp_path):
    d = Daemon("testd", "TESTD", config=config(tmp_path, "BIND_ADDRESS = 0.0.0.0\nNETWORK_INTERFACE = 10.9.8.7"))
    assert d.advertise_host() == "10.9.8.7"
    d = Daemon("testd", "TESTD", config=Config.from_text(
        f"LOCAL_DIR = {tmp_path}\nBIND_ADDRESS = 0.0.0.0\n",
        facts={"FULL_HOSTNAME": "h.example", "IP_ADDRESS": "10.1.2.3"}, subsys="TESTD"))
    assert d.advertise_host() == "10.1.2.3"  # NETWORK_INTERFACE = * (the default)


class Echo(Daemon):
    ad_type = "Scheduler"

    def handlers(self):
        async def ping(req, peer):
            return {"pong": True}

        # STATUS is a READ command (roost.core.authz.COMMAND_LEVELS); PING is in no table
        return {"STATUS": ping, "PING": ping}

    def ad(self):
        return {"Extra": 42}


def test_lifecycle_against_an_in_process_collector(tmp_path):
    updates, invalidations = [], []

    async def update_ad(req, peer):
        updates.append(req)
        return {}

    async def invalidate_ad(req, peer):
        invalidations.append((req["type"], req["name"]))
        return {"removed": 1}

    async def main():
        coll = await serve({"UPDATE_AD": update_ad, "INVALIDATE_AD": invalidate_ad})
        d = Echo("echo", "ECHOD", config=config(tmp_path, f"COLLECTOR_HOST = {coll.tcp_address}\n"
                                                         "BIND_ADDRESS = 127.0.0.1"))
        task = asyncio.create_task(d.main())
        try:
            for _ in range(200):
                if updates:
                    break
                await asyncio.sleep(0.01)
            assert read_address(tmp_path / "run" / "echo.address") == d.address
            ad = updates[0]["ad"]
            assert updates[0]["type"] == "Scheduler"
            assert ad["Name"] == "h.example" and ad["MyAddress"] == d.address and ad["Extra"] == 42
            from roost.net.client import AsyncClient
            from roost.net.errors import RemoteError

            c = AsyncClient(d.address)
            assert await c.call("STATUS") == {"pong": True}  # READ: open to an unauthenticated peer
            # a command with no authorization level is refused to everyone, handler or not
            with pytest.raises(RemoteError) as e:
                await c.call("PING")
            assert e.value.code == "PERMISSION_DENIED" and "no authorization level" in e.value.message
            await c.close()
            d.request_stop()
            assert await asyncio.wait_for(task, 5) == 0
        finally:
            await coll.close()
        assert invalidations == [("Scheduler", "h.example")]
        assert read_address(tmp_path / "run" / "echo.address") is None
        assert not (tmp_path / "run" / "echo.pid").exists()

    asyncio.run(main())


INF = -1  # RLIM_INFINITY, as the tests spell it


@pytest.mark.parametrize(("soft", "hard", "root", "nr_open", "want"), [
    (1024, 4096, False, 1 << 20, (4096, 4096)),          # a user: the soft limit up to the hard one
    (20000, 20000, False, 1 << 20, (20000, 20000)),      # nothing to raise without privilege
    (20000, 20000, True, 1 << 20, (1 << 20, 1 << 20)),   # root: the hard limit too, to fs.nr_open
    (20000, 20000, True, 65536, (65536, 65536)),         # ... never past fs.nr_open
    (20000, 20000, True, 1 << 30, (MAX_FD_LIMIT, MAX_FD_LIMIT)),  # ... nor past the cap
    (4 << 20, 4 << 20, True, 8 << 20, (4 << 20, 4 << 20)),  # never lowered
    (1024, INF, False, 1 << 20, (MAX_FD_LIMIT, INF)),    # an unlimited hard limit: the cap
])
def test_the_daemons_descriptor_limit(soft: int, hard: int, root: bool, nr_open: int,
                                      want: tuple[int, int]) -> None:
    assert fd_limit_wanted(soft, hard, root, nr_open, INF) == want
