"""The startd's slots as configured: the START/RANK policy their ads carry and the
slot types the machine is cut into (HTCondor's SLOT_TYPE_<n> knobs). Read once at
start; a policy that does not parse stops the startd, naming the knob.
"""

from __future__ import annotations

import re

from roost.classad import ExprTree
from roost.config import Config
from roost.core import slots as core
from roost.daemons.base import CannotStart

_SLOT_TYPE = re.compile(r"^SLOT_TYPE_(\d+)$", re.I)


def read_policy(cfg: Config) -> core.Policy:
    """START, RANK, STARTD_ATTRS and MODIFY_REQUEST_EXPR_*: the policy the slot ads
    carry; CannotStart naming the knob that is no ClassAd expression."""
    start = cfg.get("START") or "True"
    rank = cfg.get("RANK") or "0"
    extra: dict[str, str] = {}
    for name in cfg.get_list("STARTD_ATTRS", []) or []:
        value = cfg.get(name)
        if value is not None and value.strip():
            extra[name] = value
    modify = dict(core.DEFAULT_MODIFY_REQUEST)
    for attr in modify:
        text = cfg.get(f"MODIFY_REQUEST_EXPR_{attr.upper()}")
        if text is not None and text.strip():
            modify[attr] = text
    for what, text in [("START", start), ("RANK", rank), *extra.items(), *modify.items()]:
        try:
            ExprTree(text)
        except Exception as e:  # a bad policy stops the startd here, naming the knob
            raise CannotStart(f"{what} = {text!r} is not a ClassAd expression: {e}") from None
    return core.Policy(start=start, rank=rank, extra=extra, modify_request=modify)


def slot_types(cfg: Config) -> list[core.SlotType]:
    """SLOT_TYPE_<n>, NUM_SLOTS_TYPE_<n>, SLOT_TYPE_<n>_PARTITIONABLE and NUM_SLOTS (which
    counts only when no slot type is set by the user)."""
    types: dict[int, tuple[str, int, bool]] = {}
    user_set = False
    for name in cfg.names():
        m = _SLOT_TYPE.match(name)
        if not m:
            continue
        n = int(m.group(1))
        spec = cfg.get(name) or ""
        source = cfg.source(name)
        if source is not None and source[0] != "<default>":
            user_set = True
        count = cfg.get_int(f"NUM_SLOTS_TYPE_{n}", 1)
        part = cfg.get_bool(f"SLOT_TYPE_{n}_PARTITIONABLE", False)
        types[n] = (spec, 0 if count is None else count, bool(part))
    num_slots = cfg.get_int("NUM_SLOTS")
    if num_slots and not user_set:
        types = {}
    return core.slot_types_from_config(types, num_slots)
