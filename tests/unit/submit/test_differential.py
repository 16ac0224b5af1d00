"""Whole submit files: the submit hash (raw and expanded) and queue arguments, against htcondor2.Submit."""

from __future__ import annotations

from pathlib import Path

import pytest

from roost.submit import parse_submit
from roost.submit.macros import Expander

htcondor2 = pytest.importorskip("htcondor2")

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "submit"

FILES = [
    (EXAMPLES / "simple.sub").read_text(),
    (EXAMPLES / "sweep.sub").read_text(),
    "# comment\nexecutable = /bin/echo\narguments = a \\\n   b \\\n   c\n+Project = \"x\"\nMY.Weight = 3\nqueue 2\n",
    "base = /data\nin = $(base)/in.$(Process)\nout = $Fn(in).out\nexecutable = $(base)/run.sh\nqueue 5\n",
    "script @=end\nline one\n  line two\n@end\nexecutable = /bin/sh\nqueue\n",
    "Executable = /bin/true\nOUTPUT = Out.$(CLUSTER)\nRequest_Memory = 1GB\nQueue 3\n",
    "a = 1 \\\n  2\nb = x\\\ny\nc = \"q\" # not comment\nd=  spaced   value   \n  e   =   3\n"
    "f = first\nf = second\nF = third\nexecutable = /bin/true\nqueue\n",
]


@pytest.mark.parametrize("text", FILES)
def test_submit_hash_matches_htcondor(text: str) -> None:
    theirs = htcondor2.Submit(text)
    desc = parse_submit(text, cwd="/tmp", env={})
    ours = desc.blocks[0].macros
    their_keys = {k.lower(): k for k in theirs.keys()}
    assert set(ours) == set(their_keys)
    # htcondor2.Submit expands offline as if for proc 0 of cluster 1
    live = {"process": "0", "procid": "0", "cluster": "1", "clusterid": "1", "item": "", "step": "0",
            "row": "0", "itemindex": "0", "node": ""}
    exp = Expander(ours, env={}, cwd="/tmp", live=live)
    for low, k in their_keys.items():
        assert ours[low] == theirs[k], k
        try:
            expected = theirs.expand(k)
        except KeyError:
            expected = ""
        assert exp.lookup(low) == expected, k
    assert desc.blocks[0].spec.count_expr == (theirs.getQArgs() or "1").split()[0] or desc.blocks[0].items is not None
