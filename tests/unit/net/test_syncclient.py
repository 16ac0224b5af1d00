"""The blocking client (for command-line tools) against the asyncio server."""

import os
import subprocess
import sys

import pytest

from roost.net.errors import RemoteError
from roost.net.syncclient import SyncClient

from .helpers import ThreadedServer


async def echo(req, peer):
    return {"echo": req.get("x"), "user": peer.user}


async def refuse(req, peer):
    raise RequestError("DENIED", "not you")


async def blob(req, peer):
    await peer.respond({"size": req["n"]})
    await peer.send_bytes(bytes(range(256)) * (req["n"] // 256))


from roost.net.errors import RequestError  # noqa: E402

HANDLERS = {"ECHO": echo, "REFUSE": refuse, "BLOB": blob}


def test_calls_over_tcp_and_unix(tmp_path):
    sock = str(tmp_path / "s.sock")
    with ThreadedServer(HANDLERS, host="127.0.0.1", unix_path=sock) as ts:
        with SyncClient(ts.server.tcp_address, timeout=5) as c:
            assert c.call("ECHO", x={"a": [1]}) == {"echo": {"a": [1]}, "user": None}
            with pytest.raises(RemoteError) as e:
                c.call("REFUSE")
            assert (e.value.code, e.value.message) == ("DENIED", "not you")
            assert c.call("ECHO", x=2)["echo"] == 2
            c.send({"cmd": "BLOB", "n": 512})
            assert c.recv() == {"ok": True, "size": 512}
            assert c.read_exactly(512) == bytes(range(256)) * 2
            assert c.call("ECHO", x=3)["echo"] == 3
        with SyncClient("unix:" + sock, timeout=5) as c:
            assert c.call("ECHO")["user"] is not None


def test_reconnects_after_server_restart_and_reports_refusal():
    ts = ThreadedServer(HANDLERS, host="127.0.0.1")
    address = ts.server.tcp_address
    port = int(address.rsplit(":", 1)[1])
    c = SyncClient(address, timeout=5)
    try:
        assert c.call("ECHO", x=1)["echo"] == 1
        ts.close()
        with pytest.raises(ConnectionError):
            c.call("ECHO", x=2)
        ts = ThreadedServer(HANDLERS, host="127.0.0.1", port=port)
        assert c.call("ECHO", x=3)["echo"] == 3
    finally:
        c.close()
        ts.close()


def test_import_is_light():
    """The CLI path must not pay for asyncio or the ClassAd library."""
    code = (
        "import sys, roost.net.syncclient, roost.net.addresses;"
        "bad = [m for m in ('asyncio', 'roost.classad', 'roost.config') if m in sys.modules];"
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert out.stdout.strip() == "[]"
