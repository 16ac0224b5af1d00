"""The state one job-ad build works on: expanded submit values in, attributes out.

Handlers (commands.py) read submit values through ``get`` and attributes
through ``lookup``; the builder records both, so after one build the
description knows which handlers depend on per-proc macros (directly or via
an attribute another such handler wrote) and re-runs only those per proc.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from roost.submit import arglist
from roost.submit.errors import SubmitError, SubmitWarning
from roost.submit.values import AttrValue


@dataclass
class BuildContext:
    """Everything outside the submit text that shapes a job ad."""

    file: str | None = None
    cwd: str = "/"
    env: Mapping[str, str] = field(default_factory=dict)
    owner: str | None = None
    qdate: int = 0
    arch: str = "X86_64"
    opsys: str = "LINUX"
    file_system_domain: str | None = None
    file_size: Callable[[str], int] | None = None
    #: (what, path) -> what is wrong with it for a submit, or None (condor_submit's
    #: checks; only when the caller lets us look at the file system)
    check_path: Callable[[str, str], str | None] | None = None


class Builder:
    def __init__(
        self,
        values: Callable[[str], str | None],
        lines: Mapping[str, int],
        ctx: BuildContext,
        base: Mapping[str, AttrValue] | None = None,
        keys: list[str] | None = None,
    ) -> None:
        self._values = values
        #: every command the description sets, as written (for request_<tag>, +Attr, MY.Attr)
        self.extra_keys: list[str] = keys or []
        self._lines = lines
        self.ctx = ctx
        self.base = base or {}
        self.ad: dict[str, AttrValue] = {}
        self.keys_read: set[str] = set()
        self.attrs_read: set[str] = set()
        self.warnings: list[SubmitWarning] = []
        self.removed: set[str] = set()

    # -- submit values ----------------------------------------------------
    def get(self, *keys: str) -> str | None:
        """The expanded value of the first of ``keys`` the description sets; '' counts as unset."""
        for k in keys:
            low = k.lower()
            self.keys_read.add(low)
            v = self._values(low)
            if v is not None and v != "":
                return v
        return None

    def bool(self, key: str, default: bool, *alts: str) -> bool:
        v = self.get(key, *alts)
        if v is None:
            return default
        b = parse_bool(v)
        if b is None:
            self.error(f"{key} = {v}: expected true or false", key)
        return bool(b)

    def arguments(self, text: str, key: str, *, v2: bool) -> tuple[str, str]:
        """(attribute, value) of an argument string: old syntax (``Args``, or
        ``Arguments`` when it is quoted) or, with ``v2``, the new one; a syntax error is
        reported against ``key`` (what a universe's hook uses: roost.universes.base)."""
        try:
            if v2:
                return "Arguments", arglist.parse_arguments2(text)
            return arglist.parse_arguments(text)
        except arglist.ArgSyntaxError as e:
            self.error(f"{key}: {e}", key)
            raise  # error() raises; this only tells the type checker

    def line_of(self, key: str) -> int:
        return self._lines.get(key.lower(), 0)

    def error(self, message: str, key: str | None = None) -> None:
        raise SubmitError(message, file=self.ctx.file, line=self.line_of(key) if key else 0)

    def warn(self, message: str, key: str | None = None) -> None:
        self.warnings.append(SubmitWarning(message, self.ctx.file, self.line_of(key) if key else 0))

    # -- attributes -------------------------------------------------------
    def set(self, attr: str, value: AttrValue) -> None:
        self.removed.discard(attr)
        self.ad[attr] = value

    def unset(self, attr: str) -> None:
        self.ad.pop(attr, None)
        self.removed.add(attr)

    def lookup(self, attr: str) -> AttrValue | None:
        self.attrs_read.add(attr)
        if attr in self.ad:
            return self.ad[attr]
        if attr in self.removed:
            return None
        return self.base.get(attr)

    def has(self, attr: str) -> bool:
        return self.lookup(attr) is not None


class ProcBuilder(Builder):
    """The per-proc builder: values come from a plain dict, nothing is recorded.

    It is the hot path of a large cluster, so it skips the bookkeeping the
    first (dependency-learning) build needs.
    """

    def __init__(self, vals: dict[str, str], lines: Mapping[str, int], ctx: BuildContext,
                 base: Mapping[str, AttrValue], keys: list[str], lazy: Callable[[str], str | None]) -> None:
        self._vals = vals
        self._lazy = lazy
        self._lines = lines
        self.ctx = ctx
        self.base = base
        self.ad = {}
        self.extra_keys = keys
        self.warnings = []
        self.removed = set()

    def get(self, *keys: str) -> str | None:
        vals = self._vals
        for k in keys:
            v = vals.get(k)
            if v is None:
                low = k.lower()
                v = vals.get(low)
                if v is None:
                    continue
            if v is _LAZY:
                v = self._lazy(k.lower())
                if v is None:
                    continue
            if v != "":
                return v
        return None

    def lookup(self, attr: str) -> AttrValue | None:
        v = self.ad.get(attr)
        if v is not None:
            return v
        return None if attr in self.removed else self.base.get(attr)


#: marks a value that must be fully expanded per proc (set as a dict value)
_LAZY = "\x00lazy"


def parse_bool(v: str) -> bool | None:
    s = v.strip().lower()
    if s in ("true", "t", "yes", "y", "1", "on"):
        return True
    if s in ("false", "f", "no", "n", "0", "off"):
        return False
    return None
