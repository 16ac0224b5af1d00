"""accounting_group_user (issue 25): another local user (``nobody``, a process of its
own, with a pool token for its own identity) may not charge its jobs to someone else,
by ``accounting_group_user``, a hand-written ``+AccountingGroup`` or ``roost qedit``;
the refusal is one line naming the submit file's line and the rule. With
SCHEDD_ALLOW_OTHER_ACCOUNTING_USER the same submit is accepted and the usage is
charged to ``group.user`` as HTCondor charges it; a queue super user may always.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import time
from pathlib import Path

import pytest
from poolkit import PoolHandle, wait_until

from roost.config import Config
from roost.daemons.security import uid_domain
from roost.net.signing_key import read_key_file
from roost.net.token_store import TokenSettings
from roost.net.tokens import create_token

NOBODY = 65534
SRC = str(Path(__file__).resolve().parents[2] / "src")
#: a Python user nobody may run (the test's own may live under /root); roost's API needs only the stdlib
PYTHON = "/usr/bin/python3"

pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a process as another user"),
              pytest.mark.skipif(not os.access(PYTHON, os.X_OK), reason=f"no {PYTHON}")]

# Run as nobody: submit the file (or edit a job) through roost's API with nobody's token;
# print what a user would read.
_AS_NOBODY = textwrap.dedent("""
    import json, os, sys
    from roost.api.schedd import Schedd
    from roost.submit import SubmitError
    home, token, what, arg = sys.argv[1:5]
    s = Schedd(home, token=token)
    try:
        if what == "submit":
            os.chdir(os.path.dirname(arg))
            print("OK", s.submit_file(arg).cluster)
        else:
            print("OK", s.edit([arg.split()[0]], {"AcctGroupUser": arg.split()[1]}))
    except SubmitError as e:
        print("ERROR:", e)
    except Exception as e:
        print("ERROR:", type(e).__name__, e)
    finally:
        s.close()
""")


def _token(pool: PoolHandle, user: str) -> str:
    cfg = Config.load(str(pool.home / "roost_config"), env={"ROOST_HOME": str(pool.home)})
    settings = TokenSettings.from_config(cfg)
    return create_token(read_key_file(settings.pool_key_file), "POOL", settings.trust_domain,
                        f"{user}@{uid_domain(cfg)}", now=time.time())


def as_nobody(pool: PoolHandle, what: str, arg: str) -> str:
    done = subprocess.run(
        [PYTHON, "-c", _AS_NOBODY, str(pool.home), _token(pool, "nobody"), what, arg],
        capture_output=True, text=True, timeout=60, user=NOBODY, group=NOBODY, extra_groups=[], cwd="/",
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": SRC, "ROOST_HOME": str(pool.home)},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture
def open_pool(fresh_pool: PoolHandle) -> PoolHandle:
    """The pool's home reachable by other users, as an installed pool's is."""
    fresh_pool.home.chmod(0o755)
    return fresh_pool


def _write(d: Path, text: str) -> Path:
    path = d / "job.sub"
    path.write_text(text)
    path.chmod(0o644)
    return path


def test_another_accounting_user_is_refused_unless_the_admin_allows(open_pool: PoolHandle, jobdir: Path) -> None:
    pool = open_pool
    # bob (nobody) names alice: refused, one line naming the file's line and the rule
    sub = _write(jobdir, "executable = /bin/sleep\narguments = 30\naccounting_group = group_x\n"
                         "accounting_group_user = alice\nqueue\n")
    got = as_nobody(pool, "submit", str(sub))
    assert got.startswith(f"ERROR: {sub}:4: AcctGroupUser = \"alice\": nobody may not charge jobs to user 'alice'"), got
    assert "queue super user" in got and "SCHEDD_ALLOW_OTHER_ACCOUNTING_USER" in got and "\n" not in got
    # spelled as the attribute itself: refused at its own line
    sub = _write(jobdir, "executable = /bin/sleep\narguments = 30\n+AccountingGroup = \"group_x.alice\"\nqueue\n")
    got = as_nobody(pool, "submit", str(sub))
    assert got.startswith(f"ERROR: {sub}:3: AccountingGroup = \"group_x.alice\": nobody may not charge"), got
    # nothing was queued by either
    assert not pool.schedd().query_objs(constraint='Owner == "nobody"')
    # charging oneself is fine; changing it to alice afterwards (qedit) is refused
    sub = _write(jobdir, "executable = /bin/sleep\narguments = 30\naccounting_group = group_x\nhold = true\nqueue\n")
    got = as_nobody(pool, "submit", str(sub))
    assert got.startswith("OK"), got
    mine = f"{got.split()[1]}.0"
    assert pool.job(mine)["AccountingGroup"] == "group_x.nobody"
    got = as_nobody(pool, "edit", f"{mine} alice")
    assert got.startswith("ERROR:") and "EDIT: AcctGroupUser = \"alice\": nobody may not charge" in got, got
    assert pool.job(mine)["AcctGroupUser"] == "nobody"
    # a queue super user (root) may charge anyone
    root_job = pool.submit("executable = /bin/true\naccounting_group_user = alice\nhold = true\nqueue\n", jobdir)
    assert pool.job(f"{root_job.cluster}.0")["AccountingGroup"] == "alice"

    # the administrator's knob: HTCondor's behaviour
    config = pool.home / "roost_config"
    config.write_text(config.read_text() + "SCHEDD_ALLOW_OTHER_ACCOUNTING_USER = True\n")
    pool.roost("reconfig", check=True)
    sub = _write(jobdir, "executable = /bin/sleep\narguments = 30\naccounting_group = group_x\n"
                         "accounting_group_user = alice\nqueue\n")
    got = as_nobody(pool, "submit", str(sub))
    assert got.startswith("OK"), got
    jid = f"{got.split()[1]}.0"
    ad = pool.wait_for(jid, lambda a: a.get("JobStatus") == 2, 60, "the job running")
    assert ad["Owner"] == "nobody" and ad["AcctGroupUser"] == "alice" and ad["AccountingGroup"] == "group_x.alice"

    def charged() -> dict | None:
        users = json.loads(pool.roost("userprio", "-all", "-json", check=True).stdout)
        return next((u for u in users if u["name"].startswith("group_x.alice@")
                     and u["resources_used"] and u["resources_used"] > 0), None)
    wait_until(lambda: charged() is not None, 30, "the usage charged to group_x.alice")
    users = json.loads(pool.roost("userprio", "-all", "-json", check=True).stdout)
    assert not any(u["name"].startswith("nobody@") and (u["resources_used"] or 0) > 0 for u in users), users
    pool.schedd().act("remove", jid)
