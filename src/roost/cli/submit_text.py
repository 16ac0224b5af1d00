"""The fast path of ``roost submit``: the submit text to the schedd, which parses it.

``roost submit`` is timed from process start to the job's terminated event,
and importing the submit language and the API costs a new process ~35 ms,
more than the pool needs to run the job. So when the schedd's Unix socket is
there, the tool sends the text, its working directory and environment in one
SUBMIT_TEXT request, with nothing imported but two C modules; the
schedd parses with exactly what the tool would have used. A schedd that
does not hold the user's rights answers SUBMIT_LOCALLY, and the tool parses
and submits itself (``submit_send``), as it does without a socket.
"""

from __future__ import annotations

import _socket  # the C module: `socket` would import enum and selectors (~5 ms)
import os
import sys

from roost.poolhome import pool_home, run_path

TIMEOUT_S = 300.0  # a queue 100000 file is parsed and committed in about a second


class _Refused(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _recv_exactly(sock, n: int) -> bytes:  # noqa: ANN001 (a _socket.socket)
    parts: list[bytes] = []
    while n:
        got = sock.recv(min(n, 1 << 20))
        if not got:
            raise ConnectionError("the schedd closed the connection before answering")
        parts.append(got)
        n -= len(got)
    return b"".join(parts)


class _ScanContext:
    """What ``_json.make_scanner`` reads from ``json.JSONDecoder``."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo: dict = {}

    @staticmethod
    def parse_constant(name: str) -> float:
        return float(name)


def _dumps(obj: dict) -> bytes:
    """Compact ASCII JSON, as ``json.dumps`` makes it, through ``json``'s own C codec:
    ``import json`` pulls in ``re`` and ``enum``, ~5 ms of a timed process."""
    try:
        # lazy: the C codec may be missing (another Python); `json` only then (~5 ms)
        import _json

        encode = _json.make_encoder(None, None, _json.encode_basestring_ascii, None, ":", ",", False, False, True)
        return "".join(encode(obj, 0)).encode()
    except (ImportError, AttributeError, TypeError):  # another Python: the plain way
        # lazy: only without the C codec (`json` imports re and enum, ~5 ms)
        import json

        return json.dumps(obj, separators=(",", ":")).encode()


def _loads(data: bytes) -> object:
    text = data.decode()
    try:
        # lazy: the C codec may be missing (another Python); `json` only then (~5 ms)
        import _json

        scan = _json.make_scanner(_ScanContext())
    except (ImportError, AttributeError, TypeError):
        # lazy: only without the C codec (`json` imports re and enum, ~5 ms)
        import json

        return json.loads(text)
    try:
        obj, end = scan(text, 0)
    except StopIteration:
        raise ConnectionError("the schedd's answer is not JSON") from None
    if text[end:].strip():
        raise ConnectionError("the schedd's answer has bytes after its JSON")
    return obj


def _call(path: str, request: dict) -> dict | None:
    """One request on the schedd's Unix socket; None when there is no schedd behind it."""
    body = _dumps(request)
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(TIMEOUT_S)
        try:
            sock.connect(path)
        except OSError:
            return None  # a stale socket file: the full path says what is wrong
        sock.sendall(len(body).to_bytes(4, "big") + body)
        answer = _loads(_recv_exactly(sock, int.from_bytes(_recv_exactly(sock, 4), "big")))
    except OSError as e:  # includes a timeout: the jobs may or may not be in the queue
        raise ConnectionError(f"lost the connection to the schedd: {e}") from None
    finally:
        sock.close()
    if not isinstance(answer, dict):
        raise ConnectionError("the schedd answered something that is not a JSON object")
    if answer.get("ok") is not True:
        raise _Refused(str(answer.get("code")), str(answer.get("error")))
    return answer


def submit_text(text: str, *, file: str, cwd: str, overrides: dict[str, str], append: list[str],
                terse: bool = False) -> int | None:
    """Submit through the schedd; the exit status, or None to take the full path."""
    path = run_path(pool_home(), "schedd.sock")
    if not os.path.exists(path):
        return None
    request = {"cmd": "SUBMIT_TEXT", "text": text, "file": file, "cwd": cwd, "env": dict(os.environ),
               "overrides": overrides, "append": append}
    try:
        answer = _call(path, request)
    except _Refused as e:
        if e.code == "SUBMIT_LOCALLY":
            return None
        if not terse:
            print("Submitting job(s)", flush=True)
        print(f"ERROR: {e}", file=sys.stderr)
        return 1
    except ConnectionError as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return 1
    if answer is None:
        return None
    clusters = [(int(c), int(n)) for c, n in answer.get("clusters") or ()]
    # condor_submit's lines (submit_send.report, inlined: importing it costs the API)
    if terse:
        out = "".join(f"{c}.0 - {c}.{n - 1}\n" for c, n in clusters)
    else:
        out = "Submitting job(s)" + "." * sum(n for _, n in clusters) + "\n"
        out += "".join(f"{n} job(s) submitted to cluster {c}.\n" for c, n in clusters)
    sys.stdout.write(out)
    for w in answer.get("warnings") or ():
        print(w, file=sys.stderr)
    return 0
