"""The registry: every universe roost runs, by name, alias and ``JobUniverse`` number.

Registering a universe is one line in ``BUILT_IN`` (or ``register`` at run time: a test
universe, a site's own). Submit, the schedd and the startd ask here which universe a
job is and read its ``Universe`` record; none of them tests universe numbers itself.

``REFUSED`` holds HTCondor's universes roost does not run, each with what to do
instead: submit refuses them naming the file, the line and the supported universes,
rather than queueing a job that would sit idle forever. (Issue 30's grid universe
left that table for a module of its own: ``grid.py``.)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from roost.universes import container, grid, java, local, parallel, scheduler, vanilla
from roost.universes.base import Get, Universe

#: registration order is the order ``supported()`` lists them in
BUILT_IN: tuple[Universe, ...] = (
    vanilla.UNIVERSE, container.UNIVERSE, java.UNIVERSE, parallel.UNIVERSE,
    scheduler.UNIVERSE, local.UNIVERSE, grid.UNIVERSE,
)

#: the universe of a job that names none (and the rules for a JobUniverse none has)
DEFAULT: Universe = vanilla.UNIVERSE

#: HTCondor's universes roost refuses at submit: name -> (JobUniverse, why, what instead)
REFUSED: dict[str, tuple[int, str]] = {
    "vm": (13, "roost runs no virtual machines; use universe = container with an image instead"),
    "standard": (1, "HTCondor dropped the standard universe in 9.0; use vanilla "
                    "(with checkpoint_exit_code, or checkpoint_method = criu, to checkpoint)"),
}

_by_name: dict[str, Universe] = {}
#: JobUniverse -> its universes, those with a ``claims`` test first, the plain one last
_by_number: dict[int, list[Universe]] = {}
_numbers_cache: dict[str, frozenset[int]] = {}
_keys_cache: list[frozenset[str]] = []


class UniverseError(ValueError):
    """A universe that cannot be registered (a name or number already taken)."""


def register(u: Universe) -> None:
    """Add ``u``: its names must be free, and one universe per number may go without a
    ``claims`` test (the number's plain reading)."""
    for name in u.names:
        if name in _by_name or name in REFUSED:
            raise UniverseError(f"universe name {name!r} is already taken")
    same = _by_number.get(u.number, [])
    if u.claims is None and any(o.claims is None for o in same):
        raise UniverseError(f"JobUniverse {u.number} already has a plain universe "
                            f"({', '.join(o.name for o in same if o.claims is None)}); give {u.name} a claims test")
    for name in u.names:
        _by_name[name] = u
    _by_number[u.number] = sorted([*same, u], key=lambda o: o.claims is None)
    _numbers_cache.clear()
    _keys_cache.clear()


def unregister(u: Universe) -> None:
    for name in u.names:
        if _by_name.get(name) is u:
            del _by_name[name]
    left = [o for o in _by_number.get(u.number, []) if o is not u]
    if left:
        _by_number[u.number] = left
    else:
        _by_number.pop(u.number, None)
    _numbers_cache.clear()
    _keys_cache.clear()


@contextmanager
def registered(u: Universe) -> Iterator[Universe]:
    """``u`` registered for the ``with`` block (tests, a plug-in tried out)."""
    register(u)
    try:
        yield u
    finally:
        unregister(u)


def named(name: str) -> Universe | None:
    """The universe ``universe = name`` selects (any case), None for one roost lacks."""
    return _by_name.get(name.strip().lower())


def refusal(name: str) -> str | None:
    """Why roost refuses ``universe = name`` (a universe of HTCondor's it does not run)."""
    entry = REFUSED.get(name.strip().lower())
    return entry[1] if entry is not None else None


def supported() -> list[str]:
    """Every name ``universe =`` accepts, in registration order (aliases after their universe)."""
    return list(_by_name)


def for_job(get: Get) -> Universe | None:
    """The universe of a job whose attributes ``get`` reads (a submit build's lookup or a
    ClassAd's eval): by ``JobUniverse`` (vanilla when unset), then the number's
    ``claims`` tests (a vanilla job with an image is the container universe's)."""
    number = get("JobUniverse")
    if number is None:
        number = DEFAULT.number
    if type(number) is not int:
        return None
    candidates = _by_number.get(number)
    if not candidates:
        return None
    for u in candidates:
        if u.claims is None or u.claims(get):
            return u
    return None


def by_number(number: object) -> Universe | None:
    """The plain universe of a ``JobUniverse`` number (vanilla for 5), None if none."""
    for u in _by_number.get(number, ()) if type(number) is int else ():
        if u.claims is None:
            return u
    return None


def numbers(runs_on: str) -> frozenset[int]:
    """The ``JobUniverse`` numbers whose jobs run on ``runs_on`` (the schedd's runner
    choice; cached, since the schedd asks per job)."""
    out = _numbers_cache.get(runs_on)
    if out is None:
        out = _numbers_cache[runs_on] = frozenset(u.number for us in _by_number.values() for u in us
                                                  if u.runs_on == runs_on)
    return out


def name_of(number: object) -> str | None:
    """The name HTCondor gives a ``JobUniverse`` number (roost's or a refused one)."""
    u = by_number(number)
    if u is not None:
        return u.name
    return next((n for n, (num, _) in REFUSED.items() if num == number), None)


def all_universes() -> list[Universe]:
    """Each registered universe once, in registration order."""
    return list(dict.fromkeys(_by_name.values()))


def submit_keys() -> frozenset[str]:
    """The submit commands some universe reads (lower case: no "unused" warning for them)."""
    if not _keys_cache:
        _keys_cache.append(frozenset(k.lower() for u in all_universes() for k in u.keys))
    return _keys_cache[0]


for _u in BUILT_IN:
    register(_u)
