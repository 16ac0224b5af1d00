"""Regenerate the golden job ads (``*.ads.json``) beside each ``*.sub`` here.

The oracle is HTCondor's own submit code: ``htcondor.Submit.jobs()`` of the
version-1 Python bindings, which build job ads without a schedd (``htcondor2``
25.x raises NotImplementedError for ``jobs``/``procs``). The version-1 module
last shipped in the 24.x wheels, so it lives in its own directory::

    pip install --target /tmp/htc24 'htcondor>=24,<25'
    HTCONDOR_V1=/tmp/htc24 python tests/unit/submit/data/regen.py

Each file is submitted from a copy of this directory at ``GOLDEN_DIR`` (the
paths in the ads are absolute) as cluster 5, QDate 1000, by user alice. A ``NAME.env``
beside ``NAME.sub`` (``VAR=value`` lines) is the submitter's whole environment for that
file (``getenv``); test_golden gives roost the same.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOLDEN_DIR = "/tmp/roost-submit-golden"

ORACLE = r"""
import json, sys, htcondor
out = []
s = htcondor.Submit(open(sys.argv[1]).read())
for ad in s.jobs(clusterid=5, qdate=1000, owner="alice"):
    out.append({k: str(ad.lookup(k)) for k in ad.keys()})
json.dump(out, sys.stdout, indent=0, sort_keys=True)
"""


def submit_env(sub: Path) -> dict[str, str] | None:
    """The environment ``NAME.env`` sets for ``NAME.sub``, or None (then any)."""
    path = sub.with_suffix(".env")
    if not path.exists():
        return None
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def main() -> None:
    v1 = os.environ.get("HTCONDOR_V1")
    if not v1:
        sys.exit("set HTCONDOR_V1 to a directory holding htcondor<25 (see the docstring)")
    shutil.rmtree(GOLDEN_DIR, ignore_errors=True)
    shutil.copytree(HERE, GOLDEN_DIR)
    env = dict(os.environ, PYTHONPATH=v1, CONDOR_CONFIG=str(HERE / "condor_config"))
    for sub in sorted(HERE.glob("*.sub")):
        if sub.name.startswith("multi_"):
            continue  # Submit.jobs() expands only the first queue statement
        own = submit_env(sub)
        run_env = env if own is None else dict(own, PYTHONPATH=v1, CONDOR_CONFIG=env["CONDOR_CONFIG"])
        got = subprocess.run([sys.executable, "-c", ORACLE, sub.name], cwd=GOLDEN_DIR, env=run_env,
                             capture_output=True, text=True)
        if got.returncode != 0:
            print(f"{sub.name}: {got.stderr.strip()}", file=sys.stderr)
            continue
        (HERE / (sub.stem + ".ads.json")).write_text(got.stdout + "\n")
        print(f"{sub.name}: {len(json.loads(got.stdout))} ads")


if __name__ == "__main__":
    main()
