"""Chirp for running jobs: the starter's side of HTCondor's remote I/O protocol (version 2).

A job whose ad and machine allow it (``roost.core.chirp.starter_wants``: delayed
updates are on for every job unless it or the machine says no) gets its own server
with a random cookie, on 127.0.0.1 at one port that all of a startd's jobs share
(``chirpport.SharedListener``: the cookie a connection presents names its job; a
listening socket per job was a descriptor per running job, issue 27). ``.chirp.config``
in its sandbox (``host port cookie``, the job's user's, 0600) says where, and
``_CONDOR_CHIRP_CONFIG`` names that file, which is what HTCondor's ``condor_chirp`` and
the ``htchirp`` package read. A connection must present the cookie first (a wrong one
is answered after a second, three end the connection); then it sends request lines
(words, ``\\`` escaping the next character) and reads Chirp's answers: a number (a
result, or a negative error code), sometimes a line or bytes after it.

What is answered here and what goes to the submit side:

- delayed updates (``set_job_attr_delayed``) are kept here, up to
  ``CHIRP_DELAYED_UPDATE_MAX_ATTRS`` names whose name matches
  ``CHIRP_DELAYED_UPDATE_PREFIX``, each at most 993 characters, and go to the schedd
  with the starter's next report (every ``STARTER_UPDATE_INTERVAL``, and the final
  one); ``get_job_attr_delayed`` reads them back, else the job's ad as it started;
- ``get_job_attr``, ``set_job_attr`` (at once: ``q`` shows it while the job runs) and
  ``ulog`` (a generic event in the job's event log) are ``CHIRP_ATTR`` calls;
- file operations are ``CHIRP_IO`` calls, done on the submit host as the job's owner
  (schedd/chirpio.py). One call carries at most ``IO_MAX`` bytes: a read answers at
  most that much (a short read), and a write or ``putfile`` of more (up to
  ``WRITE_MAX``) goes in ``CHUNK``-sized pieces, as does ``getfile``.

Input never stops the startd: a line over 5120 bytes is answered TOO_BIG and the
connection ends, as does a write bigger than it may be; numbers are checked; requests
a job was not given are answered NOT_AUTHORIZED (HTCondor answers INVALID_REQUEST:
"not yours" is the truer word); unknown ones INVALID_REQUEST; a request's bytes that
stop arriving for a minute end the connection. A job's requests are served one at a
time (at most ``MAX_CONNECTIONS`` connections), so one job holds at most a request's
worth of the startd's memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import secrets
import stat
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from roost.classad import ClassAd
from roost.classad.errors import ClassAdSyntaxError
from roost.classad.parser import parse_expr
from roost.classad.unparse import unparse
from roost.core import chirp as rules
from roost.daemons.startd import launch
from roost.daemons.startd.jobspec import Identity, JobSpec
from roost.daemons.startd.peers import CALL_TIMEOUT, Peers
from roost.net.errors import RemoteError

if TYPE_CHECKING:
    from roost.daemons.startd.chirpport import SharedListener

log = logging.getLogger(__name__)

LINE_MAX = 5120  # a request line's bytes (HTCondor's CHIRP_LINE_MAX)
VERSION = 2
CONFIG_NAME = ".chirp.config"
ENV_NAME = "_CONDOR_CHIRP_CONFIG"

# Chirp's error answers (HTCondor's chirp_protocol.h; htchirp raises one exception for each)
NOT_AUTHENTICATED = -1
NOT_AUTHORIZED = -2
DOESNT_EXIST = -3
ALREADY_EXISTS = -4
TOO_BIG = -5
NO_SPACE = -6
NO_MEMORY = -7
INVALID_REQUEST = -8
TOO_MANY_OPEN = -9
BUSY = -10
TRY_AGAIN = -11
BAD_FD = -12
IS_DIR = -13
NOT_DIR = -14
NOT_EMPTY = -15
CROSS_DEVICE_LINK = -16
OFFLINE = -17
UNKNOWN = -127

#: a Unix error's name (as the submit side sends it) -> Chirp's answer
ERRNO_CODES = {
    "EPERM": NOT_AUTHORIZED, "EACCES": NOT_AUTHORIZED, "EROFS": NOT_AUTHORIZED, "ENOENT": DOESNT_EXIST,
    "EEXIST": ALREADY_EXISTS, "EFBIG": TOO_BIG, "ENAMETOOLONG": TOO_BIG, "ENOSPC": NO_SPACE, "EDQUOT": NO_SPACE,
    "ENOMEM": NO_MEMORY, "EBADF": BAD_FD, "E2BIG": INVALID_REQUEST, "EINVAL": INVALID_REQUEST,
    "ENFILE": TOO_MANY_OPEN, "EMFILE": TOO_MANY_OPEN, "EBUSY": BUSY, "ETXTBSY": BUSY, "EAGAIN": TRY_AGAIN,
    "EINTR": TRY_AGAIN, "EISDIR": IS_DIR, "ENOTDIR": NOT_DIR, "ENOTEMPTY": NOT_EMPTY,
    "EXDEV": CROSS_DEVICE_LINK, "ETIMEDOUT": OFFLINE,
}

#: a schedd's refusal -> Chirp's answer
REMOTE_CODES = {
    "DENIED": NOT_AUTHORIZED, "PERMISSION_DENIED": NOT_AUTHORIZED, "BAD_REQUEST": INVALID_REQUEST,
    "TOO_BIG": TOO_BIG, "NOT_FOUND": OFFLINE, "UNAVAILABLE": OFFLINE,
}

IO_MAX = 1 << 20  # bytes one CHIRP_IO call carries either way; the most one read answers (per job: many jobs at once must not hold GBs)
CHUNK = 1 << 20  # write, putfile and getfile move in pieces this big
WRITE_MAX = 256 << 20  # the most one write, putfile or getfile moves (HTCondor's shadow's cap)
MAX_CONNECTIONS = 32  # one job's connections at once
PAYLOAD_TIMEOUT = 60.0  # seconds a request's bytes may stall
WRONG_COOKIE_DELAY = 1.0
MAX_COOKIE_TRIES = 3
WHOAMI = b"CONDOR"  # what HTCondor's shadow answers whoami

_INT = re.compile(r"[+-]?[0-9]{1,19}\Z")
_ATTR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_INT_RANGE = (-(1 << 63), (1 << 63) - 1)

#: each request: its arguments (s a word, d an integer, r the rest of the line) and the
#: group that enables it ("" always)
REQUESTS: dict[str, tuple[str, str]] = {
    "version": ("", ""),
    "get_job_attr": ("s", "updates"), "set_job_attr": ("sr", "updates"), "ulog": ("r", "updates"),
    "get_job_attr_delayed": ("s", "delayed"), "set_job_attr_delayed": ("sr", "delayed"),
    "whoami": ("d", "io"), "whoareyou": ("sd", "io"), "putfile": ("sdd", "io"), "getfile": ("s", "io"),
    "open": ("ssd", "io"), "close": ("d", "io"), "read": ("dd", "io"), "pread": ("ddd", "io"),
    "sread": ("ddddd", "io"), "write": ("dd", "io"), "pwrite": ("ddd", "io"), "swrite": ("ddddd", "io"),
    "lseek": ("ddd", "io"), "fsync": ("d", "io"), "fstat": ("d", "io"), "fstatfs": ("d", "io"),
    "fchown": ("ddd", "io"), "fchmod": ("dd", "io"), "ftruncate": ("dd", "io"),
    "unlink": ("s", "io"), "rename": ("ss", "io"), "mkdir": ("sd", "io"), "rmdir": ("s", "io"),
    "rmall": ("s", "io"), "stat": ("s", "io"), "lstat": ("s", "io"), "statfs": ("s", "io"),
    "access": ("sd", "io"), "chmod": ("sd", "io"), "chown": ("sdd", "io"), "lchown": ("sdd", "io"),
    "truncate": ("sd", "io"), "utime": ("sdd", "io"), "link": ("ss", "io"), "symlink": ("ss", "io"),
    "readlink": ("sd", "io"), "getdir": ("s", "io"), "getlongdir": ("s", "io"), "lookup": ("s", "io"),
}
_WRITES = ("write", "pwrite", "swrite")  # their second word counts the bytes after the line


def split_words(line: str) -> list[str]:
    """A request line's words: whitespace separates, ``\\`` makes the next character
    part of the word (htchirp's and condor_chirp's quoting)."""
    words: list[str] = []
    cur: list[str] = []
    in_word = False
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c == "\\":
            if i + 1 < n:
                cur.append(line[i + 1])
                in_word = True
            i += 2
            continue
        if c.isspace():
            if in_word:
                words.append("".join(cur))
                cur, in_word = [], False
        else:
            cur.append(c)
            in_word = True
        i += 1
    if in_word:
        words.append("".join(cur))
    return words


def parse_request(line: str) -> tuple[str, list[Any]] | int:
    """(name, arguments) of a request line, or the error to answer."""
    words = split_words(line)
    spec = REQUESTS.get(words[0]) if words else None
    if spec is None:
        return INVALID_REQUEST
    args: list[Any] = []
    rest = words[1:]
    for i, kind in enumerate(spec[0]):
        if i >= len(rest):
            return INVALID_REQUEST
        word = rest[i]
        if kind == "r":
            args.append(" ".join(rest[i:]))
            break
        if kind == "d":
            if not _INT.match(word):
                return INVALID_REQUEST
            value = int(word)
            if not _INT_RANGE[0] <= value <= _INT_RANGE[1]:
                return INVALID_REQUEST
            args.append(value)
        else:
            args.append(word)
    return words[0], args


@dataclass(frozen=True)
class ChirpSettings:
    """The machine's Chirp knobs (HTCondor's names and defaults)."""

    enable: bool = True  # ENABLE_CHIRP
    updates: bool = True  # ENABLE_CHIRP_UPDATES
    io: bool = True  # ENABLE_CHIRP_IO
    delayed: bool = True  # ENABLE_CHIRP_DELAYED
    prefix: tuple[str, ...] = (rules.DEFAULT_PREFIX,)  # CHIRP_DELAYED_UPDATE_PREFIX
    max_attrs: int = rules.DEFAULT_MAX_ATTRS  # CHIRP_DELAYED_UPDATE_MAX_ATTRS

    @classmethod
    def from_config(cls, cfg: Any) -> ChirpSettings:
        def flag(name: str) -> bool:
            v = cfg.get_bool(name, True)
            return True if v is None else bool(v)

        n = cfg.get_int("CHIRP_DELAYED_UPDATE_MAX_ATTRS", rules.DEFAULT_MAX_ATTRS)
        return cls(flag("ENABLE_CHIRP"), flag("ENABLE_CHIRP_UPDATES"), flag("ENABLE_CHIRP_IO"),
                   flag("ENABLE_CHIRP_DELAYED"), tuple(rules.prefix_words(cfg.get("CHIRP_DELAYED_UPDATE_PREFIX"))),
                   max(0, rules.DEFAULT_MAX_ATTRS if n is None else int(n)))

    def wants(self, spec: JobSpec) -> rules.Wants:
        return rules.starter_wants(
            enable=self.enable, enable_updates=self.updates, enable_io=self.io, enable_delayed=self.delayed,
            want_io_proxy=spec.want_io_proxy, want_remote_updates=spec.want_remote_updates,
            want_delayed_updates=spec.want_delayed_updates,
        )


class ChirpFailure(Exception):
    """A request that failed: ``code`` is Chirp's answer."""

    def __init__(self, code: int, why: str = "") -> None:
        super().__init__(why or str(code))
        self.code = code


