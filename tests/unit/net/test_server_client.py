"""The asyncio server and client against each other, over TCP and a Unix socket."""

import asyncio
import os
import pwd
import socket
import struct

import pytest

from roost.net import framing
from roost.net.client import AsyncClient
from roost.net.errors import CallTimeout, RemoteError, RequestError
from roost.net.server import serve


async def echo(req, peer):
    return {"echo": req.get("x"), "user": peer.user}


async def refuse(req, peer):
    raise RequestError("NOT_FOUND", "no such thing")


async def crash(req, peer):
    raise ZeroDivisionError("boom")


async def slow(req, peer):
    await asyncio.sleep(req.get("t", 0.2))  # time is the point: a handler this slow
    return {"slept": True}


async def blob(req, peer):
    """Answers, then streams n raw bytes, then reads n bytes back."""
    n = req["n"]
    await peer.respond({"size": n})
    await peer.send_bytes(b"x" * n)
    back = await peer.read_exactly(n)
    assert back == b"y" * n
    return None


HANDLERS = {"ECHO": echo, "REFUSE": refuse, "CRASH": crash, "SLOW": slow, "BLOB": blob}
SCHEMAS = {"BLOB": {"n": "int"}}


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 20))


@pytest.mark.parametrize("kind", ["tcp", "unix"])
def test_calls_errors_and_order(kind, tmp_path):
    async def main():
        kwargs = {"unix_path": str(tmp_path / "s.sock")} if kind == "unix" else {"host": "127.0.0.1"}
        server = await serve(HANDLERS, schemas=SCHEMAS, **kwargs)
        client = AsyncClient(server.address, timeout=5)
        try:
            r = await client.call("ECHO", x=[1, "é"])
            assert r["echo"] == [1, "é"] and "ok" not in r
            if kind == "unix":
                assert r["user"] == pwd.getpwuid(os.getuid()).pw_name
            else:
                assert r["user"] is None
            with pytest.raises(RemoteError) as e:
                await client.call("REFUSE")
            assert e.value.code == "NOT_FOUND" and "no such thing" in e.value.message
            with pytest.raises(RemoteError) as e:
                await client.call("CRASH")
            assert e.value.code == "INTERNAL" and "ZeroDivisionError" in e.value.message
            with pytest.raises(RemoteError) as e:
                await client.call("NOPE")
            assert e.value.code == "BAD_REQUEST" and "NOPE" in e.value.message
            with pytest.raises(RemoteError) as e:
                await client.call("BLOB", n="3")
            assert e.value.code == "BAD_REQUEST" and "'n'" in e.value.message
            # concurrent callers on one client: each gets its own answer
            rs = await asyncio.gather(*(client.call("ECHO", x=i) for i in range(50)))
            assert [r["echo"] for r in rs] == list(range(50))
            # bulk bytes after a response, both ways
            async with client.stream() as conn:
                r = await conn.request("BLOB", n=100000)
                assert r == {"size": 100000}
                assert await conn.read_exactly(100000) == b"x" * 100000
                await conn.send_bytes(b"y" * 100000)
            assert (await client.call("ECHO", x="after"))["echo"] == "after"
        finally:
            await client.close()
            await server.close()
        if kind == "unix":
            assert not os.path.exists(tmp_path / "s.sock")

    run(main())


def test_bad_frames_answered_then_closed_and_server_stays_up():
    async def raw(address, payload):
        host, port = address.rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(payload)
        await writer.drain()
        header = await reader.readexactly(4)
        resp = framing.decode_body(await reader.readexactly(framing.body_length(header)))
        rest = await reader.read()  # the server closed the connection
        writer.close()
        return resp, rest

    async def main():
        server = await serve(HANDLERS)
        client = AsyncClient(server.address, timeout=5)
        try:
            for payload, code in [
                (struct.pack(">I", 5) + b"{bad}", "BAD_FRAME"),
                (struct.pack(">I", 2) + b"\xff\xff", "BAD_FRAME"),
                (struct.pack(">I", 3) + b"[1]", "BAD_FRAME"),
                (struct.pack(">I", framing.MAX_FRAME + 1), "BAD_FRAME"),
            ]:
                resp, rest = await raw(server.address, payload)
                assert resp["ok"] is False and resp["code"] == code, resp
                assert rest == b""
            # a request without cmd: answered, connection kept
            reader, writer = await asyncio.open_connection(*server.address.rsplit(":", 1))
            writer.write(framing.encode({"x": 1}) + framing.encode({"cmd": "ECHO", "x": 2}))
            for expect in ("BAD_REQUEST", None):
                header = await reader.readexactly(4)
                resp = framing.decode_body(await reader.readexactly(framing.body_length(header)))
                assert resp.get("code") == expect
            writer.close()
            # half a frame, then hang up
            reader, writer = await asyncio.open_connection(*server.address.rsplit(":", 1))
            writer.write(b"\x00\x00")
            writer.close()
            assert (await client.call("ECHO", x=3))["echo"] == 3
        finally:
            await client.close()
            await server.close()

    run(main())


