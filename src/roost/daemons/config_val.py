"""CONFIG_VAL: a daemon's configuration as that daemon sees it (its subsystem's
``SUBSYS.KNOB`` entries, its local name's), for ``htcondor2.RemoteParam`` — HTCondor's
``DC_CONFIG_VAL``, at READ as there. roost's configuration holds no secrets (keys and
tokens live in files it names), so every knob may be read."""

from __future__ import annotations

from typing import Any

from roost.config import Config, ConfigError

#: the most names one request may ask for (a request is one frame)
MAX_NAMES = 4096


def answer(config: Config, req: dict[str, Any]) -> dict[str, Any]:
    """``{"names": [...]}`` asked: each one's expanded value (None: not defined);
    nothing asked: ``{"names": every defined knob}``."""
    names = req.get("names")
    if names is None:
        return {"names": config.names()}
    if len(names) > MAX_NAMES:
        return {"values": {}, "error": f"at most {MAX_NAMES} names a request"}
    values: dict[str, str | None] = {}
    for name in names:
        try:
            values[name] = config.get(name)
        except ConfigError:  # macros that do not expand: not defined, as HTCondor's param says
            values[name] = None
    return {"values": values}