@dataclass
class IOAnswer:
    """A file operation's result: ``rc`` (>= 0, or Chirp's error code), the line that
    follows it (a stat) and the bytes (what a read got)."""

    rc: int
    text: str = ""
    data: bytes = b""


class Backend(Protocol):
    """What the server asks of the submit side (ScheddBackend; tests record)."""

    async def get_attr(self, name: str) -> str: ...

    async def set_attr(self, name: str, expr: str) -> None: ...

    async def ulog(self, text: str) -> None: ...

    async def send_delayed(self, attrs: dict[str, str]) -> None: ...

    async def io(self, op: str, args: list[Any], payload: bytes = b"") -> IOAnswer: ...

    def end(self) -> None: ...


class _LineTooLong(Exception):
    pass


async def _read_line(reader: asyncio.StreamReader) -> bytes | None:
    """One request line without its newline (an escaped newline is part of it); None at
    the end of the connection."""
    buf = b""
    while True:
        try:
            part = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as e:
            if not buf and not e.partial:
                return None
            raise ConnectionError("the job closed its connection mid-line") from None
        except asyncio.LimitOverrunError:
            raise _LineTooLong from None
        buf += part
        if len(buf) > LINE_MAX:
            raise _LineTooLong
        body = buf[:-1]
        if (len(body) - len(body.rstrip(b"\\"))) % 2 == 0:
            return body


