"""The ``roost.api`` package itself: its names, and what importing it costs (``roost q``
loads it on every run, so the submit language, asyncio and ClassAds wait until used)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import roost.api as roost
from roost.api.collector import Collector
from roost.api.pool import Pool
from roost.api.schedd import Schedd


def test_the_public_names_are_the_classes_and_errors() -> None:
    assert sorted(roost.__all__) == ["Collector", "NoPoolError", "Pool", "PoolError", "Schedd"]
    assert (roost.Schedd, roost.Collector, roost.Pool) == (Schedd, Collector, Pool)
    namespace: dict = {}
    exec("from roost.api import *", namespace)
    assert {n for n in namespace if not n.startswith("__")} == set(roost.__all__)
    with pytest.raises(AttributeError, match="module 'roost.api' has no attribute 'Submit'"):
        roost.Submit  # noqa: B018


HEAVY = ("asyncio", "roost.submit", "roost.classad", "roost.config")

PROBE = """
import json, sys
import roost.api as api
from roost.api import NoPoolError
heavy = json.loads(sys.argv[2])
schedd = api.Schedd(sys.argv[1])
for ask in (schedd.totals, schedd.query_objs, api.Collector(sys.argv[1]).query_objs):
    try:
        ask()
    except NoPoolError:
        pass
loaded = [m for m in heavy if m in sys.modules]
try:
    schedd.submit({"executable": "/bin/true"})
except NoPoolError:
    pass
print(json.dumps([loaded, [m for m in heavy if m in sys.modules]]))
"""


def test_querying_loads_neither_asyncio_nor_the_submit_language(tmp_path: Path) -> None:
    """A fresh interpreter that makes clients and queries loads only the blocking client;
    submitting is what brings in the submit language (so the check can see a module)."""
    out = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path), json.dumps(HEAVY)], capture_output=True,
                         text=True, timeout=30, check=True).stdout
    before, after = json.loads(out)
    assert before == []
    assert "roost.submit" in after
