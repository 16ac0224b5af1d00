"""Fixtures for pools of several hosts, each host a pair of namespaces (``netns``)
running roost (``hostpool``). Skipped where namespaces cannot be made."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hostpool import MultiHostPool, four_hosts
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
    """Four hosts: exec1 holds a copy of the pool key; the submit host and exec2 joined
    with a daemon token only."""
    with four_hosts(network) as pool:
        yield pool


@pytest.fixture(scope="module")
def module_network() -> Iterator[Network]:
    """A network for a whole module (``shared_hosts``)."""
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    with Network() as net:
        yield net


@pytest.fixture(scope="module")
def shared_hosts(module_network: Network) -> Iterator[MultiHostPool]:
    """The four hosts of ``hosts``, one pool for a whole module: for a module whose tests
    each leave the pool whole (a cut mended, a stopped host started again) and use their
    own work directories. Four hosts take 10-30 s to start on two cores, most of such a
    test's time; a module binds it with a ``hosts`` fixture of its own that returns it."""
    with four_hosts(module_network) as pool:
        yield pool


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """On failure, the daemon logs of every host go into the report."""
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call" and rep.failed:
        # any pool fixture with log tails (MultiHostPool, the flocking tests' Pools): a
        # hook in a test module is never called, so this one serves them all
        for arg in (item.funcargs.values() if hasattr(item, "funcargs") else ()):
            if isinstance(arg, MultiHostPool) or callable(getattr(arg, "log_tails", None)):
                rep.sections.append(("roost logs, every host", arg.log_tails()))
                break
