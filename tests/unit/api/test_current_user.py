"""The submitting user is the effective uid's account, as condor_submit's my_username()."""

from __future__ import annotations

import os
import pwd

import pytest

from roost.api.schedd import current_user
from roost.submit import parse_submit


def test_current_user_is_the_uids_account_not_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOGNAME", "someone-else")
    monkeypatch.setenv("USER", "someone-else")
    me = pwd.getpwuid(os.geteuid()).pw_name
    assert current_user() == me
    # nice_user's accounting group names that user
    (c,) = parse_submit("executable = /bin/true\nnice_user = true\nqueue\n", cwd="/tmp", env={}).expand(
        owner=current_user())
    assert c.cluster_ad["AccountingGroup"] == f"nice-user.{me}" and c.cluster_ad["AcctGroupUser"] == me
