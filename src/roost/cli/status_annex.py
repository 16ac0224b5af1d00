"""``roost status -annex``: the annexes ``roost annex`` made, with their state.

Three views combined by ``roost.core.annex.annex_state``: the records under
``$(LOCAL_DIR)/annex/`` (what was asked for), Slurm's (``scontrol show job``: pending,
running, ended; a job Slurm no longer lists has ended) and the collector's (the slot
ads whose ``AnnexName`` is the annex's: the glide-ins in the pool now).
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from typing import Any

from roost.core.annex import AnnexError, AnnexRecord, AnnexState, annex_state
from roost.core.gridbatch import parse_scontrol


def read_records(directory: str) -> tuple[list[AnnexRecord], list[str]]:
    """The annex records in ``directory`` and one warning per unreadable one."""
    records, warnings = [], []
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        try:
            with open(path) as f:
                records.append(AnnexRecord.from_obj(json.load(f), path))
        except (OSError, ValueError, AnnexError) as e:
            warnings.append(f"{path}: {e}" if not isinstance(e, AnnexError) else str(e))
    return records, warnings


def slurm_view(env: dict[str, str]) -> dict[str, str] | None:
    """Slurm's job id -> JobState, or None when Slurm cannot be asked."""
    try:
        done = subprocess.run(["scontrol", "show", "job", "-o"], env=env, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None if "No jobs" not in done.stdout + done.stderr else {}
    return {r["JobId"]: r.get("JobState", "") for r in parse_scontrol(done.stdout) if "JobId" in r}


def main_annex(pool: str | None, as_json: bool) -> int:
    # lazy: only -annex reads the configuration and asks Slurm
    from roost.api.collector import Collector
    from roost.api.errors import PoolError
    from roost.cli.annex_cmd import annex_dir
    from roost.cli.options import collector_for
    from roost.config import Config, ConfigError
    from roost.poolhome import pool_home

    home = pool_home()
    try:
        cfg = Config.load(env=os.environ, subsys="TOOL")
    except ConfigError as e:
        print(f"roost status: {e}", file=sys.stderr)
        return 1
    records, warnings = read_records(annex_dir(cfg, home))
    for w in warnings:
        print(f"roost status: warning: {w}", file=sys.stderr)
    env = dict(os.environ)
    if (cfg.get("SLURM_CONF") or "").strip():
        env["SLURM_CONF"] = str(cfg.get("SLURM_CONF")).strip()
    slurm = slurm_view(env) if records else {}
    if slurm is None:
        print("roost status: warning: Slurm does not answer (scontrol): its glide-ins' Slurm states are unknown",
              file=sys.stderr)
    ads: list[dict[str, Any]] = []
    try:
        c = Collector(address=collector_for(pool), timeout=30)
        try:
            ads = c.query_objs("Machine", "IsGlidein =?= true", ["Name", "Machine", "AnnexName", "GLIDEIN_ToDie", "SlurmJobId"])
        finally:
            c.close()
    except (PoolError, ConnectionError, OSError, ValueError) as e:
        print(f"roost status: warning: the collector does not answer ({e}): glide-ins in the pool unknown",
              file=sys.stderr)
    states = [annex_state(r, slurm or {}, ads) for r in records]
    if slurm is None:
        states = [_unknown_slurm(s) for s in states]
    if as_json:
        print(json.dumps([{**s.__dict__, "slurm_ids": list(r.slurm_ids), "jti": r.jti} for s, r in zip(states, records)], indent=1))
        return 0
    if not states:
        print("no annexes (roost annex -slurm N makes one)")
        return 0
    rows = [("NAME", "STATE", "ASKED", "PENDING", "RUNNING", "ENDED", "IN-POOL", "ENDS", "SLURM-JOBS")]
    for s, r in zip(states, records):
        ends = time.strftime("%m/%d %H:%M:%S", time.localtime(s.expires)) if s.expires else "-"
        rows.append((s.name, s.state, str(s.requested), str(s.pending), str(s.running), str(s.ended),
                     str(s.glideins), ends, ",".join(r.slurm_ids)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())
    return 0


def _unknown_slurm(s: AnnexState) -> AnnexState:
    return replace(s, state=s.state if s.glideins else "unknown", pending=0, running=0, ended=0)
