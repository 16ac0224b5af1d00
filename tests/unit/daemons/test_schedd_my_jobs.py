"""condor_q's MyJobs, decided by the schedd as HTCondor's does: a user sees their own
jobs, a queue super user (the schedd's own account included) and an unauthenticated
caller every job; the answer names the owner it settled on."""

from types import SimpleNamespace

from roost.daemons.schedd.access import QueueRights
from roost.daemons.schedd.queries import QueueCalls
from roost.net.auth import Identity


def my_name(req: dict, name: str | None) -> str | None:
    rights = QueueRights("example.org", ["root"], "condor")
    calls = SimpleNamespace(rights=rights)
    peer = SimpleNamespace(identity=Identity(name, "FS") if name else None)
    return QueueCalls._my_name(calls, req, peer)  # type: ignore[arg-type]


def test_a_user_gets_only_their_jobs() -> None:
    assert my_name({"my_jobs": True}, "alice@example.org") == "alice"


def test_super_users_and_the_schedds_account_see_every_job() -> None:
    assert my_name({"my_jobs": True}, "root@example.org") is None
    assert my_name({"my_jobs": True}, "condor@example.org") is None


def test_unauthenticated_or_foreign_callers_see_every_job() -> None:
    assert my_name({"my_jobs": True}, None) is None
    assert my_name({"my_jobs": True}, "alice@elsewhere.org") is None


def test_no_my_jobs_without_the_flag_or_with_a_named_owner() -> None:
    assert my_name({}, "alice@example.org") is None
    assert my_name({"my_jobs": True, "owner": "bob"}, "alice@example.org") is None
