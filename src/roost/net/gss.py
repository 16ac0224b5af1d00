"""GSSAPI (Kerberos 5) through MIT's ``libgssapi_krb5.so.2``, by ctypes: the handful
of calls the KERBEROS method needs, with no compiler and no Python package.

The client (:class:`Initiator`) holds a ticket-granting ticket (``kinit``; the cache
is ``KRB5CCNAME``) and asks for a context with the daemons' service principal
(``KERBEROS_SERVER_PRINCIPAL``, e.g. ``condor/pool@EXAMPLE.ORG``); the daemon
(:class:`Acceptor`) holds that principal's key in a keytab (``KERBEROS_SERVER_KEYTAB``).
Mutual authentication is asked for, so the client also knows the daemon holds the
key, and the TLS channel binding (the server certificate's hash) goes into the GSS
channel bindings, so a context made through a man in the middle fails.
Each side loops ``step`` until ``done``; the tokens travel in ``AUTH`` frames.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from typing import Any

OM_uint32 = ctypes.c_uint32

GSS_C_MUTUAL_FLAG = 2
GSS_C_INTEG_FLAG = 32
GSS_C_CONTINUE_NEEDED = 1
GSS_C_INDEFINITE = 0xFFFFFFFF
GSS_C_ACCEPT = 2
GSS_C_GSS_CODE = 1
GSS_C_MECH_CODE = 2
GSS_S_COMPLETE = 0
_ERROR_MASK = 0xFFFF0000


class GSSError(Exception):
    """A GSSAPI call failed; the message is the library's own words (one line)."""


class _Buffer(ctypes.Structure):
    _fields_ = [("length", ctypes.c_size_t), ("value", ctypes.c_void_p)]


class _OID(ctypes.Structure):
    _fields_ = [("length", OM_uint32), ("elements", ctypes.c_void_p)]


class _Bindings(ctypes.Structure):
    _fields_ = [("initiator_addrtype", OM_uint32), ("initiator_address", _Buffer),
                ("acceptor_addrtype", OM_uint32), ("acceptor_address", _Buffer),
                ("application_data", _Buffer)]


_lib: Any = None
_lock = threading.Lock()


def library() -> Any:
    """The loaded library; GSSError when this machine has none (install libgssapi-krb5-2)."""
    global _lib
    with _lock:
        if _lib is None:
            path = ctypes.util.find_library("gssapi_krb5") or "libgssapi_krb5.so.2"
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                raise GSSError(f"KERBEROS: no GSSAPI library here ({e}): install MIT Kerberos (libgssapi-krb5-2)") from None
            p = ctypes.POINTER
            lib.gss_import_name.argtypes = [p(OM_uint32), p(_Buffer), p(_OID), p(ctypes.c_void_p)]
            lib.gss_init_sec_context.argtypes = [
                p(OM_uint32), ctypes.c_void_p, p(ctypes.c_void_p), ctypes.c_void_p, p(_OID), OM_uint32, OM_uint32,
                p(_Bindings), p(_Buffer), p(p(_OID)), p(_Buffer), p(OM_uint32), p(OM_uint32)]
            lib.gss_accept_sec_context.argtypes = [
                p(OM_uint32), p(ctypes.c_void_p), ctypes.c_void_p, p(_Buffer), p(_Bindings), p(ctypes.c_void_p),
                p(p(_OID)), p(_Buffer), p(OM_uint32), p(OM_uint32), p(ctypes.c_void_p)]
            lib.gss_display_name.argtypes = [p(OM_uint32), ctypes.c_void_p, p(_Buffer), p(p(_OID))]
            lib.gss_display_status.argtypes = [p(OM_uint32), OM_uint32, ctypes.c_int, p(_OID), p(OM_uint32), p(_Buffer)]
            lib.gss_release_buffer.argtypes = [p(OM_uint32), p(_Buffer)]
            lib.gss_release_name.argtypes = [p(OM_uint32), p(ctypes.c_void_p)]
            lib.gss_delete_sec_context.argtypes = [p(OM_uint32), p(ctypes.c_void_p), p(_Buffer)]
            for fn in ("gss_import_name", "gss_init_sec_context", "gss_accept_sec_context", "gss_display_name",
                       "gss_display_status", "gss_release_buffer", "gss_release_name", "gss_delete_sec_context"):
                getattr(lib, fn).restype = OM_uint32
            _lib = lib
    return _lib


def _status_text(major: int, minor: int) -> str:
    lib = library()
    out = []
    for code, kind in ((major, GSS_C_GSS_CODE), (minor, GSS_C_MECH_CODE)):
        if kind == GSS_C_MECH_CODE and not code:
            continue
        ctx = OM_uint32(0)
        while True:
            m = OM_uint32(0)
            buf = _Buffer()
            if lib.gss_display_status(ctypes.byref(m), code, kind, None, ctypes.byref(ctx), ctypes.byref(buf)):
                break
            out.append(ctypes.string_at(buf.value, buf.length).decode("utf-8", "replace"))
            lib.gss_release_buffer(ctypes.byref(m), ctypes.byref(buf))
            if not ctx.value:
                break
    noise = ("Success", "Unspecified GSS failure.  Minor code may provide more information")
    return "; ".join(t for t in out if t and t not in noise) or f"GSS error {major:#x}/{minor}"


def _check(major: int, minor: OM_uint32, what: str) -> None:
    if major & _ERROR_MASK:  # routine or calling errors; the low 16 bits are only information
        raise GSSError(f"KERBEROS: {what}: {_status_text(major, minor.value)}")


