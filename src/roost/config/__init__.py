"""HTCondor's configuration language for roost: files of ``NAME = value``.

What a file may hold (names are case-insensitive):

- ``NAME = value`` (a trailing ``\\`` continues the line; ``NAME @=end`` ...
  ``@end`` holds a multi-line value); ``#`` starts a comment only at the
  start of a line.  ``SUBSYS.NAME`` and ``LOCALNAME.NAME`` apply to one daemon.
- ``$(NAME)``, ``$(NAME:default)``, ``$(DOLLAR)``, ``$ENV(X[:default])``,
  ``$INT(x[,fmt])``, ``$REAL(x[,fmt])``, ``$CHOICE(i, a, b...)``,
  ``$SUBSTR(name, start[, len])``, ``$F[pdnxqbwua](name)``,
  ``$RANDOM_CHOICE(...)``, ``$RANDOM_INTEGER(lo, hi[, step])``: expanded
  when a value is read; ``X = $(X) more`` appends to X's earlier value.
- ``if``/``elif``/``else``/``endif`` on booleans, ``defined NAME``,
  ``version OP x.y[.z]`` and ``!``; decided as the file is read.
- ``include [ifexist] : file``, ``include : command |`` (only when the
  caller allows commands), ``use CATEGORY : Template(args)`` (see
  ``templates``), ``error : text``, ``warning : text``.

Values are strings; daemons evaluate them as ClassAd expressions
themselves.  ``Config.from_text`` is pure; ``Config.load`` reads files
($ROOST_CONFIG, else $ROOST_HOME/roost_config, then LOCAL_CONFIG_FILE,
LOCAL_CONFIG_DIR and ``_ROOST_NAME`` environment overrides).

The public names are imported on first use (PEP 562 ``__getattr__``), as in
``roost.classad``: the submit language uses ``roost.config.macros`` alone and
should not pay for the loader, the defaults table and the templates.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from roost.config.config import Config
    from roost.config.defaults import DEFAULTS, Knob
    from roost.config.errors import ConfigError
    from roost.config.personal import write_personal_config
    from roost.config.table import Entry

__all__ = ["DEFAULTS", "Config", "ConfigError", "Entry", "Knob", "write_personal_config"]

# public name -> (module, attribute)
_LAZY: dict[str, tuple[str, str]] = {
    "Config": ("roost.config.config", "Config"),
    "DEFAULTS": ("roost.config.defaults", "DEFAULTS"),
    "Knob": ("roost.config.defaults", "Knob"),
    "ConfigError": ("roost.config.errors", "ConfigError"),
    "write_personal_config": ("roost.config.personal", "write_personal_config"),
    "Entry": ("roost.config.table", "Entry"),
}


def __getattr__(name: str) -> object:
    entry = _LAZY.get(name)
    if entry is None:
        raise AttributeError(f"module 'roost.config' has no attribute {name!r}")
    # lazy: a public name's first use pays for importlib, not `import roost.config.macros`
    import importlib

    value = getattr(importlib.import_module(entry[0]), entry[1])
    globals()[name] = value  # later lookups are plain module attributes
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
