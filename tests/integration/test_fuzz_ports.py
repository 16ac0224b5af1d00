"""Fuzz every daemon's TCP port (issue 12), plain and inside TLS: malformed and oversized frames, before and
after a real IDTOKENS handshake. After each batch the daemon is the same process, a
well-formed request on another connection is still answered, and its memory has not
grown (VmRSS, measured after a warm-up batch and again at the end).

Every case is one connection: its bytes are sent, the write side is shut, and every
answer is read until the daemon hangs up. An answer is always a well-formed frame:
either ``ok: true`` (a READ command with junk beside its arguments) or a one-line
error whose code is never ``INTERNAL`` (that would be a handler that did not expect
the input). Where the outcome is certain the codes are checked too (BAD_FRAME for a
frame that cannot be read, AUTH_FAILED for a broken handshake, BAD_REQUEST or
PERMISSION_DENIED for mistyped arguments, nothing at all for a hang-up mid-frame).

Seeded, bounded: ``CASES`` per daemon, a few seconds in all.
"""

from __future__ import annotations

import base64
import json
import random
import socket
import ssl
import struct
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from poolkit import PoolHandle, start_pool, stop_pool

from roost.api.connection import pool_token
from roost.api.home import read_address
from roost.net.auth import ClientHandshake
from roost.net.framing import MAX_FRAME
from roost.net.protocol import SCHEMAS
from roost.net.server import UNAUTHENTICATED_FRAME
from roost.net.tls import binding_of

DAEMONS = ["collector", "negotiator", "schedd", "startd", "master"]
WARMUP = 60
CASES = 300  # after the warm-up, per daemon
RSS_BOUND_KB = 20 * 1024
TLS_QUIET = 0.3  # seconds without an answer that end a TLS case (see ``exchange``)
TLS_CASES = 150  # fewer inside TLS: a case with no known answer count costs TLS_QUIET
SEED = 12

OK = "OK"
#: a request each daemon answers ``ok: true`` (its level: READ; the startd has no READ
#: command, so an authenticated KEEPALIVE of no claim, answered NOT_FOUND, stands in)
PROBE: dict[str, tuple[dict[str, Any], bool, str]] = {
    "collector": ({"cmd": "QUERY", "type": "Machine", "projection": ["Name"]}, False, OK),
    "negotiator": ({"cmd": "CYCLE_STATS"}, False, OK),
    "schedd": ({"cmd": "QUERY_JOBS", "totals": True}, False, OK),
    "startd": ({"cmd": "KEEPALIVE", "claim_id": "no-such-claim"}, True, "NOT_FOUND"),
    "master": ({"cmd": "STATUS"}, False, OK),
}
#: commands with no argument to mistype that are safe to send an authenticated
#: administrator (they only read, or reserve what the connection's end releases)
HARMLESS = {"CYCLE_STATS", "USERPRIO", "LIMITS", "STATUS", "NEW_CLUSTER"}


def frame(obj: Any) -> bytes:
    body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    return struct.pack(">I", len(body)) + body


def _b64(obj: Any) -> str:
    raw = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


# -- talking ---------------------------------------------------------------------------

def _read_frame(s: socket.socket) -> dict[str, Any] | None:
    """One answer, or None at a clean end of stream. Anything else fails the test."""
    def exactly(n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = s.recv(n - len(data))
            if not chunk:
                break
            data += chunk
        return data

    header = exactly(4)
    if not header:
        return None
    assert len(header) == 4, f"the daemon sent a torn header {header!r}"
    (n,) = struct.unpack(">I", header)
    assert n <= MAX_FRAME
    body = exactly(n)
    assert len(body) == n, "the daemon hung up mid-answer"
    obj = json.loads(body)
    assert type(obj) is dict and type(obj.get("ok")) is bool, obj
    return obj


def _connect(address: str, token: str | None, tls: bool = False) -> socket.socket:
    host, port = address.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=10)
    binding = ""
    if tls:  # STARTTLS, then the TLS handshake on the same socket (the daemon's certificate unchecked)
        s.sendall(frame({"cmd": "STARTTLS"}))
        started = _read_frame(s)
        assert started is not None and started["ok"] is True, started
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        s = ctx.wrap_socket(s)
        binding = binding_of(s.getpeercert(binary_form=True))
    if token is not None:
        hs = ClientHandshake(token, binding)
        s.sendall(frame(hs.hello()))
        challenge = _read_frame(s)
        assert challenge is not None and challenge["ok"] is True, challenge
        s.sendall(frame(hs.answer(challenge)))
        done = _read_frame(s)
        assert done is not None and done["ok"] is True, done
    return s


