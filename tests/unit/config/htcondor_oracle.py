"""Ask HTCondor's own config reader (PyPI htcondor2) what a config means.

All cases run in one subprocess (importing htcondor2 costs a second):
each case's text goes to its own file, CONDOR_CONFIG points at it, the
config is reloaded and the asked-for knobs are read back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

BOOL_MARK = "__bool__:"

_CHILD = r"""
import json, os, sys
import htcondor2
BOOL_MARK = "__bool__:"
cases = json.load(sys.stdin)
out = []
for case in cases:
    for k in [k for k in os.environ if k.startswith("_CONDOR_")]:
        del os.environ[k]
    os.environ.update(case["env"])
    os.environ["CONDOR_CONFIG"] = case["path"]
    htcondor2.set_subsystem(case["subsys"] or "TOOL")
    try:
        htcondor2.reload_config()
        got = {}
        for n in case["names"]:
            v = htcondor2.param.get(n)
            # param.get types values from HTCondor's knob table; undo that.
            if isinstance(v, bool):
                v = BOOL_MARK + ("true" if v else "false")
            elif v is not None:
                v = str(v)
            got[n] = v
        out.append(got)
    except Exception as e:
        out.append({"__error__": str(e)})
json.dump(out, sys.stdout)
"""


def available() -> bool:
    try:
        import htcondor2  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class Case:
    """A config text and the knobs to compare; ``env`` is given to both readers."""

    id: str
    text: str
    names: list[str]
    env: dict[str, str] = field(default_factory=dict)
    subsys: str | None = None
    squash_spaces: bool = False


def htcondor_values(cases: list[Case]) -> list[dict[str, str | None]]:
    """Each case's knob values as htcondor2.param reports them.

    htcondor2 reports an empty value as None, and knobs its table types as
    boolean as Python bools: those come back as ``BOOL_MARK + "true"``.
    """
    with tempfile.TemporaryDirectory() as tmp:
        payload = []
        for i, case in enumerate(cases):
            path = os.path.join(tmp, f"case{i}.config")
            with open(path, "w") as f:
                f.write(case.text)
            env = {k.replace("_ROOST_", "_CONDOR_", 1): v for k, v in case.env.items()}
            payload.append({"path": path, "names": case.names, "env": env, "subsys": case.subsys})
        child_env = {k: v for k, v in os.environ.items() if not k.startswith("_CONDOR_")}
        done = subprocess.run(
            [sys.executable, "-c", _CHILD],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            timeout=120,
            env=child_env,
        )
        if done.returncode != 0:
            raise RuntimeError(f"htcondor2 oracle failed: {done.stderr[-2000:]}")
        return json.loads(done.stdout)


_REJECT_CHILD = r"""
import htcondor2
htcondor2.reload_config()
print("read-ok")
"""


def htcondor_rejects(texts: list[str]) -> list[bool]:
    """Whether HTCondor refuses each config text (it exits on a config error).

    One process per text, run side by side, because HTCondor's reader
    exits the process on the first error.
    """
    with tempfile.TemporaryDirectory() as tmp:
        procs = []
        for i, text in enumerate(texts):
            path = os.path.join(tmp, f"bad{i}.config")
            with open(path, "w") as f:
                f.write(text)
            env = {k: v for k, v in os.environ.items() if not k.startswith("_CONDOR_")}
            env["CONDOR_CONFIG"] = path
            procs.append(subprocess.Popen(
                [sys.executable, "-c", _REJECT_CHILD], env=env,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            ))
        results = []
        for p in procs:
            out, _ = p.communicate(timeout=120)
            results.append(p.returncode != 0 or "read-ok" not in out)
        return results
