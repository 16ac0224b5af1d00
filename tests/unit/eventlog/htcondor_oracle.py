"""HTCondor's own event formatter, called offline through its shared library.

The PyPI bindings read event logs but have no writer.  The wheel's
libcondor_utils still exports the C++ functions HTCondor's daemons use:
``instantiateEvent(ClassAd*)`` builds an event from an event ad (the same ad
``toClassAd`` produces) and ``ULogEvent::formatEvent(std::string&, int)``
writes its text.  We call them with ctypes, passing a hand-built libstdc++
``std::string`` (pointer, length, 16-byte local buffer).  Nothing here is
needed by roost itself: it is the reference for differential tests and the
benchmark.  ``available()`` is False where the library or ABI does not fit.
"""

from __future__ import annotations

import ctypes
import glob
import os

_ISO_DATE = 0x10
_UTC = 0x20

_state: dict[str, object] = {}


def _load() -> bool:
    if "ok" in _state:
        return bool(_state["ok"])
    try:
        import classad2
        import htcondor2  # noqa: F401  (loads the libraries and a null config)

        libdir = os.path.join(os.path.dirname(htcondor2.__file__), "..", "htcondor.libs")
        ca = ctypes.CDLL(glob.glob(os.path.join(libdir, "libclassad-*.so*"))[0])
        cu = ctypes.CDLL(glob.glob(os.path.join(libdir, "libcondor_utils_*.so"))[0])
        parser = ctypes.create_string_buffer(4096)  # generous room for a ClassAdParser
        ca._ZN7classad13ClassAdParserC1Ev(parser)
        parse = ca._ZN7classad13ClassAdParser12ParseClassAdEPKcb
        parse.restype, parse.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_bool]
        inst = cu._Z16instantiateEventPN7classad7ClassAdE
        inst.restype, inst.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
        fmt = cu._ZN9ULogEvent11formatEventERNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEi
        fmt.restype, fmt.argtypes = ctypes.c_bool, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
        _state.update(parser=parser, parse=parse, inst=inst, fmt=fmt, classad2=classad2, ok=True)
        ok = format_ad_text('[EventTypeNumber = 8; Cluster = 1; Proc = 0; Subproc = 0; EventTime = "2024-01-02T03:04:05"; Info = "x"]')
        _state["ok"] = ok.startswith("008 (001.000.000) 2024-01-02 03:04:05 x\n")
    except Exception:  # noqa: BLE001 - any failure means "no oracle here"
        _state["ok"] = False
    return bool(_state["ok"])


def available() -> bool:
    return _load()


def instantiate(ad_text: str) -> int:
    """A C++ ULogEvent built by HTCondor from an event ad (new-syntax text); leaked on purpose."""
    ad = _state["parse"](_state["parser"], ad_text.encode(), True)  # type: ignore[operator]
    if not ad:
        raise ValueError(f"HTCondor could not parse {ad_text!r}")
    ev = _state["inst"](ad)  # type: ignore[operator]
    if not ev:
        raise ValueError("HTCondor made no event from this ad")
    return ev


class Formatter:
    """Calls ``ULogEvent::formatEvent`` into one reusable ``std::string``."""

    def __init__(self, *, utc: bool = False) -> None:
        self._buf = (ctypes.c_uint64 * 4)()
        self._base = ctypes.addressof(self._buf)
        self._buf[0] = self._base + 16  # empty string in its local buffer
        self._opts = _ISO_DATE | (_UTC if utc else 0)
        self._fmt = _state["fmt"]

    def format(self, event: int) -> bytes:
        buf = self._buf
        buf[1] = 0  # clear(): length 0, NUL first byte; a grown heap buffer is reused
        ctypes.memset(buf[0], 0, 1)
        if not self._fmt(event, self._base, self._opts):  # type: ignore[operator]
            raise ValueError("HTCondor refused to format this event")
        return ctypes.string_at(buf[0], buf[1])


def format_ad_text(ad_text: str, *, utc: bool = False) -> str:
    """HTCondor's text for the event described by a ClassAd (new-syntax text), without ``...``."""
    # The event, ad and string are leaked on purpose: freeing C++ objects from
    # Python would need their destructors' exact ABI; tests make few of them.
    return Formatter(utc=utc).format(instantiate(ad_text)).decode()


def format_attrs(attrs: dict) -> str:
    """HTCondor's text for an event given as attribute -> Python value (like ``Event.attrs()``)."""
    classad2 = _state["classad2"]
    ad = classad2.ClassAd()  # type: ignore[attr-defined]
    for k, v in attrs.items():
        if isinstance(v, dict):
            ad[k] = classad2.ClassAd(v)  # type: ignore[attr-defined]
        else:
            ad[k] = v
    return format_ad_text(str(ad))
