"""An SMTP session the schedd's mailer (notify.py) can end from another thread.

Apart from notify.py so that smtplib loads with the first mail, not at every start.
"""

from __future__ import annotations

import contextlib
import smtplib
import socket
import threading


class Session(smtplib.SMTP):
    """An SMTP client whose socket another thread may shut down (``abort``): the
    deadline of a session whose server answers slowly enough to restart each
    operation's timeout."""

    def __init__(self, hostname: str, timeout: float) -> None:
        self._lock = threading.Lock()
        self._aborted = False
        # no host: connect() later, in the mailer's thread; the name for HELO given, so
        # no DNS look-up (getfqdn) blocks the event loop here
        super().__init__(local_hostname=hostname or "localhost", timeout=timeout)

    def _get_socket(self, host: str, port: int, timeout: float) -> socket.socket:
        sock = super()._get_socket(host, port, timeout)
        with self._lock:
            if self._aborted:
                sock.close()
                raise OSError("the SMTP session's deadline passed while connecting")
            self.sock = sock
        return sock

    def abort(self) -> None:
        with self._lock:
            self._aborted = True
            sock = self.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
