"""One user on several submit hosts: the accounting name is ``user@UID_DOMAIN`` whatever
the host, the collector keeps one Submitter ad per (name, schedd), and the negotiator
shares and charges the name once while each schedd keeps its own requests."""

from roost.classad import ClassAd, ExprTree
from roost.core.fairshare import Submitter, negotiate_fair
from roost.core.matchmaker import Request, Slot
from roost.core.submitters import ad_key, merge_requests, submitter_name


def test_the_name_is_the_uid_domain_not_the_host():
    assert submitter_name("alice", None, "example.org") == "alice@example.org"
    assert submitter_name("alice", "", "example.org") == "alice@example.org"
    assert submitter_name("alice", "physics.alice", "example.org") == "physics.alice@example.org"
    assert submitter_name("alice", "nice-user.alice", "example.org") == "nice-user.alice@example.org"


def test_collector_keys_submitter_ads_by_schedd_too():
    a = ad_key("Submitter", {"Name": "alice@d", "ScheddName": "submit1"}, "alice@d")
    b = ad_key("Submitter", {"Name": "alice@d", "scheddname": "Submit2"}, "alice@d")
    assert a == ("submitter", "alice@d", "submit1") and b == ("submitter", "alice@d", "submit2")
    assert ad_key("Machine", {"Name": "slot1@h", "ScheddName": "x"}, "SLOT1@h") == ("machine", "slot1@h", "")


def test_merge_interleaves_one_names_schedds_and_keeps_each_request():
    per_ad = [("alice@d", ["a1", "a2", "a3"]), ("bob@d", ["b1"]), ("alice@d", ["A1"]), ("carol@d", [])]
    requests, order = merge_requests(per_ad)
    assert requests == {"alice@d": ["a1", "A1", "a2", "a3"], "bob@d": ["b1"]}
    assert order == ["alice@d", "bob@d"]


def _slot(i):
    ad = ClassAd({"Name": f"s{i}", "Cpus": 1, "Memory": 1024, "State": "Unclaimed", "Requirements": True})
    return Slot(f"s{i}", ad, claim_id=f"c{i}")


def _job():
    ad = ClassAd({"RequestCpus": 1, "RequestMemory": 10})
    ad["Requirements"] = ExprTree("TARGET.Cpus >= MY.RequestCpus")
    return ad


def test_two_schedds_of_one_user_share_one_slice():
    # alice waits at two schedds, bob at one; 4 slots at equal priority: 2 each, and
    # alice's two go to requests of both her schedds
    per_ad = [("alice@d", [Request("alice@d", 1, 10, _job(), "submit1")]),
              ("alice@d", [Request("alice@d", 1, 10, _job(), "submit2")]),
              ("bob@d", [Request("bob@d", 1, 10, _job(), "submit1")])]
    requests, order = merge_requests(per_ad)
    subs = [Submitter(n, 500.0) for n in order]
    plan = negotiate_fair([_slot(i) for i in range(4)], requests, subs, 0.0)
    assert plan.by_submitter == {"alice@d": 2, "bob@d": 2}
    assert {m.request.extra for m in plan.matches if m.submitter == "alice@d"} <= {"submit1", "submit2"}