def exchange(address: str, payload: bytes, token: str | None, tls: bool = False,
             want: int | None = None) -> list[dict[str, Any]]:
    """Send ``payload`` on a fresh connection, half-close, read every answer to EOF.
    Inside TLS (no half-close): ``want`` answers when the case knows how many, else
    until the daemon is quiet for TLS_QUIET."""
    with _connect(address, token, tls) as s:
        try:
            s.sendall(payload)
            if tls:
                # TLS has no half-close (an end of TCP without close_notify aborts the
                # session, answers and all): wait for answers until the daemon is quiet
                s.settimeout(TLS_QUIET)
            else:
                s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            pass  # it hung up on a bad frame before we were done: its answer is still there
        answers: list[dict[str, Any]] = []
        limit = want if tls else None
        if limit is not None:
            s.settimeout(10.0)
        try:
            while limit is None or len(answers) < limit:
                a = _read_frame(s)
                if a is None:
                    break
                answers.append(a)
        except (ConnectionResetError, ssl.SSLError):
            pass  # it closed with our unread bytes in its buffer (a frame over MAX_FRAME)
        except TimeoutError:
            assert tls, "a plain connection is half-closed: the daemon answers, then hangs up"
        return answers


# -- cases: (payload, expected codes per answer, or None: any answer but INTERNAL) -------

Case = tuple[bytes, list[set[str]] | None]


def _wrong_values(spec: str, rng: random.Random) -> Any:
    spec = spec.rstrip("?")
    pool: list[Any] = [7, -1, 2**70, 1.5, "x", "", "\u00ff\u0000",
                       True, False, [], [1, "a"], {}, {"k": [None]}, [{}], "ü" * 300]
    ok_for = {
        "str": lambda v: type(v) is str,
        "int": lambda v: type(v) is int,
        "number": lambda v: type(v) in (int, float),
        "bool": lambda v: type(v) is bool,
        "object": lambda v: type(v) is dict,
        "list": lambda v: type(v) is list,
        "list[str]": lambda v: type(v) is list and all(type(x) is str for x in v),
        "list[object]": lambda v: type(v) is list and all(type(x) is dict for x in v),
    }
    wrong = [v for v in pool if not any(ok_for[s](v) for s in spec.split("|"))]
    if spec == "list[str]":
        wrong += [[1], ["a", None]]
    if spec == "list[object]":
        wrong += [[1], [{}, "a"]]
    return rng.choice(wrong)


def _right_value(spec: str) -> Any:
    return {"str": "x", "int": 1, "number": 1, "bool": False, "object": {}, "list": [],
            "list[str]": [], "list[object]": []}[spec.rstrip("?").split("|")[0]]


def mistyped(rng: random.Random, authed: bool) -> Case:
    """A command of SCHEMAS with one argument of the wrong type (or missing, or a
    command that is not a string), the others right: refused, never run."""
    cmd = rng.choice(sorted(SCHEMAS))
    schema = SCHEMAS[cmd]
    if not schema or rng.random() < 0.05:
        if authed and cmd not in HARMLESS:
            return frame({"cmd": rng.choice([None, 5, ["QUERY"], {"cmd": "STATUS"}])}), [{"BAD_REQUEST"}]
        # nothing to mistype: junk beside it is allowed; READ ones are answered
        return frame({"cmd": cmd, "junk": [1, {"a": None}]}), None
    req: dict[str, Any] = {"cmd": cmd}
    for name, spec in schema.items():
        if not spec.endswith("?") or rng.random() < 0.5:
            req[name] = _right_value(spec)
    victim = rng.choice(sorted(schema))
    required = [n for n, s in schema.items() if not s.endswith("?")]
    if required and rng.random() < 0.15:
        del req[rng.choice(required)]  # a required argument missing
    else:
        req[victim] = _wrong_values(schema[victim], rng)
    return frame(req), [{"BAD_REQUEST", "PERMISSION_DENIED"}]


def _token(header: Any, claims: Any, sig: str = "") -> str:
    text = _b64(header) + "." + _b64(claims)
    return text + ("." + sig if sig else "")


