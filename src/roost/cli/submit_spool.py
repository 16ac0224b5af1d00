"""``roost submit -spool``: the jobs' input files copied into the schedd's spool at submit.

As condor_submit -spool, the jobs are queued held ("Spooling input data files",
HoldReasonCode 16) until their input is in the spool, and then released, so the
submit directory may go away. Each job gets ``$(SPOOL)/<cluster % 10000>/<proc>/
cluster<C>.proc<P>.subproc0`` (HTCondor's layout) holding its executable (unless
``transfer_executable = false``), its stdin file and its ``transfer_input_files``;
``Iwd`` then names that directory (the old one is kept in ``SUBMIT_Iwd``, likewise
``SUBMIT_Cmd``, ``SUBMIT_In``, ``SUBMIT_TransferInput``), and relative ``output``/
``error`` files land there too, where HTCondor also leaves them (no
``condor_transfer_data`` yet: read them from the spool, ``roost q -af Iwd``).

roost's schedd has no file-receiving command, so the tool copies the files itself:
this works where the submitting user may write the schedd's spool (a personal pool,
or root), and is refused with a clear message elsewhere (then nothing stays queued).
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any

from roost.api.errors import PoolError
from roost.api.schedd import Schedd
from roost.cli.submit_send import send_result

#: the submit lines that queue the jobs held while their input is copied (HTCondor's code 16)
HOLD_LINES = ["hold = true", '+HoldReason = "Spooling input data files"', "+HoldReasonCode = 16"]
_ATTRS = ["ClusterId", "ProcId", "Iwd", "Cmd", "In", "TransferInput", "TransferExecutable", "TransferIn",
          "Out", "Err", "ShouldTransferFiles"]


def spool_root(schedd: Schedd) -> str:
    """The schedd's ``SPOOL`` (``$ROOST_HOME/spool`` unless the configuration says otherwise)."""
    # lazy: only -spool reads the configuration here
    from roost.config import Config, ConfigError

    try:
        cfg = Config.load(None, env=os.environ, subsys="SCHEDD")
        value = cfg.get("SPOOL")
    except (ConfigError, OSError):
        value = None
    return str(value) if value else os.path.join(str(schedd.home_dir), "spool")


def job_dir(root: str, cluster: int, proc: int) -> str:
    return os.path.join(root, str(cluster % 10000), str(proc), f"cluster{cluster}.proc{proc}.subproc0")


def _false(v: Any) -> bool:
    return v is False or (isinstance(v, str) and v.strip().lower() in ("false", "no"))


def _copy(src: str, dest: str) -> None:
    if os.path.isdir(src):
        shutil.copytree(src, dest, dirs_exist_ok=True)
    else:
        shutil.copy2(src, dest)


def spool_job(ad: dict[str, Any], dest: str) -> dict[str, Any]:
    """Copy one job's input into ``dest``; the attributes that then point there."""
    iwd = ad.get("Iwd") if isinstance(ad.get("Iwd"), str) else "/"

    def under(p: str) -> str:
        return p if os.path.isabs(p) else os.path.join(iwd, p)
    os.makedirs(dest, exist_ok=True)
    # the job's input is its owner's alone (who made it: a job without file transfer
    # runs in it as that user); the schedd, root, sends it to a sandbox
    os.chmod(dest, 0o700)
    edits: dict[str, Any] = {"Iwd": dest, "SUBMIT_Iwd": iwd}
    cmd = ad.get("Cmd")
    if isinstance(cmd, str) and cmd and not _false(ad.get("TransferExecutable", True)) and os.path.exists(under(cmd)):
        _copy(under(cmd), os.path.join(dest, os.path.basename(cmd)))
        edits.update(Cmd=os.path.join(dest, os.path.basename(cmd)), SUBMIT_Cmd=cmd)
    stdin = ad.get("In")
    if isinstance(stdin, str) and stdin and stdin != "/dev/null" and not _false(ad.get("TransferIn", True)):
        _copy(under(stdin), os.path.join(dest, os.path.basename(stdin)))
        edits.update(In=os.path.basename(stdin), SUBMIT_In=stdin)
    items = [p.strip() for p in str(ad.get("TransferInput") or "").replace("\n", ",").split(",") if p.strip()]
    if items:
        names = []
        for i, item in enumerate(items):
            if "://" in item:
                names.append(item)  # a URL is fetched where the job runs, as before
                continue
            path = under(item)
            if item.endswith("/"):  # its contents only: keep that with a directory of our own
                sub = f"_spool{i}"
                _copy(path.rstrip("/"), os.path.join(dest, sub))
                names.append(sub + "/")
            else:
                base = os.path.basename(path.rstrip("/"))
                _copy(path, os.path.join(dest, base))
                names.append(base)
        edits.update(TransferInput=",".join(names), SUBMIT_TransferInput=ad.get("TransferInput"))
    return edits


def run(desc: Any, *, name: str | None, pool: str | None, terse: bool) -> int:
    if name is not None or pool is not None:
        print("ERROR: -spool copies into the local pool's spool; it does not go with -name/-pool",
              file=sys.stderr)
        return 1
    result = send_result(desc, terse=terse)
    if result is None:
        return 1
    schedd = Schedd()
    ids = result.job_ids()
    try:
        root = spool_root(schedd)
        ads = schedd.query_objs(" || ".join(f"ClusterId == {c}" for c, _ in result.clusters), _ATTRS)
        for ad in ads:
            c, p = int(ad["ClusterId"]), int(ad["ProcId"])
            schedd.edit([f"{c}.{p}"], spool_job(ad, job_dir(root, c, p)))
        schedd.act("release", ids, reason="Data files spooled")
    except (OSError, PoolError) as e:
        what = f"{e.filename}: {e.strerror}" if isinstance(e, OSError) and e.filename else str(e)
        print(f"\nERROR: cannot spool the jobs' input ({what}); removing them", file=sys.stderr)
        try:
            schedd.act("remove", ids, reason="spooling the input failed")
        except PoolError:
            pass
        return 1
    finally:
        schedd.close()
    return 0
