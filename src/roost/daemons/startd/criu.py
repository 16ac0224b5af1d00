"""Whether this host can checkpoint unmodified programs with CRIU (issue 15).

The startd advertises ``HasCRIU = true`` only when ``criu check`` passes here: a
job with ``checkpoint_method = criu`` requires it, so it never matches a host where
a dump could not be taken or restored. On a host where the check fails (no
``criu``, no privileges, a kernel CRIU cannot drive, as on the machines roost is
developed on), the startd says why in its log and advertises nothing.
"""

from __future__ import annotations

import shutil
import subprocess

CHECK_TIMEOUT = 60.0  # seconds: criu check probes many kernel features


def probe(criu: str = "criu") -> tuple[bool, str]:
    """(usable, why): runs ``criu check`` (blocking: call it off the event loop)."""
    path = shutil.which(criu)
    if path is None:
        return False, f"{criu} is not installed (Debian: apt-get install criu)"
    try:
        got = subprocess.run([path, "check"], capture_output=True, text=True, timeout=CHECK_TIMEOUT,
                             stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return False, f"{path} check did not finish within {CHECK_TIMEOUT:g} s"
    except OSError as e:
        return False, f"cannot run {path} check: {e.strerror or e}"
    if got.returncode == 0:
        return True, f"{path} check passed"
    lines = [ln.strip() for ln in (got.stderr + got.stdout).splitlines() if ln.strip()]
    # criu's last lines say what stopped it; its first ones are often generic
    return False, f"{path} check failed (exit {got.returncode}): " + " / ".join(lines[-3:])
