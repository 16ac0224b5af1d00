import pytest

from roost.net import framing
from roost.net.errors import ProtocolError


def test_round_trip_unicode_and_nesting():
    obj = {"cmd": "X", "s": "héllo ☃", "n": [1, 2.5, None, True], "d": {"a": {}}}
    frame = framing.encode(obj)
    n = framing.body_length(frame[:4])
    assert n == len(frame) - 4
    assert framing.decode_body(frame[4:]) == obj


def test_header_is_big_endian_length():
    frame = framing.encode({})
    assert frame == b"\x00\x00\x00\x02{}"


def test_over_max_frame_is_refused_from_header():
    with pytest.raises(ProtocolError, match="MAX_FRAME"):
        framing.body_length((framing.MAX_FRAME + 1).to_bytes(4, "big"))


@pytest.mark.parametrize(
    "body, words",
    [(b"\xff\xfe", "UTF-8"), (b"{nope", "JSON"), (b"[1, 2]", "list"), (b'"x"', "str"),
     # issue 25: past Python's int-digit limit (a ValueError) and past its stack
     (b'{"n": ' + b"9" * 100_000 + b"}", "more than 4300 digits"),
     (b'{"n": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply")],
)
def test_bad_bodies(body, words):
    with pytest.raises(ProtocolError, match=words):
        framing.decode_body(body)