def test_timeout_and_reconnect_after_server_restart():
    async def main():
        server = await serve(HANDLERS)
        address = server.address
        port = int(address.rsplit(":", 1)[1])
        client = AsyncClient(address, timeout=0.1)
        try:
            with pytest.raises(CallTimeout):
                await client.call("SLOW", t=1.0)
            # the timed-out connection was dropped: the next call gets its own answer
            assert (await client.call("ECHO", x=1))["echo"] == 1
            await server.close()
            with pytest.raises(ConnectionError):
                await client.call("ECHO", x=2)
            server = await serve(HANDLERS, host="127.0.0.1", port=port)
            await asyncio.sleep(0)
            assert (await client.call("ECHO", x=3))["echo"] == 3
        finally:
            await client.close()
            await server.close()

    run(main())


def test_connection_refused_is_connection_error():
    async def main():
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        client = AsyncClient(f"127.0.0.1:{port}")
        with pytest.raises(ConnectionError, match="cannot connect"):
            await client.call("ECHO")
        with pytest.raises(ConnectionError, match="not host:port"):
            await AsyncClient("nonsense").call("ECHO")

    run(main())


def test_handler_failures_after_responding_and_downstream_outages():
    async def half(req, peer):
        await peer.respond({"size": 10})
        await peer.send_bytes(b"12345")
        raise RuntimeError("disk died mid-transfer")

    async def downstream(req, peer):
        raise ConnectionError("cannot connect to 127.0.0.1:1")

    async def main():
        server = await serve({"HALF": half, "DOWN": downstream, **HANDLERS})
        client = AsyncClient(server.address, timeout=5)
        try:
            with pytest.raises(RemoteError) as e:
                await client.call("DOWN")
            assert e.value.code == "UNAVAILABLE" and "127.0.0.1:1" in e.value.message
            with pytest.raises(ConnectionError):
                async with client.stream() as conn:
                    assert await conn.request("HALF") == {"size": 10}
                    await conn.read_exactly(10)  # only 5 come, then the server hangs up
            assert (await client.call("ECHO", x=1))["echo"] == 1  # a fresh connection
        finally:
            await client.close()
            await server.close()

    run(main())


def test_error_responses_are_one_line_and_close_callbacks_run(tmp_path):
    from roost.classad import ExprTree

    closed = []

    async def parse(req, peer):
        peer.on_close(lambda: closed.append(peer.address))
        try:
            ExprTree(req["text"])
        except Exception as e:
            raise RequestError("BAD_REQUEST", f"bad expression: {e}") from None
        return {}

    async def caret(req, peer):
        raise RequestError("BAD_REQUEST", "unexpected token\na + + b\n    ^")

    async def main():
        server = await serve({"PARSE": parse, "CARET": caret}, host="127.0.0.1")
        client = AsyncClient(server.address, timeout=5)
        try:
            with pytest.raises(RemoteError) as e:
                await client.call("PARSE", text="a + (b")
            msg = str(e.value)
            assert "\n" not in msg and "bad expression: 1:7:" in msg
            with pytest.raises(RemoteError) as e:
                await client.call("CARET")
            assert str(e.value).endswith("unexpected token (at column 5)")
            assert closed == []
            await client.close()
            for _ in range(200):
                if closed:
                    break
                await asyncio.sleep(0.01)
            assert len(closed) == 1
        finally:
            await server.close()

    run(main())
