"""Which schedd runner takes a job is its universe's ``runs_on`` (runners.py over the
registry): a universe registered later is run where it says, with no schedd change."""

from __future__ import annotations

from roost.daemons.schedd import runners
from roost.daemons.schedd.autocluster_ids import not_negotiated
from roost.universes import registry
from roost.universes.base import RunsOn, Universe


def test_the_built_in_universes_go_to_their_runners() -> None:
    assert runners.beside_schedd(7) and runners.beside_schedd(12) and not runners.beside_schedd(5)
    assert runners.dedicated(11) and not runners.dedicated(5) and runners.dedicated_number() == 11
    assert runners.negotiated(5) and runners.negotiated(10) and runners.negotiated(None)
    assert runners.wants_channel(7) and not runners.wants_channel(12) and not runners.wants_channel(None)
    assert not_negotiated({"JobUniverse": 12}) and not_negotiated({"JobUniverse": 11})
    assert not_negotiated({"JobUniverse": 5, "WantDedicated": True}) and not not_negotiated({"JobUniverse": 5})


def test_a_universe_registered_later_goes_where_it_says() -> None:
    beside = Universe(name="nearby", number=77, runs_on=RunsOn.SCHEDD, execute="roost.daemons.schedd.localuniverse")
    assert runners.negotiated(77)
    with registry.registered(beside):
        assert runners.beside_schedd(77) and not runners.negotiated(77) and not_negotiated({"JobUniverse": 77})
    assert runners.negotiated(77)
