"""Frames: a 4-byte big-endian length, then that many bytes of UTF-8 JSON holding one object.

Pure functions over bytes, shared by the asyncio server/client and the
blocking client; only stdlib ``json`` and ``struct`` (no third-party codec).
"""

from __future__ import annotations

import json
import struct
import sys
from typing import Any

from roost.net.errors import ProtocolError

MAX_FRAME = 64 * 1024 * 1024
HEADER = struct.Struct(">I")
HEADER_SIZE = HEADER.size

_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)
_decoder = json.JSONDecoder()


def encode(obj: dict[str, Any]) -> bytes:
    """The frame (header + body) for a JSON object. Raises ProtocolError if it is too big
    and TypeError for values JSON cannot hold."""
    body = _encoder.encode(obj).encode("utf-8", "surrogatepass")
    n = len(body)
    if n > MAX_FRAME:
        raise ProtocolError(f"frame of {n} bytes exceeds MAX_FRAME ({MAX_FRAME} bytes)")
    return HEADER.pack(n) + body


def body_length(header: bytes, limit: int = MAX_FRAME, what: str = "MAX_FRAME") -> int:
    """The body length announced by a 4-byte header; ProtocolError if over ``limit``
    (checked before a byte of the body is read: an announced size costs nothing)."""
    (n,) = HEADER.unpack(header)
    if n > limit:
        raise ProtocolError(f"frame announces {n} bytes, over {what} ({limit} bytes)")
    return n


def decode_body(body: bytes | bytearray | memoryview) -> dict[str, Any]:
    """The JSON object in a frame body; ProtocolError if not UTF-8 JSON holding an object."""
    try:
        text = bytes(body).decode("utf-8")
    except UnicodeDecodeError as e:
        raise ProtocolError(f"frame is not valid UTF-8 ({e.reason} at byte {e.start})") from None
    try:
        obj = _decoder.decode(text)
    except json.JSONDecodeError as e:
        raise ProtocolError(f"frame is not valid JSON: {e}") from None
    except RecursionError:  # "[[[[..." deeper than the interpreter's stack
        raise ProtocolError("frame is not valid JSON: arrays or objects nested too deeply") from None
    except ValueError:  # an integer past sys.get_int_max_str_digits() (CVE-2020-10735's guard)
        raise ProtocolError(f"frame is not valid JSON: a number of more than {sys.get_int_max_str_digits()} digits") from None
    if type(obj) is not dict:
        raise ProtocolError(f"frame holds a JSON {type(obj).__name__}, not an object")
    return obj


def error_response(code: str, message: str) -> dict[str, Any]:
    """The response object of a refused request."""
    return {"ok": False, "error": message, "code": code}