async def _payload(reader: asyncio.StreamReader, n: int, chunk: int = CHUNK) -> AsyncIterator[bytes]:
    """The ``n`` bytes after a request line, in pieces; a stall ends the connection."""
    left = n
    while left:
        async with asyncio.timeout(PAYLOAD_TIMEOUT):
            data = await reader.readexactly(min(chunk, left))
        left -= len(data)
        yield data


async def _drain(reader: asyncio.StreamReader, n: int) -> None:
    async for _ in _payload(reader, n):
        pass


async def identify(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, find: Callable[[bytes], Any],
                   logger: logging.Logger, wrong: str) -> Any:
    """The cookie exchange a Chirp connection starts with: lines until one is ``cookie
    C`` that ``find(C)`` knows (answered 0; what it found), or the client leaves, sends
    a line too long, or fails ``MAX_COOKIE_TRIES`` times (None). A wrong cookie is
    logged (``wrong``) and answered late."""
    tries = 0
    while True:
        try:
            line = await _read_line(reader)
        except _LineTooLong:
            await _answer(writer, TOO_BIG)
            return None
        if line is None:
            return None
        words = line.split()
        found = find(words[1]) if len(words) == 2 and words[0] == b"cookie" else None
        if found is not None:
            await _answer(writer, 0)
            return found
        tries += 1
        if words[:1] == [b"cookie"]:
            logger.warning("%s", wrong)
            await asyncio.sleep(WRONG_COOKIE_DELAY)
        await _answer(writer, NOT_AUTHENTICATED)
        if tries >= MAX_COOKIE_TRIES:
            return None