def broken_auth(rng: random.Random, owner: str, authed: bool) -> Case:
    """A handshake that cannot succeed; every step answered, the last with AUTH_FAILED."""
    hs = ClientHandshake(owner)
    good = hs.hello()
    claims = {"iss": "x", "sub": "condor@x", "iat": 1, "jti": "j"}
    choice = rng.randrange(12)
    if choice == 0:  # no method, a wrong one, a mistyped one
        return frame({"cmd": "AUTH", "method": rng.choice([None, "KERBEROS", 5, ["IDTOKENS"], {}])}), [{"AUTH_FAILED"}]
    if choice == 1:  # the nonce missing, mistyped, too short or too long
        return frame(dict(good, nonce=rng.choice([None, 5, "short", "n" * 5000, ["x" * 20]]))), [{"AUTH_FAILED"}]
    if choice == 2:  # a token that is not header.claims
        token = rng.choice([None, 5, [], {}, "", ".", "a.b.c", "a", "é.ü", "x" * 40000, "a" * 8 + "." + "%%%"])
        return frame(dict(good, token=token)), [{"AUTH_FAILED"}]
    if choice == 3:  # a header that is no key's, or no object
        header = rng.choice([{"alg": "HS256", "kid": k} for k in (None, 5, ["POOL"], {"a": 1}, "", "NOPE")]
                            + [[1], "POOL", None])
        return frame(dict(good, token=_token(header, claims))), [{"AUTH_FAILED"}]
    if choice == 4:  # claims of the wrong types, out of range, not finite
        bad = dict(claims)
        bad[rng.choice(["iss", "sub", "iat", "jti", "exp", "scope"])] = rng.choice(
            [None, 5, "x", [], {}, True, 1e400, -1e400, 2**80, float("nan")])
        raw = json.dumps(bad).encode()  # NaN and Infinity, as Python's json writes them
        return frame(dict(good, token=_b64({"alg": "HS256", "kid": "POOL"}) + "." + _b64(raw))), [{"AUTH_FAILED"}]
    if choice == 5:  # not base64 / not JSON / not UTF-8 inside
        part = rng.choice([_b64(b"\xff\xfe{"), _b64(b"{\"a\":"), "!!!!", _b64(b"[]")])
        return frame(dict(good, token=part + "." + _b64(claims))), [{"AUTH_FAILED"}]
    if choice == 6:  # a proof with no AUTH before it
        return frame({"cmd": "AUTH_PROOF", "proof": rng.choice([None, 5, "x", "é" * 50, "A" * 100000])}), [
            {"AUTH_FAILED"}]
    if choice == 7:  # a real challenge, then a wrong proof, then one more proof
        proof = rng.choice([None, 7, "x", base64.b64encode(rng.randbytes(32)).decode()])
        return frame(good) + frame({"cmd": "AUTH_PROOF", "proof": proof}) + frame(
            {"cmd": "AUTH_PROOF", "proof": "y"}), [{OK}, {"AUTH_FAILED"}, {"AUTH_FAILED"}]
    if choice == 8:  # two challenges, then the first one's proof (it was forgotten)
        first = ClientHandshake(owner)
        return frame(first.hello()) + frame(good), [{OK}, {OK}]
    if choice == 9:  # a real challenge, then a command above READ: refused unless the
        # connection had proved an identity before this second, unfinished handshake
        return frame(good) + frame({"cmd": "RECONFIG"}), [{OK}, {OK, "PERMISSION_DENIED"} if authed else {
            "PERMISSION_DENIED"}]
    if choice == 10:  # a token of this pool's issuer signed with another key
        from roost.net.tokens import create_token
        forged = create_token(rng.randbytes(32), "POOL", "anything", "condor@x", now=time.time())
        other = ClientHandshake(forged)
        return frame(other.hello()) + frame({"cmd": "AUTH_PROOF", "proof": "z" * 44}), [
            {OK, "AUTH_FAILED"}, {"AUTH_FAILED"}]
    # an AUTH frame cut short, then the hang-up
    whole = frame(good)
    return whole[: rng.randrange(1, len(whole))], []