def _take(buf: _Buffer) -> bytes:
    data = ctypes.string_at(buf.value, buf.length) if buf.length else b""
    if buf.value:
        library().gss_release_buffer(ctypes.byref(OM_uint32(0)), ctypes.byref(buf))
    return data


def _bindings(binding: str) -> tuple[_Bindings, Any]:
    data = ctypes.create_string_buffer(binding.encode("ascii"), len(binding))
    b = _Bindings()
    b.application_data = _Buffer(len(binding), ctypes.cast(data, ctypes.c_void_p))
    return b, data  # keep ``data`` alive as long as the bindings


#: GSS_C_NT_HOSTBASED_SERVICE ("service@host"), 1.2.840.113554.1.2.1.4, and
#: GSS_KRB5_NT_PRINCIPAL_NAME ("primary/instance@REALM"), 1.2.840.113554.1.2.2.1
_HOSTBASED_DER = b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x01\x04"
_PRINCIPAL_DER = b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x02\x01"
_OIDS: dict[bytes, tuple[_OID, Any]] = {}


def _oid(der: bytes) -> _OID:
    """A name-type OID, made once and kept (with the bytes it points at)."""
    with _lock:
        got = _OIDS.get(der)
        if got is None:
            data = ctypes.create_string_buffer(der, len(der))
            got = _OIDS[der] = (_OID(len(der), ctypes.cast(data, ctypes.c_void_p)), data)
    return got[0]


def _import_name(text: str) -> ctypes.c_void_p:
    lib = library()
    raw = text.encode()
    buf = _Buffer(len(raw), ctypes.cast(ctypes.c_char_p(raw), ctypes.c_void_p))
    # ``service@host`` is host-based; ``primary/instance@REALM`` (a realm is upper case) a principal
    host_based = "/" not in text and "@" in text and not text.rsplit("@", 1)[1].isupper()
    oid = _oid(_HOSTBASED_DER if host_based else _PRINCIPAL_DER)
    name = ctypes.c_void_p()
    minor = OM_uint32(0)
    _check(lib.gss_import_name(ctypes.byref(minor), ctypes.byref(buf), ctypes.byref(oid), ctypes.byref(name)),
           minor, f"bad service principal {text!r}")
    return name


class Initiator:
    """The client's side of one context with ``service`` (``condor/pool@REALM``, or
    ``host@hostname``)."""

    def __init__(self, service: str, binding: str = "") -> None:
        self.service = service
        self.binding = binding
        self._name = _import_name(service)
        self._ctx = ctypes.c_void_p()
        self.done = False

    def step(self, token: bytes | None) -> bytes:
        lib = library()
        minor = OM_uint32(0)
        inbuf = _Buffer(len(token or b""), ctypes.cast(ctypes.c_char_p(token), ctypes.c_void_p) if token else None)
        out = _Buffer()
        flags = OM_uint32(0)
        bindings, keep = _bindings(self.binding)
        major = lib.gss_init_sec_context(
            ctypes.byref(minor), None, ctypes.byref(self._ctx), self._name, None,
            GSS_C_MUTUAL_FLAG | GSS_C_INTEG_FLAG, 0, ctypes.byref(bindings),
            ctypes.byref(inbuf) if token else None, None, ctypes.byref(out), ctypes.byref(flags), None)
        del keep
        data = _take(out)
        _check(major, minor, f"cannot authenticate to {self.service}")
        self.done = major == GSS_S_COMPLETE
        return data

    def close(self) -> None:
        lib = library()
        minor = OM_uint32(0)
        if self._ctx.value:
            lib.gss_delete_sec_context(ctypes.byref(minor), ctypes.byref(self._ctx), None)
        if self._name.value:
            lib.gss_release_name(ctypes.byref(minor), ctypes.byref(self._name))


class Acceptor:
    """The daemon's side: the keytab is ``keytab`` (or ``KRB5_KTNAME``)."""

    def __init__(self, binding: str = "", keytab: str | None = None) -> None:
        if keytab:
            os.environ["KRB5_KTNAME"] = keytab  # MIT reads it at each accept; one keytab per daemon
        self.binding = binding
        self._ctx = ctypes.c_void_p()
        self.done = False
        self.peer: str | None = None

    def step(self, token: bytes) -> bytes:
        lib = library()
        minor = OM_uint32(0)
        inbuf = _Buffer(len(token), ctypes.cast(ctypes.c_char_p(token), ctypes.c_void_p))
        out = _Buffer()
        src = ctypes.c_void_p()
        bindings, keep = _bindings(self.binding)
        major = lib.gss_accept_sec_context(
            ctypes.byref(minor), ctypes.byref(self._ctx), None, ctypes.byref(inbuf), ctypes.byref(bindings),
            ctypes.byref(src), None, ctypes.byref(out), None, None, None)
        del keep
        data = _take(out)
        try:
            _check(major, minor, "the client's Kerberos token is not accepted")
            if major == GSS_S_COMPLETE:
                self.done = True
                name = _Buffer()
                _check(lib.gss_display_name(ctypes.byref(minor), src, ctypes.byref(name), None), minor,
                       "cannot name the client")
                self.peer = _take(name).decode("utf-8", "replace")
        finally:
            if src.value:
                lib.gss_release_name(ctypes.byref(OM_uint32(0)), ctypes.byref(src))
        return data

    def close(self) -> None:
        if self._ctx.value:
            library().gss_delete_sec_context(ctypes.byref(OM_uint32(0)), ctypes.byref(self._ctx), None)
