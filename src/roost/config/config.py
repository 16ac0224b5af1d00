"""The ``Config`` object: knob lookup with lazy expansion and typed getters.

What every daemon and tool reads knobs through, so the lookup order
(LOCALNAME.X, SUBSYS.X, X; files, defaults, host facts) lives in one place.
Files and commands are the loader's: this module calls it, never the reverse.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from roost.config import loader
from roost.config.arith import ArithError, evaluate
from roost.config.errors import ConfigError
from roost.config.layers import DEFAULT_LAYER, apply_env_overrides, facts_layer
from roost.config.macros import Expander
from roost.config.parser import ParseState, parse_text
from roost.config.table import Entry, find

_TRUE = {"true", "yes", "t", "on"}
_FALSE = {"false", "no", "f", "off"}


class Config:
    """A read configuration: raw values from files, defaults and host facts.

    Lookups honour the daemon's identity: with ``subsys="SCHEDD"`` a
    ``SCHEDD.FOO`` beats ``FOO``, and ``LOCALNAME.FOO`` beats both.
    Values are expanded at lookup time, so the same table serves every
    daemon (see ``with_subsys``).
    """

    def __init__(
        self,
        table: Mapping[str, Entry],
        *,
        facts: Mapping[str, Entry] | None = None,
        env: Mapping[str, str] | None = None,
        subsys: str | None = None,
        localname: str | None = None,
        files: list[str] | None = None,
        warnings: list[str] | None = None,
    ) -> None:
        self._table = dict(table)
        self._facts = dict(facts or {})
        self._env = dict(env or {})
        self.subsys = subsys.upper() if subsys else None
        self.localname = localname
        self.files = list(files or [])
        self.warnings = list(warnings or [])
        special: dict[str, Entry] = {}
        if self.subsys:
            special["SUBSYSTEM"] = Entry("SUBSYSTEM", self.subsys, "<subsystem>", 0)
            special["SUBSYS"] = Entry("SUBSYS", self.subsys, "<subsystem>", 0)
        if localname:
            special["LOCALNAME"] = Entry("LOCALNAME", localname, "<subsystem>", 0)
        self._layers: list[Mapping[str, Entry]] = [self._table, DEFAULT_LAYER, self._facts, special]
        self._expander = Expander(self.entry, self._env)

    # -- construction ----------------------------------------------------------

    @classmethod
    def from_text(
        cls,
        text: str,
        file: str = "<string>",
        *,
        env: Mapping[str, str] | None = None,
        facts: Mapping[str, str] | None = None,
        subsys: str | None = None,
        localname: str | None = None,
        allow_commands: bool = False,
    ) -> Config:
        """Read configuration given as text: no file is touched, so ``include : file`` fails.

        ``env`` defaults to empty (not ``os.environ``) so a test sees only
        what it passes; it feeds ``$ENV()`` and ``_ROOST_NAME`` overrides.
        """
        env = dict(env or {})
        fact_entries = facts_layer(facts or {})
        state = ParseState(
            table={},
            lower=[DEFAULT_LAYER, fact_entries],
            env=env,
            subsys=subsys,
            localname=localname,
            run_command=loader.run_command if allow_commands else None,
        )
        parse_text(state, text, file)
        apply_env_overrides(state, env)
        return cls(
            state.table, facts=fact_entries, env=env, subsys=subsys,
            localname=localname, files=[file], warnings=state.warnings,
        )

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        env: Mapping[str, str] = os.environ,
        subsys: str | None = None,
        localname: str | None = None,
        allow_commands: bool = False,
        facts: Mapping[str, str] | None = None,
    ) -> Config:
        """Read the configuration files: ``path``, else $ROOST_CONFIG, else $ROOST_HOME/roost_config.

        Then LOCAL_CONFIG_FILE and LOCAL_CONFIG_DIR, then ``_ROOST_*``
        environment overrides.  ``facts`` replaces the detected host facts
        (tests).  See ``roost.config.loader``.
        """
        got = loader.load(
            path, env=env, subsys=subsys, localname=localname,
            allow_commands=allow_commands, facts=facts,
        )
        return cls(
            got.table, facts=got.facts, env=got.env, subsys=subsys,
            localname=localname, files=got.files, warnings=got.warnings,
        )

    def with_subsys(self, subsys: str | None, localname: str | None = None) -> Config:
        """The same configuration seen by another daemon (``SCHEDD``, ``STARTD`` ...)."""
        return Config(
            self._table, facts=self._facts, env=self._env, subsys=subsys,
            localname=localname, files=self.files, warnings=self.warnings,
        )

    # -- lookup --------------------------------------------------------------------

    def entry(self, name: str) -> Entry | None:
        """The assignment that gives ``name`` its value for this subsystem, or None."""
        return find(name, self._layers, self.subsys, self.localname)

    def raw(self, name: str) -> str | None:
        """The value as written, macros unexpanded."""
        entry = self.entry(name)
        return None if entry is None else entry.value

    def get(self, name: str, default: str | None = None) -> str | None:
        """The fully expanded value, or ``default`` when the knob is not defined."""
        entry = self.entry(name)
        if entry is None:
            return default
        return self._expander.expand_entry(entry)

    def expand(self, text: str) -> str:
        """Expand macros in arbitrary text against this configuration."""
        return self._expander.expand(text)

    def source(self, name: str) -> tuple[str, int] | None:
        """(file, line) of the assignment in effect; line 0 for defaults and the environment."""
        entry = self.entry(name)
        return None if entry is None else (entry.file, entry.line)

    def __contains__(self, name: str) -> bool:
        return self.entry(name) is not None

    def names(self, *, defaults: bool = True) -> list[str]:
        """Every defined knob (as first spelled), sorted without regard to case."""
        layers = self._layers if defaults else [self._table]
        seen: dict[str, str] = {}
        for layer in layers:
            for key, entry in layer.items():
                seen.setdefault(key, entry.name)
        return sorted(seen.values(), key=str.upper)

    # -- typed getters ---------------------------------------------------------------

    def _typed(self, name: str) -> tuple[str, Entry] | None:
        entry = self.entry(name)
        if entry is None:
            return None
        value = self._expander.expand_entry(entry).strip()
        if value == "":
            return None
        return value, entry

    def _bad(self, name: str, entry: Entry, value: str, want: str) -> ConfigError:
        return ConfigError(entry.file, entry.line, f"{name.upper()} = {value!r} is not {want}")

    def get_int(self, name: str, default: int | None = None) -> int | None:
        """Integer knob; arithmetic such as ``24*3600`` is evaluated. Empty counts as unset."""
        got = self._typed(name)
        if got is None:
            return default
        value, entry = got
        try:
            number = evaluate(value)
        except ArithError:
            raise self._bad(name, entry, value, "an integer") from None
        if isinstance(number, float):
            if not number.is_integer():
                raise self._bad(name, entry, value, "an integer")
            number = int(number)
        return int(number)

    def get_float(self, name: str, default: float | None = None) -> float | None:
        """Real-number knob; arithmetic is evaluated. Empty counts as unset."""
        got = self._typed(name)
        if got is None:
            return default
        value, entry = got
        try:
            return float(evaluate(value))
        except ArithError:
            raise self._bad(name, entry, value, "a number") from None

    def get_bool(self, name: str, default: bool | None = None) -> bool | None:
        """Boolean knob: true/false, yes/no, t/f, on/off or a number. Empty counts as unset."""
        got = self._typed(name)
        if got is None:
            return default
        value, entry = got
        low = value.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        try:
            return bool(evaluate(value))
        except ArithError:
            raise self._bad(name, entry, value, "a boolean (true/false)") from None

    def get_list(self, name: str, default: list[str] | None = None) -> list[str] | None:
        """A comma- and/or space-separated list knob such as DAEMON_LIST."""
        value = self.get(name)
        if value is None:
            return default
        return [item for item in value.replace(",", " ").split() if item]
