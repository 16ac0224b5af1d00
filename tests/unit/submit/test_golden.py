"""Realistic submit files -> job ads, against HTCondor's own submit code.

``data/*.ads.json`` were made by ``htcondor.Submit.jobs()`` (see data/regen.py);
each file here is expanded by roost as the same cluster and every attribute is
compared as ClassAd text (both sides unparsed by HTCondor's ClassAd library).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from roost.submit import Expr, parse_submit

classad2 = pytest.importorskip("classad2")

DATA = Path(__file__).resolve().parent / "data"
GOLDEN_DIR = "/tmp/roost-submit-golden"  # where regen.py submitted from

#: attributes that do not depend on the submit file (or depend on this machine)
NOT_COMPARED = {
    "CondorVersion", "CondorPlatform",  # the submitting tool's version
    "JobSubmitMethod",  # 2 = Python bindings; roost's tools set their own
    "FileSystemDomain",  # the schedd's domain (set at queue time)
    "Owner", "CompletionDate",  # set by the schedd in HTCondor; roost's submit fills them in
    "ExecutableSize", "ImageSize", "DiskUsage", "TransferInputSizeMB",  # sizes on the submit host
    "Requirements",  # compared separately below (24.x and 25.x differ in the disk clause)
}

CASES = sorted(p.stem for p in DATA.glob("*.sub") if (DATA / f"{p.stem}.ads.json").exists())


def submit_env(sub: Path) -> dict[str, str] | None:
    """The submitter's environment for ``NAME.sub``: ``NAME.env``'s ``VAR=value`` lines
    (what regen.py gave HTCondor), or None."""
    path = sub.with_suffix(".env")
    if not path.exists():
        return None
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def unparse(v: object) -> str:
    """HTCondor's ClassAd text for a roost value."""
    ad = classad2.ClassAd()
    if isinstance(v, Expr):
        ad["x"] = classad2.ExprTree(str(v))
    else:
        ad["x"] = v
    return str(ad.lookup("x"))


def roost_ads(name: str) -> list[dict[str, str]]:
    text = (DATA / f"{name}.sub").read_text()
    env = submit_env(DATA / f"{name}.sub") or {}
    desc = parse_submit(text, file=f"{name}.sub", cwd=GOLDEN_DIR, env=env)
    return [{k: unparse(v) for k, v in ad.items()} for c in desc.expand(cluster_id=5, qdate=1000, owner="alice") for ad in c.procs()]


def _norm_requirements(text: str) -> str:
    # roost's startds do not advertise the image kinds (HasDockerURL, HasSIF,
    # HasSandboxImage) yet, so roost leaves those clauses out of a container job
    for kind in ("HasDockerURL", "HasSIF", "HasSandboxImage"):
        text = text.replace(f" && TARGET.{kind}", "").replace(f"&& TARGET.{kind}", "")
    # HTCondor 25 lets a job run where the startd enforces disk itself
    return text.replace('(versionGE(split(TARGET.CondorVersion)[1],"25.12.0") || (TARGET.Disk >= RequestDisk))',
                        "(TARGET.Disk >= RequestDisk)")


@pytest.fixture(scope="module", autouse=True)
def golden_dir() -> None:
    """``queue ... matching`` looks at the directory the golden ads were made in."""
    shutil.copytree(DATA, GOLDEN_DIR, dirs_exist_ok=True)


@pytest.mark.parametrize("name", CASES)
def test_job_ads_match_condor_submit(name: str) -> None:
    theirs = json.loads((DATA / f"{name}.ads.json").read_text())
    ours = roost_ads(name)
    assert len(ours) == len(theirs)
    for proc, (o, t) in enumerate(zip(ours, theirs)):
        keys = (set(o) | set(t)) - NOT_COMPARED
        diff = {k: (o.get(k), t.get(k)) for k in sorted(keys) if o.get(k) != t.get(k)}
        assert not diff, f"proc {proc}: attribute: (roost, condor) {diff}"
        assert _norm_requirements(o["Requirements"]) == _norm_requirements(t["Requirements"])
