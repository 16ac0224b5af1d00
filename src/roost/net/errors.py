"""Errors of the wire protocol, shared by the async and the blocking side.

``RequestError`` is what a handler raises to answer ``{"ok": false}``;
``RemoteError`` is what a client raises when it receives such an answer. A
``RemoteError`` is a ``RequestError``, so a daemon relaying a call to another
daemon passes the remote code through unchanged when it does not catch it.
"""

from __future__ import annotations


class ProtocolError(Exception):
    """A frame that breaks the protocol: bad length, invalid UTF-8/JSON, not an object."""

    code = "BAD_FRAME"


class RequestError(Exception):
    """A request refused with a code (``BAD_REQUEST``, ``NOT_FOUND``, ``DENIED``, ...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


def excerpt(text: str, limit: int = 100) -> str:
    """A request's text as an error quotes it: at most ``limit`` characters (a hostile
    constraint may be megabytes; the answer stays one short line)."""
    return text if len(text) <= limit else text[:limit] + "..."


def bad_request(message: str) -> RequestError:
    """The refusal of a request whose arguments are wrong (``BAD_REQUEST``)."""
    return RequestError("BAD_REQUEST", message)


class RemoteError(RequestError):
    """The peer answered ``ok: false``."""


class CallTimeout(ConnectionError, TimeoutError):
    """No answer within the call's timeout (the connection is dropped, since a late
    answer would be mistaken for the next call's)."""


class NotConnected(ConnectionError):
    """No connection was made (refused, no route, the connect timed out): whatever was
    to be sent over it never reached the peer (a claim request the startd never saw)."""


class ConnectTimeout(CallTimeout, NotConnected):
    """The connect itself timed out."""


def transport_failure(e: BaseException) -> bool:
    """Whether a TLS handshake ended for the connection itself (reset, closed, timed
    out, with no TLS alert): the daemon was killed or restarted, which a caller
    retries as any lost connection; anything else (a certificate refused, no shared
    protocol) is AUTH_FAILED, the caller's to report."""
    # lazy: ssl loads only once a TLS handshake has failed
    import ssl

    return isinstance(e, (ConnectionError, TimeoutError, EOFError)) and not isinstance(e, ssl.SSLError)
