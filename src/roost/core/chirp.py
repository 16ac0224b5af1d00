"""What a running job may ask through Chirp: HTCondor's starter and shadow rules, pure.

The starter serves a job Chirp when its ad and the machine's knobs allow it, and
enables three groups of requests separately: file I/O (``WantIOProxy``, knob
``ENABLE_CHIRP_IO``), attribute updates and the event log (``WantRemoteUpdates``,
which defaults to ``WantIOProxy``; ``ENABLE_CHIRP_UPDATES``) and delayed updates
(``WantDelayedUpdates``, default true: every job gets them unless it or the machine
says no; ``ENABLE_CHIRP_DELAYED``). ``ENABLE_CHIRP`` = false turns all three off.
The submit side checks again (HTCondor's shadow does): a job reads and sets any
attribute when it wants I/O or remote updates, else only delayed-update names
(``CHIRP_DELAYED_UPDATE_PREFIX``: words, each with at most one ``*``, matched without
regard to case; default ``Chirp*``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

DEFAULT_PREFIX = "Chirp*"
DEFAULT_MAX_ATTRS = 100  # CHIRP_DELAYED_UPDATE_MAX_ATTRS: delayed-update names one job may use
DELAYED_VALUE_MAX = 993  # characters of one delayed update's expression (HTCondor's cap)


@dataclass(frozen=True)
class Wants:
    """The request groups a job's Chirp server answers."""

    io: bool
    updates: bool
    delayed: bool

    @property
    def any(self) -> bool:
        return self.io or self.updates or self.delayed


NONE = Wants(False, False, False)


def starter_wants(
    *,
    enable: bool = True,
    enable_updates: bool = True,
    enable_io: bool = True,
    enable_delayed: bool = True,
    want_io_proxy: bool = False,
    want_remote_updates: bool | None = None,
    want_delayed_updates: bool | None = None,
) -> Wants:
    """HTCondor's starter: the machine's knobs have the last word over the job's ad;
    ``None`` is an attribute the ad does not set."""
    if not enable or not (enable_updates or enable_io or enable_delayed):
        return NONE
    io = want_io_proxy and enable_io
    updates = (io if want_remote_updates is None else want_remote_updates) and enable_updates
    delayed = (True if want_delayed_updates is None else want_delayed_updates) and enable_delayed
    return Wants(io, updates, delayed)


def prefix_words(text: str | None) -> list[str]:
    """CHIRP_DELAYED_UPDATE_PREFIX as its words (comma or space separated)."""
    return [w for w in (text or DEFAULT_PREFIX).replace(",", " ").split() if w]


def prefix_matches(patterns: Iterable[str], name: str) -> bool:
    """Whether ``name`` is a delayed-update name: equal to a pattern, or matching one
    whose ``*`` stands for any run of characters; case does not count."""
    low = name.lower()
    for pattern in patterns:
        p = pattern.lower()
        head, star, tail = p.partition("*")
        if not star:
            if low == p:
                return True
        elif len(low) >= len(head) + len(tail) and low.startswith(head) and low.endswith(tail):
            return True
    return False


def may_read_attrs(want_io_proxy: bool, want_remote_updates: bool) -> bool:
    """The shadow's rule for get_job_attr (and ulog)."""
    return want_io_proxy or want_remote_updates


def may_write_attr(want_io_proxy: bool, want_remote_updates: bool, want_delayed_updates: bool,
                   patterns: Iterable[str], name: str) -> bool:
    """The shadow's rule for set_job_attr and delayed updates (the schedd's own
    attributes are refused apart, whoever asks)."""
    if want_io_proxy or want_remote_updates:
        return True
    return want_delayed_updates and prefix_matches(patterns, name)