def garbage(rng: random.Random) -> Case:
    """Frames that cannot be read: each answered BAD_FRAME, or dropped at the hang-up."""
    choice = rng.randrange(8)
    if choice == 0:  # random bytes: whatever they announce
        return rng.randbytes(rng.randrange(0, 400)), None
    if choice == 1:  # a header cut short
        return rng.randbytes(rng.randrange(1, 4)), []
    if choice == 2:  # a length over MAX_FRAME, with or without bytes after it
        return struct.pack(">I", rng.randrange(MAX_FRAME + 1, 2**32)) + rng.randbytes(rng.randrange(0, 64)), [
            {"BAD_FRAME"}]
    if choice == 3:  # a length it may read (under every limit), then only part of it and the hang-up
        n = rng.randrange(1024, UNAUTHENTICATED_FRAME + 1)
        return struct.pack(">I", n) + b"{" + rng.randbytes(rng.randrange(0, min(n - 1, 256 * 1024))), []
    if choice == 4:  # not UTF-8
        body = rng.choice([b'{"cmd": "STATUS\xff"}', b"\xc3\x28", b'{"cmd":"QUERY","type":"\xed\xa0\x80"}',
                           rng.randbytes(50)])
        if body[:1] != b"{" and rng.random() < 0.5:
            body = b"\x80" + body
        return frame(body), [{"BAD_FRAME"}]
    if choice == 5:  # JSON, but no object
        obj = rng.choice([[1, 2], "cmd", 3, None, True, 1.5, [{"cmd": "STATUS"}], ""])
        return frame(json.dumps(obj).encode()), [{"BAD_FRAME"}]
    if choice == 6:  # nested deeper than any parser should follow
        depth = rng.choice([2000, 10000, 100000])
        kind = rng.randrange(3)
        if kind == 0:
            body = b"[" * depth + b"]" * depth
        elif kind == 1:
            body = b'{"cmd":"QUERY","type":' + b'{"a":' * depth + b"1" + b"}" * depth + b"}"
        else:
            body = b'{"cmd":"STATUS","x":' + b"[" * depth  # never closed
        return frame(body), [{"BAD_FRAME"}]
    # not JSON at all
    body = rng.choice([b"{nope", b"", b"{", b'{"cmd":}', b"\x00" * 16, b'{"cmd":"STATUS"} trailing'])
    return frame(body), [{"BAD_FRAME"}]


def cases(rng: random.Random, n: int, owner: str) -> Iterator[tuple[Case, bool]]:
    """``n`` cases, each with whether to send it after a real handshake."""
    for _ in range(n):
        authed = rng.random() < 0.5
        kind = rng.random()
        if kind < 0.4:
            yield garbage(rng), authed
        elif kind < 0.75:
            yield mistyped(rng, authed), authed
        else:
            yield broken_auth(rng, owner, authed), authed


# -- the daemon's side ---------------------------------------------------------------

def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS for pid {pid}")


def _check(answers: list[dict[str, Any]], expect: list[set[str]] | None, what: str) -> None:
    for a in answers:
        if not a["ok"]:
            assert a.get("code") != "INTERNAL", f"{what}: {a}"
            assert isinstance(a.get("error"), str) and a["error"] and "\n" not in a["error"], f"{what}: {a}"
    if expect is not None:
        got = [OK if a["ok"] else a["code"] for a in answers]
        assert len(got) == len(expect) and all(g in e for g, e in zip(got, expect, strict=True)), (
            f"{what}: answers {got}, expected {expect}: {answers}")


def _probe(address: str, daemon: str, owner: str, tls: bool = False) -> None:
    req, needs_token, want = PROBE[daemon]
    answers = exchange(address, frame(req), owner if needs_token else None, tls, want=1)
    assert len(answers) == 1, answers
    got = OK if answers[0]["ok"] else answers[0]["code"]
    assert got == want, f"{daemon} no longer answers {req}: {answers}"


@pytest.fixture(scope="module")
def plain_pool() -> Iterator[PoolHandle]:
    """One pool for the plain fuzz of every daemon: each test fuzzes another daemon and
    checks only what changed during it (that daemon's pid and RSS, every restart count),
    and no case may change the pool (authenticated cases send only harmless commands)."""
    home = Path(tempfile.mkdtemp(prefix="roost-itz-", dir="/tmp"))
    p = start_pool(home)
    try:
        yield p
    finally:
        stop_pool(p)


@pytest.fixture(scope="module")
def tls_pool() -> Iterator[PoolHandle]:
    """A personal pool whose daemons take only TLS, loopback included (one for the module,
    as ``plain_pool``)."""
    home = Path(tempfile.mkdtemp(prefix="roost-itt-", dir="/tmp"))
    p = start_pool(home, "\nSEC_ENCRYPT_LOOPBACK = True\n")
    try:
        yield p
    finally:
        stop_pool(p)


@pytest.mark.parametrize("daemon", DAEMONS)
def test_fuzzed_port_stays_up_answers_and_does_not_grow(plain_pool: PoolHandle, daemon: str) -> None:
    fuzz(plain_pool, daemon, tls=False)


