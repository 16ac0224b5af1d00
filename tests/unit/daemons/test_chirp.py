"""Chirp (HTCondor's remote I/O protocol, version 2) as a job meets it: the starter's
server driven by the real ``htchirp`` client over a real socket.

The submit side is a backend that records attribute calls and does file operations
with the schedd's own helper code (``chirpio.Files``) in a temporary directory; the
helper process itself, dropping to ``nobody``, is tested at the end (as root).
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import socket
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

htchirp = pytest.importorskip("htchirp")
HTChirp = htchirp.HTChirp

from roost.classad import ClassAd  # noqa: E402
from roost.core.chirp import Wants  # noqa: E402
from roost.daemons.schedd.chirp_calls import Helper  # noqa: E402
from roost.daemons.schedd.chirpio import Files  # noqa: E402
from roost.daemons.startd import chirp, chirpport  # noqa: E402
from roost.daemons.startd.chirp import ChirpFailure, ChirpServer, ChirpSettings, IOAnswer  # noqa: E402
from roost.daemons.startd.jobspec import Identity, JobSpec  # noqa: E402

ALL = Wants(io=True, updates=True, delayed=True)


class Recorder:
    """The submit side: attributes in a dict, the log in a list, files under ``root``."""

    def __init__(self, root: Path) -> None:
        self.files = Files(str(root))
        self.attrs: dict[str, str] = {"Owner": '"alice"'}
        self.calls: list[tuple[Any, ...]] = []
        self.logged: list[str] = []
        self.delayed_batches: list[dict[str, str]] = []
        self.ended = False
        self.offline = False

    async def get_attr(self, name: str) -> str:
        self.calls.append(("get", name))
        return self.attrs.get(name, "UNDEFINED")

    async def set_attr(self, name: str, expr: str) -> None:
        self.calls.append(("set", name, expr))
        if name == "Owner":
            raise ChirpFailure(chirp.NOT_AUTHORIZED)
        self.attrs[name] = expr

    async def ulog(self, text: str) -> None:
        self.logged.append(text)

    async def send_delayed(self, attrs: dict[str, str]) -> None:
        if self.offline:
            raise ChirpFailure(chirp.OFFLINE)
        self.delayed_batches.append(dict(attrs))

    async def io(self, op: str, args: list[Any], payload: bytes = b"") -> IOAnswer:
        self.calls.append(("io", op, len(payload)))
        head, data = self.files.handle(op, list(args), payload)
        if head["rc"] < 0:
            return IOAnswer(chirp.ERRNO_CODES.get(head["errno"], chirp.UNKNOWN))
        return IOAnswer(head["rc"], head.get("text", ""), data)

    def end(self) -> None:
        self.ended = True


class Running:
    """A server on an event loop of its own thread (htchirp blocks)."""

    def __init__(self, backend: Recorder, wants: Wants = ALL, **kw: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.backend = backend
        self.server = ChirpServer(backend, wants, **kw)
        self.run(self.server.start())

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(10)

    def client(self) -> Any:
        return HTChirp(host="127.0.0.1", port=self.server.port, cookie=self.server.cookie, timeout=10)

    def raw(self) -> socket.socket:
        s = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
        return s

    def stop(self) -> None:
        async def close() -> None:
            self.server.close()

        self.run(close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Running]:
    r = Running(Recorder(tmp_path / "submit"))
    (tmp_path / "submit").mkdir()
    try:
        yield r
    finally:
        r.stop()


def _ask(s: socket.socket, line: bytes) -> bytes:
    s.sendall(line)
    out = b""
    while not out.endswith(b"\n"):
        got = s.recv(1)
        if not got:
            break
        out += got
    return out


def _authed(r: Running) -> socket.socket:
    s = r.raw()
    assert _ask(s, f"cookie {r.server.cookie}\n".encode()) == b"0\n"
    return s


# -- attributes --------------------------------------------------------------------------


def test_job_attributes_are_got_and_set_through_the_submit_side(served: Running) -> None:
    with served.client() as c:
        c.set_job_attr("Progress", '"half way"')
        assert c.get_job_attr("Progress") == '"half way"'
        assert c.get_job_attr("NotThere") == "UNDEFINED"
        with pytest.raises(HTChirp.NotAuthorized):
            c.set_job_attr("Owner", '"mallory"')
        c.ulog("a message with spaces")
    assert ("set", "Progress", '"half way"') in served.backend.calls
    assert served.backend.logged == ["a message with spaces"]


def test_delayed_updates_are_kept_and_sent_with_the_next_report(served: Running) -> None:
    served.server.job_ad = None
    with served.client() as c:
        c.set_job_attr_delayed("ChirpCount", "2")
        c.set_job_attr_delayed("chirpNote", '"lower case prefix"')
        assert c.get_job_attr_delayed("ChirpCount") == "2"
        with pytest.raises(HTChirp.NotAuthorized):
            c.set_job_attr_delayed("Other", "1")  # not a delayed-update name
        with pytest.raises(HTChirp.TooBig):
            c.set_job_attr_delayed("ChirpBig", '"' + "x" * 1000 + '"')
        with pytest.raises(HTChirp.InvalidRequest):
            c.set_job_attr_delayed("ChirpBad", "1 +")
        with pytest.raises(HTChirp.DoesntExist):
            c.get_job_attr_delayed("ChirpNever")
    assert served.backend.calls == []  # nothing went to the submit side yet
    served.backend.offline = True
    served.run(served.server.flush_delayed())
    assert served.server.delayed  # kept for the next report
    served.backend.offline = False
    served.run(served.server.flush_delayed())
    assert served.backend.delayed_batches == [{"ChirpCount": "2", "chirpNote": '"lower case prefix"'}]
    assert not served.server.delayed
    served.run(served.server.flush_delayed())
    assert len(served.backend.delayed_batches) == 1  # nothing new: nothing sent


def test_delayed_updates_stop_at_the_cap_of_names(tmp_path: Path) -> None:
    r = Running(Recorder(tmp_path), max_attrs=3, prefix=("Foo*",))
    try:
        with r.client() as c:
            for i in range(3):
                c.set_job_attr_delayed(f"Foo{i}", str(i))
            c.set_job_attr_delayed("Foo0", "10")  # a name already used: not one more
            with pytest.raises(HTChirp.TooManyOpen):
                c.set_job_attr_delayed("Foo3", "3")
            with pytest.raises(HTChirp.NotAuthorized):
                c.set_job_attr_delayed("ChirpX", "1")  # CHIRP_DELAYED_UPDATE_PREFIX = Foo*
        assert r.server.delayed == {"Foo0": "10", "Foo1": "1", "Foo2": "2"}
    finally:
        r.stop()


def test_get_job_attr_delayed_falls_back_to_the_job_ad(served: Running) -> None:
    served.server.job_ad = ClassAd({"RequestMemory": 512, "Cmd": "/bin/true"})
    with served.client() as c:
        assert c.get_job_attr_delayed("RequestMemory") == "512"
        assert c.get_job_attr_delayed("Cmd") == '"/bin/true"'


# -- files -------------------------------------------------------------------------------


def test_files_move_both_ways_and_every_file_request_works(served: Running, tmp_path: Path) -> None:
    root = tmp_path / "submit"
    local = tmp_path / "local.bin"
    local.write_bytes(os.urandom(3 * chirp.CHUNK + 123))  # more than one piece
    with served.client() as c:
        assert c.putfile(str(local), "up.bin") == local.stat().st_size
        assert (root / "up.bin").read_bytes() == local.read_bytes()
        assert c.getfile("up.bin", str(tmp_path / "down.bin")) == local.stat().st_size
        assert (tmp_path / "down.bin").read_bytes() == local.read_bytes()
        empty = tmp_path / "empty"
        empty.write_bytes(b"")
        assert c.putfile(str(empty), "empty") == 0  # answered twice even with no bytes
        assert c.getfile("empty", str(tmp_path / "empty2")) == 0
        assert c.write(b"0123456789", "w.txt", "wc") == 10
        assert c.write(b"AB", "w.txt", "w", offset=4) == 2
        assert c.read("w.txt", 100) == b"0123AB6789"
        assert c.read("w.txt", 3, offset=7) == b"789"
        assert c.read("w.txt", 4, stride_length=2, stride_skip=5) == b"01B6"  # at 0 and at 5
        assert c.write(b"xxyy", "s.bin", "wc", stride_length=2, stride_skip=4) == 4
        assert (root / "s.bin").read_bytes() == b"xx\0\0yy"
        assert c.put(str(local), "again.bin", flags="wca") == local.stat().st_size
        st = c.stat("w.txt")
        assert st["size"] == 10 and stat.S_ISREG(st["mode"])
        assert c.statfs(".")["f_bsize"] > 0
        c.mkdir("d")
        c.rename("w.txt", "d/w.txt")
        c.link("d/w.txt", "hard")
        c.symlink("d/w.txt", "soft")
        assert c.readlink("soft") == b"d/w.txt"
        assert stat.S_ISLNK(c.lstat("soft")["mode"])
        assert set(c.getdir(".")) == {"up.bin", "empty", "s.bin", "again.bin", "d", "hard", "soft"}
        assert c.getdir(".", stat_dict=True)["hard"]["nlink"] == 2
        c.access("hard", "rw")
        c.chmod("hard", 0o600)
        c.truncate("hard", 3)
        c.utime("hard", 1000, 2000)
        assert c.stat("hard")["mtime"] == 2000 and c.stat("hard")["size"] == 3
        assert (root / "hard").stat().st_mode & 0o777 == 0o600
        c.remove("hard")
        with pytest.raises(HTChirp.NotEmpty):
            c.rmdir("d")
        c.rmdir("d", recursive=True)
        assert not (root / "d").exists()
        with pytest.raises(HTChirp.DoesntExist):
            c.read("missing", 10)
        with pytest.raises(HTChirp.AlreadyExists):
            c.mkdir("up.bin")
        with pytest.raises(HTChirp.IsDir):
            c.getfile(".", str(tmp_path / "dir"))
        c.chown("up.bin", os.getuid(), os.getgid())
        c.lchown("soft", os.getuid(), os.getgid())
        assert c.whoami() == "CONDOR" and c.whoareyou("submit.example") == "CONDOR"


def test_low_level_file_descriptors_and_seeks(served: Running) -> None:
    with served.client() as c:
        fd = c._open("f.txt", "rwc")
        assert c._write(fd, b"hello world", 11) == 11
        assert c._lseek(fd, 6, 0) == 6
        assert c._read(fd, 5) == b"world"
        c._fsync(fd)
        c._close(fd)
        with pytest.raises(HTChirp.BadFD):
            c._close(fd)
        with pytest.raises(HTChirp.BadFD):
            c._read(999, 5)  # not one of the job's: never the helper's own fds


def test_each_request_kind_is_refused_unless_the_job_has_it(tmp_path: Path) -> None:
    r = Running(Recorder(tmp_path), Wants(io=False, updates=False, delayed=True))
    try:
        with r.client() as c:
            c.set_job_attr_delayed("ChirpOk", "1")
            with pytest.raises(HTChirp.NotAuthorized):
                c.set_job_attr("Progress", "1")
            with pytest.raises(HTChirp.NotAuthorized):
                c.ulog("no")
            with pytest.raises(HTChirp.NotAuthorized):
                c.read("x", 1)
        s = _authed(r)
        # a refused write's bytes are read off the connection: the next request is understood
        assert _ask(s, b"write 3 5\nhello") == b"-2\n"
        assert _ask(s, b"version\n") == b"2\n"
        s.close()
    finally:
        r.stop()
    assert r.backend.calls == []


# -- the cookie and hostile input --------------------------------------------------------


def test_nothing_is_served_before_the_right_cookie(served: Running) -> None:
    with pytest.raises(HTChirp.NotAuthenticated):
        HTChirp(host="127.0.0.1", port=served.server.port, cookie="0" * 32)
    s = served.raw()
    assert _ask(s, b"get_job_attr Owner\n") == b"-1\n"  # before any cookie
    assert _ask(s, b"version\n") == b"-1\n"
    assert _ask(s, b"set_job_attr A 1\n") == b"-1\n"  # three strikes: the connection ends
    assert s.recv(10) == b""
    s.close()
    assert served.backend.calls == []


@pytest.mark.parametrize("line,answer", [
    (b"frobnicate 1 2\n", b"-8\n"),  # unknown
    (b"read one two\n", b"-8\n"),  # not numbers
    (b"read 3\n", b"-8\n"),  # too few words
    (b"read 3 99999999999999999999999\n", b"-8\n"),  # beyond 64 bits
    (b"read 3 -5\n", b"-8\n"),
    (b"\n", b"-8\n"),
    (b"get_job_attr bad-name\n", b"-8\n"),
    (b"get_job_attr \xff\xfe\n", b"-8\n"),  # not UTF-8
    (b"write 3 -1\n", b"-8\n"),
    (b"putfile x 420 -1\n", b"-8\n"),
    (b"putfile x 420 999999999999\n", b"-5\n"),  # refused before its bytes
    (b"lseek 3 0 7\n", b"-8\n"),  # no such whence
    (b"lseek 3 0 0\n", b"-12\n"),  # no such fd
    (b"whoami 3\n", b"-6\n"),
    (b"version\n", b"2\n"),
])
def test_malformed_requests_get_the_protocols_error(served: Running, line: bytes, answer: bytes) -> None:
    s = _authed(served)
    assert _ask(s, line) == answer
    assert _ask(s, b"version\n") == b"2\n"  # still served
    s.close()


def test_a_line_over_the_limit_or_a_huge_write_ends_the_connection(served: Running) -> None:
    s = _authed(served)
    s.sendall(b"ulog " + b"a" * 6000 + b"\n")
    assert _ask(s, b"") == b"-5\n"
    assert s.recv(10) == b""
    s.close()
    s = _authed(served)
    assert _ask(s, b"write 3 99999999999\n") == b"-5\n"
    assert s.recv(10) == b""
    s.close()
    with served.client() as c:  # the server goes on
        assert c.get_job_attr("Owner") == '"alice"'


def test_an_escaped_newline_is_part_of_the_word(served: Running) -> None:
    with served.client() as c:
        c.ulog("two\nlines and\ttabs \\ too")
    assert served.backend.logged == ["two\nlines and\ttabs \\ too"]


def test_words_and_requests_parse_as_htcondor_quotes_them() -> None:
    assert chirp.split_words("set_job_attr A \"a\\ b\"  ") == ["set_job_attr", "A", '"a b"']
    assert chirp.split_words("x\\\\y \\ ") == ["x\\y", " "]
    assert chirp.parse_request("pread 3 10 -2") == ("pread", [3, 10, -2])
    assert chirp.parse_request("set_job_attr A 1 + 2") == ("set_job_attr", ["A", "1 + 2"])
    assert chirp.parse_request("read 1_000 2") == chirp.INVALID_REQUEST


# -- the starter's wiring ----------------------------------------------------------------


class _Job:
    """What ``serve`` reads of a starter."""

    def __init__(self, sandbox: Path, spec: JobSpec) -> None:
        self.spec = spec
        self.sandbox = str(sandbox)
        self.identity = Identity(os.getuid(), os.getgid(), "me", "/")
        self.env: dict[str, str] = {}
        self.peers: Any = None
        self.claim_id = "claim"
        self.address_of = lambda: None


def _spec(**kw: Any) -> JobSpec:
    return JobSpec(job_id="1.0", cmd="/bin/true", args=[], env={}, iwd="/", transfer=True,
                   transfer_executable=False, stdin=None, stdout=None, stderr=None, transfer_output=None,
                   owner="me", max_vacate_time=1.0, **kw)


def test_serve_writes_the_config_the_client_reads_and_follows_the_knobs(tmp_path: Path) -> None:
    async def go() -> None:
        job = _Job(tmp_path, _spec(want_io_proxy=True))
        server = await chirp.serve(job, ChirpSettings())
        assert server is not None
        path = tmp_path / chirp.CONFIG_NAME
        assert job.env[chirp.ENV_NAME] == str(path)
        assert path.stat().st_mode & 0o777 == 0o600
        host, port, cookie = path.read_text().split()
        assert (host, int(port), cookie) == ("127.0.0.1", server.port, server.cookie)
        assert server.wants == Wants(io=True, updates=True, delayed=True)
        server.close()
        again = await chirp.serve(job, ChirpSettings(), resume=True)  # a restarted startd
        assert again is not None and (again.port, again.cookie) == (server.port, server.cookie)
        again.close()
        # the machine's knobs have the last word; delayed updates are on by default
        plain = await chirp.serve(_Job(tmp_path / "x", _spec()), ChirpSettings(io=False))
        assert plain is None  # no sandbox there: no server, and the job still runs
        (tmp_path / "y").mkdir()
        plain = await chirp.serve(_Job(tmp_path / "y", _spec(want_io_proxy=True)), ChirpSettings(io=False))
        assert plain is not None and plain.wants == Wants(io=False, updates=False, delayed=True)
        plain.close()
        assert await chirp.serve(_Job(tmp_path, _spec(want_io_proxy=True)), ChirpSettings(enable=False)) is None
        assert await chirp.serve(_Job(tmp_path, _spec(want_delayed_updates=False)), ChirpSettings()) is None
        assert await chirp.serve(_Job(tmp_path, _spec()), None) is None

    asyncio.run(go())


# -- the submit side's helper process -----------------------------------------------------


@pytest.fixture
def public_dir() -> Iterator[Path]:
    """A directory others may enter (pytest's own are private to root)."""
    path = Path(tempfile.mkdtemp(prefix="roost-chirp-", dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


class _FakeJob:
    def __init__(self, owner: str, iwd: str) -> None:
        self.owner = owner
        self.id = "7.0"
        self._iwd = iwd

    def get(self, name: str, default: Any = None) -> Any:
        return self._iwd if name == "Iwd" else default


@pytest.mark.skipif(os.geteuid() != 0, reason="the helper drops to the owner only when started as root")
def test_the_file_helper_acts_as_the_owner_and_never_as_root(public_dir: Path) -> None:
    nobody = pwd.getpwnam("nobody")
    iwd = public_dir / "iwd"
    iwd.mkdir()
    iwd.chmod(0o777)
    secret = public_dir / "private"
    secret.mkdir(mode=0o700)
    (secret / "key").write_text("root's")

    async def go() -> None:
        for owner in ("nobody", "root", "no-such-user"):  # root's jobs act as nobody too
            helper = await Helper.start(_FakeJob(owner, str(iwd)), "claim")  # type: ignore[arg-type]
            try:
                head, _ = await helper.call("open", [str(secret / "key"), "r", 0], b"")
                assert (head["rc"], head["errno"]) == (-1, "EACCES")
                head, _ = await helper.call("open", ["mine.txt", "wc", 0o644], b"")
                assert head["rc"] >= 3
                fd = head["rc"]
                head, _ = await helper.call("write", [fd], b"as nobody")
                assert head["rc"] == 9
                head, _ = await helper.call("close", [fd], b"")
                assert head["rc"] == 0
                assert (iwd / "mine.txt").stat().st_uid == nobody.pw_uid
                head, _ = await helper.call("chmod", [str(secret), 0o777], b"")
                assert head["errno"] == "EPERM"
                (iwd / "mine.txt").unlink()
            finally:
                helper.end()
                await helper.proc.wait()

    asyncio.run(go())


# -- one port for every job (issue 27: a listening socket per job was a descriptor each) ----

def test_jobs_share_one_port_and_the_cookie_names_the_job(tmp_path: Path) -> None:
    async def ask(port: int, lines: list[bytes]) -> list[bytes]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        out = []
        try:
            for line in lines:
                writer.write(line)
                await writer.drain()
                out.append(await reader.readline())
        finally:
            writer.close()
        return out

    async def go() -> None:
        shared = chirpport.SharedListener()
        a, b = Recorder(tmp_path / "a"), Recorder(tmp_path / "b")
        a.attrs["Who"], b.attrs["Who"] = '"a"', '"b"'
        sa, sb = ChirpServer(a, ALL, job_id="1.0"), ChirpServer(b, ALL, job_id="1.1")
        await sa.start(shared=shared)
        await sb.start(shared=shared)
        assert sa.port == sb.port == shared.port and sa.cookie != sb.cookie
        assert await ask(sa.port, [f"cookie {sa.cookie}\n".encode(), b"get_job_attr Who\n"]) == [b"0\n", b"3\n"]
        assert ("get", "Who") in a.calls and not b.calls
        assert (await ask(sb.port, [f"cookie {sb.cookie}\n".encode(), b"get_job_attr Who\n"]))[0] == b"0\n"
        assert ("get", "Who") in b.calls
        # no job's cookie, or none at all: not served, and nothing reaches a job
        assert await ask(sa.port, [b"get_job_attr Who\n"]) == [b"-1\n"]
        calls = len(a.calls) + len(b.calls)
        # a job that ended: its cookie opens nothing any more; the other job goes on
        sa.close()
        assert await ask(sb.port, [f"cookie {sa.cookie}\n".encode()]) == [b"-1\n"]
        assert len(a.calls) + len(b.calls) == calls
        assert (await ask(sb.port, [f"cookie {sb.cookie}\n".encode()])) == [b"0\n"]
        # a restarted startd takes the port its jobs were told back, when it is free
        port = shared.port
        sb.close()
        shared.close()
        again = chirpport.SharedListener()
        sc = ChirpServer(b, ALL, job_id="1.1")
        await sc.start(port, sb.cookie, shared=again)
        assert (sc.port, again.port) == (port, port)
        # a second job of that startd told another port gets a socket of its own there
        other = ChirpServer(a, ALL, job_id="1.0")
        await other.start(0, sa.cookie, shared=again)
        assert other.port == port  # port 0: the shared one
        sd = ChirpServer(a, ALL, job_id="1.2")
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        free = sock.getsockname()[1]
        sock.close()
        await sd.start(free, "c" * 32, shared=again)
        assert sd.port == free != port
        assert await ask(free, [b"cookie " + b"c" * 32 + b"\n"]) == [b"0\n"]
        for s in (sc, other, sd):
            s.close()
        again.close()

    asyncio.run(go())
