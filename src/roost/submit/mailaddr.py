"""Which job mail addresses (``notify_user``, ``NotifyUser``) the pool accepts.

The schedd hands the address to the ``MAIL`` program as an argument (and to an SMTP
server as a recipient), as root: one word that could be read as an option (``-S...``)
or a pipe (``|cmd``), or that holds spaces, commas or control characters, would let a
job's owner run programs or mail others.  So an address is one ``local`` or
``local@domain`` token of letters, digits and ``. _ % + = -`` (domain: letters, digits,
``.`` and ``-``), and does not start with ``-``.  Checked by ``roost submit``, by the
schedd at SUBMIT and EDIT, and again before each mail is sent.
"""

from __future__ import annotations

import re

_ADDRESS = re.compile(r"[A-Za-z0-9._%+=-]+(@[A-Za-z0-9.-]+)?\Z")
MAX_LENGTH = 254  # RFC 5321's longest path


def address_problem(text: object) -> str | None:
    """Why ``text`` is no acceptable mail address, or None when it is one."""
    if not isinstance(text, str):
        return "a mail address must be a string"
    if not text:
        return "the mail address is empty"
    if len(text) > MAX_LENGTH:
        return f"the mail address is longer than {MAX_LENGTH} characters"
    if text[0] in "-|":
        return f"{text[:40]!r} starts with {text[0]!r}: a mail address may not"
    if not _ADDRESS.match(text):
        return (f"{text[:60]!r} is not one user@domain address (letters, digits and . _ % + = - only;"
                " no spaces, commas or control characters)")
    return None


def notify_user_problem(value: object) -> str | None:
    """``address_problem`` for a NotifyUser value, where "" (no mail) is fine."""
    return None if value == "" else address_problem(value)