@pytest.mark.parametrize("daemon", DAEMONS)
def test_fuzzed_tls_port_stays_up_answers_and_does_not_grow(tls_pool: PoolHandle, daemon: str) -> None:
    """The same cases inside TLS, and plain TCP to the TLS port (refused in one line)."""
    address = read_address(tls_pool.home / "run" / f"{daemon}.address")
    assert address
    plain = exchange(address, frame(PROBE[daemon][0]), None)
    assert [a.get("code") for a in plain] == ["ENCRYPTION_REQUIRED"], plain
    fuzz(tls_pool, daemon, tls=True)


def fuzz(pool: PoolHandle, daemon: str, tls: bool) -> None:
    warmup, cases_n = (WARMUP // 3, TLS_CASES) if tls else (WARMUP, CASES)
    address = read_address(pool.home / "run" / f"{daemon}.address")
    assert address, f"{daemon} has no address"
    owner = pool_token(str(pool.home))
    assert owner is not None, "roost up wrote no token to tokens.d"
    if daemon == "master":
        pid = int((pool.home / "run" / "master.pid").read_text())
    else:
        pid = pool.daemon_pid(daemon)
    restarts = {n: d.get("restarts", 0) for n, d in pool.master_status()["daemons"].items()}
    rng = random.Random(f"{SEED}-{daemon}")

    def batch(n: int) -> None:
        for i, ((payload, expect), authed) in enumerate(cases(rng, n, owner)):
            what = f"{daemon} case {i} ({'after' if authed else 'before'} auth) {payload[:80]!r}"
            _check(exchange(address, payload, owner if authed else None, tls,
                            want=len(expect) if expect is not None else None), expect, what)
        # still the same process, and it answers a well-formed request on a new
        # connection while one of ours sits stalled mid-frame
        assert _alive(pid), f"{daemon} (pid {pid}) died"
        with _connect(address, owner, tls) as stalled:
            stalled.sendall(struct.pack(">I", 1000) + b'{"cmd"')
            _probe(address, daemon, owner, tls)

    batch(warmup)
    before = rss_kb(pid)
    started = time.monotonic()
    for _ in range(3):
        batch(cases_n // 3)
    after = rss_kb(pid)
    assert after - before < RSS_BOUND_KB, f"{daemon}'s RSS grew from {before} kB to {after} kB"
    now = pool.master_status()["daemons"]
    for name, d in now.items():
        assert d.get("restarts", 0) == restarts.get(name, 0), f"{name} restarted: {d}"
    if daemon != "master":
        assert now[daemon.upper()]["pid"] == pid
    print(f"{daemon}: {warmup + cases_n} cases{' in TLS' if tls else ''}, {time.monotonic() - started:.1f} s after warm-up, "
          f"RSS {before} -> {after} kB")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False



@pytest.fixture(scope="module")
def idle_pool() -> Iterator[PoolHandle]:
    home = Path(tempfile.mkdtemp(prefix="roost-iti-", dir="/tmp"))
    p = start_pool(home, "\nUNAUTHENTICATED_IDLE_TIMEOUT = 1\n")
    try:
        yield p
    finally:
        stop_pool(p)


@pytest.mark.parametrize("daemon", ["collector", "schedd"])
def test_hundreds_of_idle_and_stalled_connections_cost_little(idle_pool: PoolHandle, daemon: str) -> None:
    """300 connections that never send a byte and 100 that stop mid-header: the daemon
    answers everyone else at once, its memory barely moves, and each hanging
    connection is closed after UNAUTHENTICATED_IDLE_TIMEOUT (1 s here)."""
    address = read_address(idle_pool.home / "run" / f"{daemon}.address")
    assert address
    host, port = address.rsplit(":", 1)
    pid = idle_pool.daemon_pid(daemon)
    owner = pool_token(str(idle_pool.home))
    _probe(address, daemon, owner)
    before = rss_kb(pid)
    socks = []
    try:
        for i in range(400):
            s = socket.create_connection((host, int(port)), timeout=5)
            if i >= 300:
                s.sendall(b"\x00\x00")  # half a header, then nothing
            socks.append(s)
        t0 = time.monotonic()
        _probe(address, daemon, owner)
        assert time.monotonic() - t0 < 2.0
        grown = rss_kb(pid) - before
        assert grown < 16 * 1024, f"{daemon} grew {grown} KiB for 400 idle connections"
        deadline = time.monotonic() + 15
        for s in socks:  # the daemon hangs up on every one of them
            s.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                got = s.recv(64)
            except ConnectionResetError:
                got = b""
            assert got == b"", got
    finally:
        for s in socks:
            s.close()
    _probe(address, daemon, owner)
