"""The batch script of one glide-in: what a Slurm job of ``roost annex`` runs.

It makes a ROOST_HOME of its own under the job's temporary directory, writes there the
glide-in's configuration (this pool's collector and domains, the annex's attributes,
its end: the job's start plus its duration) and the annex's token (owner-only), runs a
startd in the foreground, and removes the directory when the startd exits, which it
does when idle or before Slurm's time limit (``daemons/startd/glidein.py``). The token
travels inside the script, so a cluster with no file system shared with this host
needs none; the script is as private as Slurm keeps its jobs' scripts. sbatch hands
the job the environment of ``roost annex``: ``ROOST_CONFIG`` and every ``_ROOST_*``
override are dropped before the startd starts, or the central manager's own settings
(its ``_ROOST_NETWORK_INTERFACE``, ``_ROOST_BIND_ADDRESS``) would beat the glide-in's
configuration on another host.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class GlideinSpec:
    """What every glide-in of one annex is told."""

    annex: str
    duration: int  # seconds from the Slurm job's start to GLIDEIN_ToDie
    token: str
    python: str  # the interpreter that runs roost on the Slurm node
    pythonpath: str  # its PYTHONPATH ("" for none)
    config: Mapping[str, str]  # knobs: collector, domains, bind address, policy


def _quote_ad_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def config_lines(spec: GlideinSpec) -> list[str]:
    """The glide-in's configuration but for what only the Slurm job knows (its home,
    id, CPUs, memory and end: the script appends those)."""
    lines = [f"# roost glide-in of annex {spec.annex} (written by its Slurm job)",
             "IsGlidein = True",
             f"AnnexName = {_quote_ad_string(spec.annex)}",
             "STARTD_ATTRS = $(STARTD_ATTRS) IsGlidein AnnexName GLIDEIN_ToDie SlurmJobId"]
    lines += [f"{k} = {v}" for k, v in spec.config.items()]
    for line in lines:
        if "\n" in line or line.strip() == "ROOST_ANNEX_CONFIG":
            raise ValueError(f"bad glide-in configuration line {line!r}")
    return lines


#: the knobs only the running Slurm job knows, appended by the script's shell
_JOB_KNOBS = ("LOCAL_DIR = %s\\nSTARTD_NAME = glidein%s\\nNUM_CPUS = %s\\nMEMORY = %s\\n"
              'GLIDEIN_ToDie = %s\\nSlurmJobId = "%s"\\n')


def script(spec: GlideinSpec) -> str:
    """The sbatch script (``/bin/sh``)."""
    if not spec.token or any(c.isspace() for c in spec.token):
        raise ValueError("the annex token must be one word")
    env = f"PYTHONPATH={shlex.quote(spec.pythonpath)} " if spec.pythonpath else ""
    config = "\n".join(config_lines(spec))
    return f"""#!/bin/sh
# roost glide-in of annex {spec.annex}: a startd that joins the pool until it is idle or its time is up
set -eu
umask 077
GH=$(mktemp -d "${{SLURM_TMPDIR:-${{TMPDIR:-/tmp}}}}/roost-gi-XXXXXX")
trap 'rm -rf "$GH"' EXIT
trap 'exit 143' TERM INT HUP
chmod 755 "$GH"
mkdir "$GH/tokens.d"
cat > "$GH/tokens.d/annex" <<'ROOST_ANNEX_TOKEN'
{spec.token}
ROOST_ANNEX_TOKEN
END=$(( $(date +%s) + {int(spec.duration)} ))
CPUS=${{SLURM_CPUS_ON_NODE:-1}}
MEM=${{SLURM_MEM_PER_NODE:-1024}}
cat > "$GH/roost_config" <<'ROOST_ANNEX_CONFIG'
{config}
ROOST_ANNEX_CONFIG
printf '{_JOB_KNOBS}' "$GH" "$SLURM_JOB_ID" "$CPUS" "$MEM" "$END" "$SLURM_JOB_ID" >> "$GH/roost_config"
unset ROOST_CONFIG
for v in $(env | sed -n 's/^\\(_[Rr][Oo][Oo][Ss][Tt]_[A-Za-z0-9_]*\\)=.*/\\1/p'); do unset "$v"; done
echo "glide-in $SLURM_JOB_ID of annex {spec.annex}: ROOST_HOME $GH, ends at $END"
ROOST_HOME="$GH" {env}{shlex.quote(spec.python)} -m roost.daemons.startd
echo "glide-in $SLURM_JOB_ID: the startd exited"
"""