async def _answer(writer: asyncio.StreamWriter, rc: int, text: str = "", data: bytes = b"") -> None:
    writer.write(f"{rc}\n".encode() + text.encode() + data)
    await writer.drain()


class ChirpServer:
    """One job's Chirp server."""

    def __init__(self, backend: Backend, wants: rules.Wants, *, prefix: tuple[str, ...] = (rules.DEFAULT_PREFIX,),
                 max_attrs: int = rules.DEFAULT_MAX_ATTRS, job_ad: ClassAd | None = None, job_id: str = "") -> None:
        self.backend = backend
        self.wants = wants
        self.prefix = prefix
        self.max_attrs = max_attrs
        self.job_ad = job_ad
        self.job_id = job_id
        self.cookie = ""
        self.port = 0
        #: delayed updates not yet at the schedd (name -> expression text)
        self.delayed: dict[str, str] = {}
        self._delayed_names: set[str] = set()  # every name used: the cap counts these
        self._server: asyncio.AbstractServer | None = None
        self._shared: SharedListener | None = None
        self._clients: set[asyncio.StreamWriter] = set()
        self._lock = asyncio.Lock()  # one request at a time

    async def start(self, port: int = 0, cookie: str | None = None, shared: SharedListener | None = None) -> None:
        """Listen: on the ``shared`` port where there is one (and ``port`` is 0 or that
        port), else on a socket of its own."""
        self.cookie = cookie or secrets.token_hex(16)
        if shared is not None:
            got = await shared.join(self, port)
            if got:
                self._shared, self.port = shared, got
                return
        self._server = await asyncio.start_server(self._client, "127.0.0.1", port, limit=LINE_MAX + 2)
        self.port = self._server.sockets[0].getsockname()[1]

    def contact(self) -> str:
        """The text of ``.chirp.config``."""
        return f"127.0.0.1 {self.port} {self.cookie}\n"

    def close(self) -> None:
        """The job is over: no more connections, and the submit side's file helper ends."""
        if self._server is not None:
            self._server.close()
            self._server = None
        if self._shared is not None:
            self._shared.leave(self)
            self._shared = None
        for w in list(self._clients):
            w.close()
        self.backend.end()

    async def flush_delayed(self) -> None:
        """The delayed updates to the schedd (before each report); kept when it cannot
        take them, for the next one."""
        if not self.delayed:
            return
        batch = dict(self.delayed)
        try:
            await self.backend.send_delayed(batch)
        except ChirpFailure as e:
            log.info("job %s: delayed updates wait for the next report: %s", self.job_id, e)
            return
        except Exception:  # never the report's failure
            log.exception("job %s: sending delayed updates failed", self.job_id)
            return
        for name, text in batch.items():
            if self.delayed.get(name) == text:
                del self.delayed[name]

    # -- connections ----------------------------------------------------------------------

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """A connection to this job's own port (an adopted job's, whose port is not the
        shared one): its cookie, then its requests."""
        if len(self._clients) >= MAX_CONNECTIONS:
            writer.close()
            return
        self._clients.add(writer)  # counted before its cookie too
        mine = self.cookie.encode()
        try:
            found = await identify(reader, writer, lambda c: self if secrets.compare_digest(c, mine) else None,
                                   log, f"job {self.job_id}: a chirp client presented a wrong cookie")
            if found is not None:
                self._clients.discard(writer)
                await self.serve_identified(reader, writer)
        except (ConnectionError, OSError, TimeoutError, asyncio.IncompleteReadError):
            pass
        except Exception:
            log.exception("job %s: a chirp request failed", self.job_id)
        finally:
            self._clients.discard(writer)
            writer.close()

    async def serve_identified(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """A connection to the shared port that presented this job's cookie (answered)."""
        if len(self._clients) >= MAX_CONNECTIONS:
            writer.close()
            return
        self._clients.add(writer)
        try:
            while True:
                try:
                    line = await _read_line(reader)
                except _LineTooLong:
                    await _answer(writer, TOO_BIG)
                    return
                if line is None or not await self._request(line, reader, writer):
                    return
        except (ConnectionError, OSError, TimeoutError, asyncio.IncompleteReadError):
            pass
        except Exception:
            log.exception("job %s: a chirp request failed", self.job_id)
        finally:
            self._clients.discard(writer)
            writer.close()

    def _enabled(self, group: str) -> bool:
        return group == "" or getattr(self.wants, group)

    async def _request(self, raw: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serve one request; False: the connection must end."""
        try:
            parsed = parse_request(raw.decode("utf-8"))
        except UnicodeDecodeError:
            parsed = INVALID_REQUEST
        if isinstance(parsed, int):
            await _answer(writer, parsed)
            return True
        name, args = parsed
        size = args[1] if name in _WRITES else 0
        if size < 0:
            await _answer(writer, INVALID_REQUEST)
            return True
        if size > (IO_MAX if name == "swrite" else WRITE_MAX):
            await _answer(writer, TOO_BIG)
            return False  # its bytes follow: nothing after them can be read as a request
        async with self._lock:
            if not self._enabled(REQUESTS[name][1]):
                await _drain(reader, size)
                await _answer(writer, NOT_AUTHORIZED)
                return True
            handler: Callable[..., Any] = getattr(self, "_do_" + name, self._do_io)
            try:
                await handler(name, args, reader, writer)
            except ChirpFailure as e:
                await _answer(writer, e.code)
        return True

    # -- attributes -----------------------------------------------------------------------

    async def _do_version(self, name: str, args: list[Any], reader: Any, writer: asyncio.StreamWriter) -> None:
        await _answer(writer, VERSION)

    @staticmethod
    def _attr_name(name: str) -> str:
        if not _ATTR.match(name):
            raise ChirpFailure(INVALID_REQUEST)
        return name

    async def _do_get_job_attr(self, name: str, args: list[Any], reader: Any, writer: asyncio.StreamWriter) -> None:
        data = (await self.backend.get_attr(self._attr_name(args[0]))).encode()
        await _answer(writer, len(data), data=data)

    async def _do_set_job_attr(self, name: str, args: list[Any], reader: Any, writer: asyncio.StreamWriter) -> None:
        await self.backend.set_attr(self._attr_name(args[0]), args[1])
        await _answer(writer, 0)

    async def _do_ulog(self, name: str, args: list[Any], reader: Any, writer: asyncio.StreamWriter) -> None:
        await self.backend.ulog(args[0])
        await _answer(writer, 0)

    def set_delayed(self, name: str, text: str) -> int:
        """Keep a delayed update for the next report: 0, or Chirp's refusal."""
        if not _ATTR.match(name):
            return INVALID_REQUEST
        if len(text) > rules.DELAYED_VALUE_MAX:
            return TOO_BIG
        if not rules.prefix_matches(self.prefix, name):
            return NOT_AUTHORIZED
        try:
            expr = parse_expr(text)
        except ClassAdSyntaxError:
            return INVALID_REQUEST
        if name not in self._delayed_names:
            if len(self._delayed_names) >= self.max_attrs:
                return TOO_MANY_OPEN
            self._delayed_names.add(name)
        self.delayed[name] = unparse(expr)
        return 0

    async def _do_set_job_attr_delayed(self, name: str, args: list[Any], reader: Any,
                                       writer: asyncio.StreamWriter) -> None:
        await _answer(writer, self.set_delayed(args[0], args[1]))

    async def _do_get_job_attr_delayed(self, name: str, args: list[Any], reader: Any,
                                       writer: asyncio.StreamWriter) -> None:
        attr = self._attr_name(args[0])
        text = self.delayed.get(attr)
        if text is None and self.job_ad is not None and attr in self.job_ad:
            text = str(self.job_ad.lookup(attr))
        if text is None:
            raise ChirpFailure(DOESNT_EXIST)
        data = text.encode()
        await _answer(writer, len(data), data=data)

    # -- files ----------------------------------------------------------------------------

    async def _do_io(self, name: str, args: list[Any], reader: Any, writer: asyncio.StreamWriter) -> None:
        """A request the submit side answers as it is (reads clamped to IO_MAX)."""
        if name in ("read", "pread", "sread", "readlink"):
            if args[1] < 0:
                raise ChirpFailure(INVALID_REQUEST)
            args[1] = min(args[1], IO_MAX)
        ans = await self.backend.io(name, args)
        await _answer(writer, ans.rc, ans.text if ans.rc >= 0 else "", ans.data if ans.rc >= 0 else b"")

    async def _write_pieces(self, reader: asyncio.StreamReader, size: int, op: str, fd: int,
                            offset: int | None = None) -> int:
        """The request's ``size`` bytes written in pieces (each read off the job's
        connection even after a failure): the bytes written, or the first failure's
        code when nothing was."""
        done, failure = 0, 0
        async for piece in _payload(reader, size):
            if failure:
                continue
            try:
                args = [fd] if offset is None else [fd, offset + done]
                ans = await self.backend.io(op, args, piece)
            except ChirpFailure as e:
                ans = IOAnswer(e.code)
            if ans.rc < 0:
                failure = ans.rc
            else:
                done += ans.rc
        return failure if failure and not done else done

    async def _do_write(self, name: str, args: list[Any], reader: asyncio.StreamReader,
                        writer: asyncio.StreamWriter) -> None:
        await _answer(writer, await self._write_pieces(reader, args[1], "write", args[0]))

    async def _do_pwrite(self, name: str, args: list[Any], reader: asyncio.StreamReader,
                         writer: asyncio.StreamWriter) -> None:
        await _answer(writer, await self._write_pieces(reader, args[1], "pwrite", args[0], args[2]))

    async def _do_swrite(self, name: str, args: list[Any], reader: asyncio.StreamReader,
                         writer: asyncio.StreamWriter) -> None:
        fd, size, offset, stride, skip = args
        payload = b"".join([p async for p in _payload(reader, size)])
        ans = await self.backend.io("swrite", [fd, offset, stride, skip], payload)
        await _answer(writer, ans.rc)

    async def _do_putfile(self, name: str, args: list[Any], reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:
        """Answered twice: once the file is open (the client then sends its bytes), and
        with the count written (also for an empty file: htchirp waits for it)."""
        path, mode, size = args
        if size < 0:
            raise ChirpFailure(INVALID_REQUEST)
        if size > WRITE_MAX:
            raise ChirpFailure(TOO_BIG)  # before its bytes: the client sends none
        opened = await self.backend.io("open", [path, "wct", mode])
        if opened.rc < 0:
            raise ChirpFailure(opened.rc)
        await _answer(writer, 0)
        try:
            result = await self._write_pieces(reader, size, "write", opened.rc)
        finally:
            with contextlib.suppress(ChirpFailure):
                await self.backend.io("close", [opened.rc])
        await _answer(writer, result)

    async def _do_getfile(self, name: str, args: list[Any], reader: Any, writer: asyncio.StreamWriter) -> None:
        """The file's size, then its bytes (read in pieces; a file that shrank meanwhile
        is padded with zeros: the size was promised)."""
        opened = await self.backend.io("open", [args[0], "r", 0])
        if opened.rc < 0:
            raise ChirpFailure(opened.rc)
        fd = opened.rc
        try:
            fields = opened.text.split()
            mode, size = int(fields[2]), int(fields[7])
            if stat.S_ISDIR(mode):
                raise ChirpFailure(IS_DIR)
            if size > WRITE_MAX:
                raise ChirpFailure(TOO_BIG)
            await _answer(writer, size)
            sent = 0
            while sent < size:
                try:
                    got = await self.backend.io("read", [fd, min(CHUNK, size - sent)])
                except ChirpFailure:
                    got = IOAnswer(-1)
                piece = got.data[: size - sent] if got.rc > 0 else b""
                if not piece:
                    piece = bytes(min(CHUNK, size - sent))
                writer.write(piece)
                await writer.drain()
                sent += len(piece)
        except (ValueError, IndexError):
            raise ChirpFailure(UNKNOWN) from None
        finally:
            with contextlib.suppress(ChirpFailure):
                await self.backend.io("close", [fd])

    async def _do_whoami(self, name: str, args: list[Any], reader: Any, writer: asyncio.StreamWriter) -> None:
        if args[-1] < len(WHOAMI):
            raise ChirpFailure(NO_SPACE)
        await _answer(writer, len(WHOAMI), data=WHOAMI)

    _do_whoareyou = _do_whoami


class ScheddBackend:
    """The submit side of a job's Chirp: CHIRP_ATTR and CHIRP_IO to the claim's schedd."""

    _ending: set[asyncio.Task[Any]] = set()

    def __init__(self, peers: Peers, address_of: Callable[[], str | None], claim_id: str, job_id: str) -> None:
        self.peers = peers
        self.address_of = address_of
        self.claim_id = claim_id
        self.job_id = job_id
        self.used_io = False

    def _where(self) -> str:
        address = self.address_of()
        if not address:
            raise ChirpFailure(OFFLINE, "no schedd for this claim")
        return address

    async def _attr(self, **args: Any) -> dict[str, Any]:
        try:
            return await self.peers.call(self._where(), "CHIRP_ATTR", claim_id=self.claim_id, job=self.job_id, **args)
        except RemoteError as e:
            raise ChirpFailure(REMOTE_CODES.get(e.code, UNKNOWN), e.message) from None
        except (ConnectionError, OSError, TimeoutError) as e:
            raise ChirpFailure(OFFLINE, str(e) or "the schedd did not answer") from None

    async def get_attr(self, name: str) -> str:
        got = (await self._attr(op="get", name=name)).get("expr")
        if not isinstance(got, str):
            raise ChirpFailure(UNKNOWN, "CHIRP_ATTR answered no expression")
        return got

    async def set_attr(self, name: str, expr: str) -> None:
        await self._attr(op="set", name=name, expr=expr)

    async def ulog(self, text: str) -> None:
        await self._attr(op="ulog", text=text)

    async def send_delayed(self, attrs: dict[str, str]) -> None:
        await self._attr(op="delayed", attrs=attrs)

    async def io(self, op: str, args: list[Any], payload: bytes = b"") -> IOAnswer:
        self.used_io = True
        address = self._where()
        try:
            async with self.peers.connection(address) as conn, asyncio.timeout(CALL_TIMEOUT):
                await conn.send({"cmd": "CHIRP_IO", "claim_id": self.claim_id, "job": self.job_id, "op": op,
                                 "args": args, "size": len(payload)})
                if payload:
                    await conn.send_bytes(payload)
                resp = await conn.recv()
                if resp.get("ok") is not True:
                    # the schedd read our bytes before it refused: the connection is in step
                    raise RemoteError(str(resp.get("code") or "ERROR"), str(resp.get("error") or "refused"))
                size = resp.get("size", 0)
                if type(size) is not int or not 0 <= size <= IO_MAX:
                    raise ConnectionError("CHIRP_IO answer with a bad size")
                data = await conn.read_exactly(size) if size else b""
        except RemoteError as e:
            raise ChirpFailure(REMOTE_CODES.get(e.code, UNKNOWN), e.message) from None
        except (ConnectionError, OSError, TimeoutError) as e:
            raise ChirpFailure(OFFLINE, str(e) or "the schedd did not answer") from None
        rc = resp.get("rc")
        if type(rc) is not int:
            raise ChirpFailure(UNKNOWN, "CHIRP_IO answered no result")
        if rc < 0:
            return IOAnswer(ERRNO_CODES.get(str(resp.get("errno")), UNKNOWN))
        text = resp.get("text")
        return IOAnswer(rc, text if isinstance(text, str) else "", data)

    def end(self) -> None:
        """Tell the schedd the job's file helper may go (best effort: it also sweeps)."""
        if not self.used_io or not self.address_of():
            return

        async def end() -> None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(CALL_TIMEOUT):
                    await self.peers.call(self._where(), "CHIRP_IO", claim_id=self.claim_id, job=self.job_id,
                                          op="end", args=[])

        task = asyncio.get_running_loop().create_task(end())
        self._ending.add(task)
        task.add_done_callback(self._ending.discard)


class JobSide(Protocol):
    """What ``serve`` needs of a starter."""

    spec: JobSpec
    sandbox: str
    identity: Identity
    env: dict[str, str]
    peers: Peers
    claim_id: str
    address_of: Callable[[], str | None]


def _write_contact(path: str, text: str, identity: Identity) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # an input file of that name: ours wins
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, text.encode())
        if identity.switch:
            os.fchown(fd, identity.uid, identity.gid)
    finally:
        os.close(fd)


def _read_contact(path: str) -> tuple[int, str]:
    """Port and cookie from the file we wrote (the job could have replaced it: never
    followed if a link, and only a plausible port and cookie are taken)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{path} is not the file we wrote")
        words = os.read(fd, 256).decode("ascii", "replace").split()
    finally:
        os.close(fd)
    if len(words) != 3 or not words[1].isdigit() or not 1024 <= int(words[1]) <= 65535 \
            or not re.fullmatch(r"[0-9a-f]{32}", words[2]):
        raise ValueError(f"{path} is not the file we wrote")
    return int(words[1]), words[2]


async def serve(job: JobSide, settings: ChirpSettings | None, *, resume: bool = False,
                shared: SharedListener | None = None) -> ChirpServer | None:
    """Start the job's Chirp server if its ad and the machine want one: before the job
    starts (``.chirp.config`` written, its environment names it), or again for a job a
    previous startd started (``resume``: the same port and cookie, from the file).
    None when the job gets no Chirp (or it cannot be served: never the job's failure)."""
    if settings is None:
        return None
    spec = job.spec
    wants = settings.wants(spec)
    if not wants.any:
        return None
    server = ChirpServer(ScheddBackend(job.peers, job.address_of, job.claim_id, spec.job_id), wants,
                         prefix=settings.prefix, max_attrs=settings.max_attrs, job_ad=spec.job_ad,
                         job_id=spec.job_id)
    path = os.path.join(job.sandbox, CONFIG_NAME)
    try:
        if resume:
            port, cookie = _read_contact(path)
            await server.start(port, cookie, shared=shared)
        else:
            await server.start(shared=shared)
            contact = server.contact()  # written off the loop: ~1 ms of file system wait a job
            await launch.on_sandboxer(lambda: _write_contact(path, contact, job.identity))
    except Exception as e:  # a job without Chirp still runs
        log.warning("job %s: no Chirp server: %s", spec.job_id, e)
        server.close()
        return None
    job.env[ENV_NAME] = path
    log.debug("job %s: chirp on port %d (io %s, updates %s, delayed %s)", spec.job_id, server.port,
              wants.io, wants.updates, wants.delayed)
    return server
