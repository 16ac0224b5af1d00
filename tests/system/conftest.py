"""Fixtures for pools of several hosts, each host a pair of namespaces (``netns``)
running roost (``hostpool``). Skipped where namespaces cannot be made."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hostpool import MultiHostPool
from netns import Network, unavailable


@pytest.fixture
def network() -> Iterator[Network]:
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    with Network() as net:
        yield net


@pytest.fixture
def hosts(network: Network) -> Iterator[MultiHostPool]:
    """A central manager, a submit host and two execute hosts, started. exec1 holds a
    copy of the pool key; the submit host and exec2 joined with a daemon token only."""
    pool = MultiHostPool(network)
    try:
        cm = pool.add("cm", "CentralManager")
        cm.roost("up", "-timeout", "30", timeout=45)
        for name, role in (("submit", "Submit"), ("exec1", "Execute"), ("exec2", "Execute")):
            h = pool.add(name, role)
            if name == "exec1":
                h.take_pool_key(cm)
            else:
                h.take_token(cm)
            h.roost("up", "-timeout", "30", timeout=45)
        yield pool
    finally:
        pool.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """On failure, the daemon logs of every host go into the report."""
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call" and rep.failed:
        pool = item.funcargs.get("hosts") if hasattr(item, "funcargs") else None
        if isinstance(pool, MultiHostPool):
            rep.sections.append(("roost logs, every host", pool.log_tails()))
