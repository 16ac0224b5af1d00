"""A small command-line parser in HTCondor's style, for the commands that must start fast.

``argparse`` costs more to import than ``roost q -totals`` may take in all, so
the hot commands use this instead: options start with ``-`` or ``--``, may be
shortened to any unambiguous prefix (``-const`` for ``-constraint``, as
condor_q allows), and are one of three kinds: a flag, an option taking one
value, or one taking every following argument that does not start with ``-``
(``-af A B C``). Everything else is positional.
"""

from __future__ import annotations

FLAG, VALUE, VALUES = "flag", "value", "values"


class UsageError(Exception):
    """A command line that cannot be understood; the message says why."""


class Options:
    """Parsed options: ``opts.name`` is the value (False/None/[] when not given)."""

    def __init__(self) -> None:
        self.positional: list[str] = []
        self.values: dict[str, object] = {}

    def __getattr__(self, name: str) -> object:
        try:
            return self.values[name]
        except KeyError:
            raise AttributeError(name) from None


class Parser:
    def __init__(self, prog: str, usage: str, spec: dict[str, tuple[str, str]],
                 aliases: dict[str, str] | None = None) -> None:
        """``spec``: option name -> (kind, help); ``aliases``: other spelling -> name."""
        self.prog = prog
        self.usage = usage
        self.spec = spec
        self.aliases = aliases or {}

    def help_text(self) -> str:
        lines = [f"usage: {self.prog} {self.usage}", "", "options:"]
        for name, (kind, help_) in self.spec.items():
            arg = " VALUE" if kind == VALUE else (" ARG..." if kind == VALUES else "")
            lines.append(f"  -{name}{arg:<10} {help_}")
        return "\n".join(lines)

    def _resolve(self, word: str) -> str:
        if word in self.spec:
            return word
        if word in self.aliases:
            return self.aliases[word]
        hits = {n for n in self.spec if n.startswith(word)}
        hits |= {self.aliases[a] for a in self.aliases if a.startswith(word)}
        if len(hits) == 1:
            return hits.pop()
        if not hits:
            raise UsageError(f"unknown option -{word}")
        raise UsageError(f"option -{word} is ambiguous ({', '.join('-' + h for h in sorted(hits))})")

    def parse(self, argv: list[str]) -> Options:
        opts = Options()
        for name, (kind, _) in self.spec.items():
            opts.values[name] = False if kind == FLAG else (None if kind == VALUE else [])
        i = 0
        while i < len(argv):
            a = argv[i]
            i += 1
            if len(a) < 2 or not a.startswith("-") or a[1:].lstrip("-")[:1].isdigit():
                opts.positional.append(a)
                continue
            word = a.lstrip("-")
            if word in ("h", "help"):
                raise SystemExit(print(self.help_text()) or 0)
            name = self._resolve(word)
            kind = self.spec[name][0]
            if kind == FLAG:
                opts.values[name] = True
            elif kind == VALUE:
                if i >= len(argv):
                    raise UsageError(f"option -{name} needs a value")
                opts.values[name] = argv[i]
                i += 1
            else:
                got: list[str] = []
                while i < len(argv) and not argv[i].startswith("-"):
                    got.append(argv[i])
                    i += 1
                if not got:
                    raise UsageError(f"option -{name} needs at least one argument")
                opts.values[name] = got
        return opts


# -- finding the pool and the daemon: -pool HOST[:PORT], -name NAME -------------------------

POOL_HELP = "the pool whose collector is at HOST[:PORT] (port 9618 when omitted); default: the configuration's"
NAME_HELP = "the {daemon} called NAME (its Name, or its host), found through the pool's collector"


def pool_spec(daemon: str | None = "schedd") -> dict[str, tuple[str, str]]:
    """``-pool`` (and ``-name`` of ``daemon`` unless None) for a :class:`Parser` spec."""
    spec = {"pool": (VALUE, POOL_HELP)}
    if daemon is not None:
        spec["name"] = (VALUE, NAME_HELP.format(daemon=daemon))
    return spec


def add_pool_args(parser: object, daemon: str | None = "schedd") -> None:
    """The same options on an ``argparse.ArgumentParser`` (taken as an object: this
    module must not import argparse, which the fast commands avoid)."""
    add = parser.add_argument  # type: ignore[attr-defined]
    add("-pool", "--pool", default=None, metavar="HOST[:PORT]", help=POOL_HELP)
    if daemon is not None:
        add("-name", "--name", default=None, metavar="NAME", help=NAME_HELP.format(daemon=daemon))


def collector_for(pool: str | None) -> str | None:
    """The collector address ``-pool`` names (None: the configuration's); ValueError
    for a bad HOST[:PORT]."""
    if not pool:
        return None
    # lazy: only -pool parses a collector address
    from roost.api.locate import pool_address

    return pool_address(pool)
