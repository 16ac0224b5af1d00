"""Issue 12's attacks across hosts, in a pool of namespaces: a central manager (``cm``),
two submit hosts (``submit``: alice's; ``submit2``: bob's), an execute host
(``exec1``) and a ``rogue`` host on the same LAN that holds no pool key.

Users hold tokens the central manager minted (``roost token create -identity
bob@UID_DOMAIN``); each call here is made from inside a host, over TCP, to a daemon
of another host, as a user's own client would:

- bob cannot hold or remove alice's jobs at alice's schedd, but submits and removes
  his own there;
- a fake startd on the rogue host, with a key of its own, cannot advertise a slot
  (its token does not verify: AUTH_FAILED; with none: PERMISSION_DENIED), and the
  pool's slots are what they were;
- no READ answer, from any host, holds a ClaimId; a user's private QUERY is refused;
- a user cannot drain an execute host or set a priority factor; the administrator can.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostpool import UID_DOMAIN, MultiHostPool, RoostHost
from netns import Network, unavailable

from roost.net.protocol import AD_TYPES

# A user's client: each item is (address, token or None, [(cmd, args), ...][, OPTS]),
# the calls of one item on one connection (NEW_CLUSTER's reservation lives as long as
# it), over TLS unless OPTS is "plain"; a dict OPTS gives ClientTLS's settings (a
# certificate, the CA to check the daemon with, the methods).
_CLIENT = """
import json, os, sys
from roost.net.errors import RemoteError
from roost.net.syncclient import SyncClient
from roost.net.tls import ClientTLS
out = []
for address, token, calls, *opts in json.loads(sys.argv[1]):
    answers = []
    if opts and opts[0] == "plain":
        tls = None
    else:
        kw = dict(opts[0]) if opts else {}
        os.environ.update(kw.pop("env", {}))  # KRB5_CONFIG, KRB5CCNAME for KERBEROS
        tls = ClientTLS("REQUIRED", **{k: tuple(v) if k == "methods" else v for k, v in kw.items()})
    try:
        with SyncClient(address, timeout=10, connect_timeout=5, token=token, tls=tls) as c:
            for cmd, args in calls:
                try:
                    answers.append({"ok": True, "result": c.call(cmd, **args)})
                except RemoteError as e:
                    answers.append({"ok": False, "code": e.code, "error": e.message})
    except RemoteError as e:  # the handshake itself
        answers.append({"ok": False, "code": e.code, "error": e.message})
    except Exception as e:
        answers.append({"ok": False, "code": type(e).__name__, "error": str(e)})
    out.append(answers)
print(json.dumps(out))
"""

# A fake startd that does not give up when the collector's proof shows the collector
# holds another key than its own: it answers the challenge with its own token's proof,
# then advertises anyway.
_FAKE_STARTD = """
import json, socket, ssl, sys
from roost.net import auth, framing
from roost.net.tls import binding_of
address, token, ad = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
host, port = address.rsplit(":", 1)
s = socket.create_connection((host, int(port)), timeout=10)
f = s.makefile("rb")
def call(req):
    s.sendall(framing.encode(req))
    return framing.decode_body(f.read(framing.body_length(f.read(4))))
assert call({"cmd": "STARTTLS"})["ok"]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
s = ctx.wrap_socket(s)
f = s.makefile("rb")
binding = binding_of(s.getpeercert(binary_form=True))
hs = auth.ClientHandshake(token, binding)
hello = call(hs.hello())
proof = auth._proof(hs.secret, "client", hs.nonce, str(hello.get("nonce")), hs.signing_input, binding)
print(json.dumps([hello, call({"cmd": "AUTH_PROOF", "proof": proof}),
                  call({"cmd": "UPDATE_AD", "type": "Machine", "ad": ad})]))
"""


class SecPool:
    """The pool, its users' tokens, and a way to call its daemons from any host."""

    def __init__(self, pool: MultiHostPool) -> None:
        self.pool = pool
        self.tokens: dict[str, str] = {}

    def __getitem__(self, name: str) -> RoostHost:
        return self.pool[name]

    def address(self, host: str, daemon: str) -> str:
        return (self[host].home / "run" / f"{daemon}.address").read_text().strip()

    def mint(self, user: str, *extra: str) -> str:
        """A token for user@UID_DOMAIN, made on the central manager with the pool key."""
        done = self["cm"].roost("token", "create", "-identity", f"{user}@{UID_DOMAIN}", *extra)
        token = done.stdout.strip().splitlines()[-1]
        assert token.count(".") == 2, done.stdout
        return token

    def calls(self, host: str, items: list[tuple[str, str | None, list[tuple[str, dict[str, Any]]]]]
              ) -> list[list[dict[str, Any]]]:
        done = self[host].python(_CLIENT, json.dumps(items))
        return json.loads(done.stdout)

    def call(self, host: str, address: str, token: str | None, cmd: str, **args: Any) -> dict[str, Any]:
        return self.calls(host, [(address, token, [(cmd, args)])])[0][0]

    def admin(self, daemon_host: str, daemon: str, cmd: str, **args: Any) -> dict[str, Any]:
        """A call as the pool's administrator, from the central manager: to look."""
        got = self.call("cm", self.address(daemon_host, daemon), self.tokens["root"], cmd, **args)
        assert got["ok"], got
        return got["result"]

    def slots(self) -> list[str]:
        ads = self.admin("cm", "collector", "QUERY", type="Machine", projection=["Name"])["ads"]
        return sorted(a["Name"] for a in ads)

    def submit(self, host: str, token: str, owner: str | None, **ad: Any) -> dict[str, Any]:
        """NEW_CLUSTER and SUBMIT of one job at ``submit``'s schedd, from ``host``."""
        cluster_ad = {"Cmd": "/bin/sleep", "Arguments": "60", "Iwd": "/tmp", "JobUniverse": 5,
                      "Requirements": "/Expr(false)/", "RequestCpus": 1, "RequestMemory": 16, **ad}
        if owner is not None:
            cluster_ad["Owner"] = owner
        got = self.calls(host, [(self.address("submit", "schedd"), token, [("NEW_CLUSTER", {})])])[0][0]
        assert got["ok"], got
        cid = got["result"]["cluster"]
        new, sub = self.calls(host, [(self.address("submit", "schedd"), token, [
            ("NEW_CLUSTER", {}),
            ("SUBMIT", {"cluster": cid + 1, "cluster_ad": cluster_ad, "procs": [{"ProcId": 0}]}),
        ])])[0]
        assert new["ok"] and new["result"]["cluster"] == cid + 1, new
        return sub

    def job_status(self, jid: str) -> int | None:
        """The job's status at the submit host's schedd (from history once it left); None if gone."""
        res = self.admin("submit", "schedd", "QUERY_JOBS", ids=[jid], projection=["JobStatus"], history=True)
        if not res["jobs"]:
            return None
        cluster, _, diff = res["jobs"][0]
        return {**res["clusters"].get(str(cluster), {}), **diff}.get("JobStatus")


def _log_tails(pool: MultiHostPool) -> str:
    return pool.log_tails()


@pytest.fixture(scope="module")
def sec() -> Iterator[SecPool]:
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    with Network() as net:
        pool = MultiHostPool(net)
        try:
            cm = pool.add("cm", "CentralManager")
            cm.roost("up", "-timeout", "30", timeout=45)
            for name, role in (("submit", "Submit"), ("submit2", "Submit"), ("exec1", "Execute")):
                h = pool.add(name, role)
                h.take_pool_key(cm)
            pool.start("submit", "submit2", "exec1")
            pool.add("rogue", "Execute")  # on the LAN, no pool key, nothing started
            s = SecPool(pool)
            for user in ("alice", "bob", "root", "condor"):
                s.tokens[user] = s.mint(user)
            pool.wait_for_slots({"exec1"})
            yield s
        finally:
            pool.stop()


@pytest.fixture(scope="module")
def running(sec: SecPool) -> str:
    """A job of the submit host's account running on exec1: a claimed slot whose
    ClaimId the collector and the schedd hold."""
    submit = sec["submit"]
    work = submit.host.dir / "work"
    work.mkdir(exist_ok=True)
    work.chmod(0o755)
    (work / "job.sub").write_text("executable = /bin/sleep\narguments = 60\ntransfer_executable = false\n"
                                  "should_transfer_files = YES\nwhen_to_transfer_output = ON_EXIT\n"
                                  "request_cpus = 1\nrequest_memory = 64\nqueue\n")
    done = submit.roost("submit", "job.sub", cwd=work)
    m = re.search(r"submitted to cluster (\d+)", done.stdout)
    assert m, done.stdout
    jid = f"{m.group(1)}.0"
    deadline = time.monotonic() + 20
    while sec.job_status(jid) != 2:
        assert time.monotonic() < deadline, f"{jid} never ran\n{_log_tails(sec.pool)}"
        time.sleep(0.2)
    return jid


def _denied(answer: dict[str, Any], *codes: str) -> bool:
    return (not answer["ok"] and answer["code"] in (codes or ("PERMISSION_DENIED",))
            and "\n" not in answer["error"])


# -- (a) bob and alice's jobs -----------------------------------------------------------

def test_bob_on_another_host_cannot_touch_alices_jobs_but_manages_his_own(sec: SecPool) -> None:
    schedd = sec.address("submit", "schedd")
    alice, bob = sec.tokens["alice"], sec.tokens["bob"]
    sub = sec.submit("submit", alice, "alice")
    assert sub["ok"], sub
    ajid = f"{sub['result']['cluster']}.0"
    assert sec.job_status(ajid) == 1

    # bob, from his own submit host, at alice's schedd
    got = sec.calls("submit2", [
        (schedd, bob, [
            ("ACT", {"action": "hold", "ids": [ajid]}),
            ("ACT", {"action": "remove", "ids": [ajid]}),
            ("ACT", {"action": "remove", "owner": "alice"}),
            ("ACT", {"action": "hold", "constraint": 'Owner == "alice"'}),
        ]),
        (schedd, None, [("ACT", {"action": "remove", "ids": [ajid]}), ("NEW_CLUSTER", {})]),
    ])
    for answer in got[0]:  # acted on none of them, as condor_rm on another's jobs
        assert answer["ok"] and answer["result"]["count"] == 0, answer
    assert all(_denied(a) for a in got[1]), got[1]
    stolen = sec.submit("submit2", bob, "alice")
    assert _denied(stolen, "DENIED") and "may not submit jobs owned by 'alice'" in stolen["error"], stolen
    assert sec.job_status(ajid) == 1  # alice's job is as it was

    # his own: submitted and removed from submit2
    mine = sec.submit("submit2", bob, None)
    assert mine["ok"], mine
    bjid = f"{mine['result']['cluster']}.0"
    assert sec.job_status(bjid) == 1
    rm = sec.call("submit2", schedd, bob, "ACT", action="remove", ids=[bjid])
    assert rm["ok"] and rm["result"]["count"] == 1, rm
    assert sec.job_status(bjid) in (None, 3)

    # the same calls work for alice from that host: bob's zero was his rights, not the path
    held = sec.call("submit2", schedd, alice, "ACT", action="hold", ids=[ajid])
    assert held["ok"] and held["result"]["count"] == 1, held
    assert sec.job_status(ajid) == 5
    gone = sec.call("submit2", schedd, alice, "ACT", action="remove", ids=[ajid])
    assert gone["ok"] and gone["result"]["count"] == 1, gone


# -- (b) a fake startd ------------------------------------------------------------------

def test_a_fake_startd_without_the_pool_key_cannot_advertise(sec: SecPool) -> None:
    rogue = sec["rogue"]
    # its own key, freshly made: `roost token create` makes one where there is none
    forged = rogue.roost("token", "create", "-identity", f"condor@{UID_DOMAIN}").stdout.strip().splitlines()[-1]
    keys = rogue.home / "passwords.d"
    (keys / "ROGUE").write_bytes((keys / "POOL").read_bytes())
    (keys / "ROGUE").chmod(0o600)
    other_kid = rogue.roost("token", "create", "-identity", f"condor@{UID_DOMAIN}", "-key", "ROGUE"
                            ).stdout.strip().splitlines()[-1]
    assert (rogue.home / "passwords.d" / "POOL").read_bytes() != (sec["cm"].home / "passwords.d" / "POOL").read_bytes()
    before = sec.slots()
    assert before and all(n.endswith("@exec1") for n in before), before

    real = sec.admin("cm", "collector", "QUERY", type="Machine")["ads"][0]
    fake = dict(real, Name="slot1@rogue", Machine="rogue", MyAddress=f"{rogue.address}:9618", Cpus=64)
    coll = sec.address("cm", "collector")
    got = sec.calls("rogue", [
        (coll, forged, [("UPDATE_AD", {"type": "Machine", "ad": fake})]),
        (coll, other_kid, [("UPDATE_AD", {"type": "Machine", "ad": fake})]),
        (coll, None, [
            ("UPDATE_AD", {"type": "Machine", "ad": fake, "private": {"ClaimId": "mine"}}),
            ("UPDATE_AD", {"type": "Master", "ad": {"Name": "rogue", "MyType": "Master"}}),
            ("INVALIDATE_AD", {"type": "Machine", "name": before[0]}),
        ]),
    ])
    # its token does not verify: the collector's proof shows it holds another key
    assert _denied(got[0][0], "AUTH_FAILED") and "server's proof does not match" in got[0][0]["error"], got[0]
    assert _denied(got[1][0], "AUTH_FAILED") and "unknown key 'ROGUE'" in got[1][0]["error"], got[1]
    for answer in got[2]:  # without a token it is nobody
        assert _denied(answer) and "unauthenticated" in answer["error"], answer

    # one that ignores the collector's proof and answers with its own
    done = rogue.python(_FAKE_STARTD, coll, forged, json.dumps(fake))
    hello, proof, update = json.loads(done.stdout)
    assert hello["ok"] is True  # the challenge: the collector proves what key it holds
    assert _denied(proof, "AUTH_FAILED") and "could not prove it holds the token" in proof["error"], proof
    assert _denied(update), update

    assert sec.slots() == before
    machines = sec["cm"].roost("status", "-af", "Machine").stdout.split()
    assert "rogue" not in machines and "exec1" in machines


# -- (c) no ClaimId to READ -------------------------------------------------------------

def test_no_read_query_from_any_host_shows_a_claim_id(sec: SecPool, running: str) -> None:
    private = sec.admin("cm", "collector", "QUERY", type="Machine", private=True)["ads"]
    claim_ids = [a["ClaimId"] for a in private if isinstance(a.get("ClaimId"), str)]
    assert len(claim_ids) >= 2, private  # the partitionable slot's and the running job's claim

    def clean(text: str, where: str) -> None:
        assert "ClaimId" not in text, f"{where}: {text}"
        for cid in claim_ids:
            # <startd start time>#<sequence>#<secret>: the secret must never show
            assert cid.rsplit("#", 1)[-1] not in text, f"{where} shows claim id {cid}: {text}"

    for host in ("cm", "submit", "submit2", "exec1", "rogue"):
        for args in (("status", "-long"), ("status", "-json"), ("status", "-startd", "-long")):
            out = sec[host].roost(*args).stdout
            assert "exec1" in out, (host, args, out)
            clean(out, f"roost {' '.join(args)} on {host}")
    clean(sec["submit"].roost("q", "-long").stdout, "roost q -long on submit")

    coll, schedd = sec.address("cm", "collector"), sec.address("submit", "schedd")
    queries = [(coll, None, [("QUERY", {"type": t}) for t in AD_TYPES]),
               (coll, sec.tokens["bob"], [("QUERY", {"type": t}) for t in AD_TYPES]),
               (schedd, None, [("QUERY_JOBS", {}), ("QUERY_JOBS", {"ids": [running]})]),
               (schedd, sec.tokens["bob"], [("QUERY_JOBS", {})])]
    for host in ("rogue", "submit2", "exec1"):
        for item, answers in zip(queries, sec.calls(host, queries), strict=True):
            assert all(a["ok"] for a in answers), answers
            clean(json.dumps(answers), f"{item[2][0][0]} from {host}")

    # private attributes are for the negotiator (and administrators), not for users
    got = sec.calls("submit2", [
        (coll, sec.tokens["bob"], [("QUERY", {"type": "Machine", "private": True})]),
        (coll, None, [("QUERY", {"type": "Machine", "private": True})]),
    ])
    for (answer,) in got:
        assert _denied(answer) and "NEGOTIATOR" in answer["error"], answer
        clean(json.dumps(answer), "a refused private QUERY")


# -- (d) remote administration ----------------------------------------------------------

def test_remote_admin_is_refused_to_users_and_works_for_the_administrator(sec: SecPool) -> None:
    startd, neg = sec.address("exec1", "startd"), sec.address("cm", "negotiator")
    bob = sec.tokens["bob"]
    got = sec.calls("submit", [
        (startd, bob, [("DRAIN", {"reason": "bob says so"}), ("SET_OFF", {}), ("VACATE", {})]),
        (neg, bob, [("SET_FACTOR", {"name": f"bob@{UID_DOMAIN}", "factor": 1.0}),
                    ("RESET_USAGE", {"name": f"alice@{UID_DOMAIN}"})]),
        (startd, None, [("DRAIN", {})]),
        (neg, None, [("SET_FACTOR", {"name": f"bob@{UID_DOMAIN}", "factor": 1.0})]),
    ])
    for answers in got:
        for answer in answers:
            assert _denied(answer) and "ADMINISTRATOR" in answer["error"], answer
    assert sec.call("submit", startd, bob, "CANCEL_DRAIN")["code"] == "PERMISSION_DENIED"

    def factor(name: str) -> float | None:
        users = sec.admin("cm", "negotiator", "USERPRIO")["users"]
        return next((u.get("factor", u.get("PriorityFactor")) for u in users if u.get("name") == name), None)

    assert factor(f"bob@{UID_DOMAIN}") != 1.0

    for admin in ("root", "condor"):
        token = sec.tokens[admin]
        drained = sec.calls("submit", [(startd, token, [("DRAIN", {"reason": f"by {admin}"}),
                                                         ("CANCEL_DRAIN", {})])])[0]
        assert all(a["ok"] for a in drained), drained
        set_ = sec.call("submit", neg, token, "SET_FACTOR", name=f"bob@{UID_DOMAIN}", factor=7.0)
        assert set_["ok"], set_
    assert factor(f"bob@{UID_DOMAIN}") == 7.0
    # the execute host still offers its slots after the drain was cancelled
    sec.pool.wait_for_slots({"exec1"})


# -- (e) on the wire: TLS between hosts --------------------------------------------------

# Captures every frame on the LAN's switch (a raw packet socket in the switch's namespace,
# which sees each veth port) into a file until a stop file appears, or 60 s at most.
_CAPTURE = """
import os, select, socket, sys, time
out, stop = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
deadline = time.monotonic() + 60
with open(out, "wb") as f:
    print("ready", flush=True)
    while not os.path.exists(stop) and time.monotonic() < deadline:
        if select.select([s], [], [], 0.1)[0]:
            f.write(s.recv(65535))
"""


def test_a_capture_on_the_lan_shows_no_claim_id_and_plain_tcp_is_refused(sec: SecPool, running: str) -> None:
    import subprocess

    net = sec.pool.net
    out, stop = net.dir / "capture.bin", net.dir / "capture.stop"
    argv = ["nsenter", f"--net=/run/netns/{net.switch}", sys.executable, "-c", _CAPTURE, str(out), str(stop)]
    cap = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert cap.stdout is not None and cap.stdout.readline().strip() == "ready"
        # a new job: a new claim on exec1, its ClaimId sent negotiator -> schedd -> startd,
        # and the startd's private ad to the collector; plus new connections from a tool
        submit = sec["submit"]
        work = submit.host.dir / "work"
        done = submit.roost("submit", "job.sub", cwd=work)
        jid = re.search(r"submitted to cluster (\d+)", done.stdout).group(1) + ".0"  # type: ignore[union-attr]
        deadline = time.monotonic() + 20
        while sec.job_status(jid) != 2:
            assert time.monotonic() < deadline, f"{jid} never ran\n{_log_tails(sec.pool)}"
            time.sleep(0.2)
        private = sec.admin("cm", "collector", "QUERY", type="Machine", private=True)["ads"]
        # every slot updated again while the capture runs: the startds' updates with the new ClaimId
        heard = time.time()
        deadline = time.monotonic() + 20
        while not all(a.get("LastHeardFrom", 0) > heard for a in
                      sec.admin("cm", "collector", "QUERY", type="Machine", projection=["LastHeardFrom"])["ads"]):
            assert time.monotonic() < deadline, "the startds sent no update while the capture ran"
            time.sleep(0.2)
    finally:
        stop.touch()
        cap.wait(timeout=10)
    sec["submit"].roost("rm", jid)  # its slot back, for the tests after this one
    wire = out.read_bytes()
    claim_ids = [a["ClaimId"] for a in private if isinstance(a.get("ClaimId"), str)]
    assert len(claim_ids) >= 3, private
    assert b'"cmd":"STARTTLS"' in wire  # the capture sees the pool's connections being made
    for cid in claim_ids:
        secret = cid.rsplit("#", 1)[-1].encode()
        assert secret not in wire, f"claim id {cid} crossed the LAN in clear"
    assert b'"ClaimId"' not in wire and b"REQUEST_CLAIM" not in wire and b"ACTIVATE_CLAIM" not in wire
    for token in sec.tokens.values():
        assert token.rsplit(".", 1)[-1].encode() not in wire  # no token signature either

    # plain TCP to a daemon of another host: refused in one line, before any command runs
    coll, startd = sec.address("cm", "collector"), sec.address("exec1", "startd")
    got = sec.calls("rogue", [(coll, None, [("QUERY", {"type": "Machine"})], "plain"),
                              (startd, sec.tokens["root"], [("DRAIN", {})], "plain")])
    assert got[0][0]["code"] == "ENCRYPTION_REQUIRED" and "STARTTLS" in got[0][0]["error"], got[0]
    assert got[1][0]["code"] == "AUTH_FAILED" and "only TLS" in got[1][0]["error"], got[1]
    assert sec.slots(), "the daemons answer others after that"


# -- (f) KERBEROS, with a real MIT KDC on the central manager ------------------------------

def test_kerberos_method_with_a_kdc_on_the_central_manager(sec: SecPool) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "net"))
    from kdc import KDC, REALM
    from kdc import unavailable as no_kdc

    reason = no_kdc()
    if reason is not None:
        pytest.skip(reason)
    cm, submit2, exec1 = sec["cm"], sec["submit2"], sec["exec1"]
    kdc = KDC(host=cm.address, prefix=cm.host.argv([])).start()
    try:
        kdc.add_user("alice", "alice-pw")
        keytab = kdc.dir / "daemons.keytab"
        service = kdc.add_service("condor/pool", keytab)
        (kdc.dir / "certmap").write_text(f"KERBEROS /^([a-z]+)@{REALM.replace('.', '[.]')}$/ \\1@{UID_DOMAIN}\n")
        with (exec1.home / "roost_config").open("a") as f:
            f.write(f"\nSEC_DEFAULT_AUTHENTICATION_METHODS = FS, IDTOKENS, SSL, KERBEROS\n"
                    f"KERBEROS_SERVER_KEYTAB = {keytab}\nCERTIFICATE_MAPFILE = {kdc.dir / 'certmap'}\n")
        exec1.roost("reconfig")
        ccache = kdc.dir / "alice.cc"
        kdc.kinit("alice", "alice-pw", ccache, prefix=submit2.host.argv([]))  # asked from submit2

        startd = sec.address("exec1", "startd")
        env = {**kdc.env, "KRB5CCNAME": f"FILE:{ccache}"}
        kerberos = {"methods": ["KERBEROS"], "kerberos_principal": service, "env": env}
        nobody = {**kerberos, "env": {**env, "KRB5CCNAME": f"FILE:{kdc.dir / 'none.cc'}"}}
        got = sec.calls("submit2", [
            (startd, None, [("DRAIN", {"reason": "alice"})], kerberos),
            (startd, None, [("DRAIN", {})], nobody),
            (sec.address("cm", "collector"), None, [("QUERY", {"type": "Collector"})], kerberos),
        ])
        # known as alice (the map file), over TLS from another host; not an administrator
        assert _denied(got[0][0]) and f"refused to alice@{UID_DOMAIN}" in got[0][0]["error"], got[0]
        assert got[1][0]["code"] == "AUTH_FAILED" and "No Kerberos credentials" in got[1][0]["error"], got[1]
        # the collector was not told to take Kerberos: it says so, in one line
        assert got[2][0]["code"] == "AUTH_FAILED" and "takes no Kerberos" in got[2][0]["error"], got[2]
    finally:
        kdc.stop()


# -- (f) the SSL method with the pool's own CA (last: it reconfigures the pool) ----------

def test_ssl_method_with_a_pool_ca_and_a_map_file(sec: SecPool, running: str) -> None:
    cm = sec["cm"]
    ca = cm.home / "ssl" / "ca"
    cm.roost("ca", "create", "-dir", str(ca))
    certs = sec.pool.net.dir / "certs"
    certs.mkdir()
    certs.chmod(0o755)

    def issue(out: str, *args: str) -> tuple[str, str]:
        cm.roost("ca", "issue", "-dir", str(ca), "-out", str(certs / out), *args)
        return str(certs / f"{out}.crt"), str(certs / f"{out}.key")

    mapfile = certs / "certmap"
    mapfile.write_text(
        "# users by their certificates' common names; the daemons' hosts are condor\n"
        f'SSL "/O={UID_DOMAIN}/CN=alice" alice@{UID_DOMAIN}\n'
        f"SSL /^\\/O={UID_DOMAIN}\\/CN=(root|carol)$/ \\1@{UID_DOMAIN}\n"
    )
    hosts = ("cm", "submit", "submit2", "exec1")
    # as an administrator would: first every host gets its certificate, then every host
    # checks the others' against the CA (the other way round, a host would refuse the
    # self-signed certificates its neighbours still show)
    for name in hosts:
        h = sec[name]
        crt, key = issue(name, "-host", name, "-ip", h.address)
        with (h.home / "roost_config").open("a") as f:
            f.write(f"\nAUTH_SSL_SERVER_CERTFILE = {crt}\nAUTH_SSL_SERVER_KEYFILE = {key}\n"
                    f"AUTH_SSL_SERVER_CAFILE = {ca / 'ca.crt'}\nCERTIFICATE_MAPFILE = {mapfile}\n")
        h.roost("reconfig")
    for name in hosts:
        with (sec[name].home / "roost_config").open("a") as f:
            f.write(f"AUTH_SSL_CLIENT_CAFILE = {ca / 'ca.crt'}\n")
        sec[name].roost("reconfig")
    alice, root, mallory = issue("alice", "-user", "alice", "-org", UID_DOMAIN), \
        issue("root", "-user", "root", "-org", UID_DOMAIN), issue("mallory", "-user", "mallory", "-org", UID_DOMAIN)
    other_ca = sec.pool.net.dir / "other-ca"
    cm.roost("ca", "create", "-dir", str(other_ca))
    cm.roost("ca", "issue", "-dir", str(other_ca), "-out", str(certs / "fake-root"), "-user", "root", "-org", UID_DOMAIN)
    fake = (str(certs / "fake-root.crt"), str(certs / "fake-root.key"))

    def opts(cert: tuple[str, str] | None, **kw: Any) -> dict[str, Any]:
        o: dict[str, Any] = {"cafile": str(ca / "ca.crt"), "methods": ["SSL"], **kw}
        if cert:
            o["certfile"], o["keyfile"] = cert
        return o

    startd = sec.address("exec1", "startd")
    got = sec.calls("submit2", [
        (startd, None, [("DRAIN", {"reason": "alice"})], opts(alice)),
        (startd, None, [("DRAIN", {"reason": "root"}), ("CANCEL_DRAIN", {})], opts(root)),
        (startd, None, [("DRAIN", {})], opts(fake)),
        (startd, None, [("DRAIN", {})], opts(mallory)),
        # the daemon's certificate checked against the pool's CA: one of another CA is not it
        (startd, None, [("QUERY", {})], opts(None, cafile=str(other_ca / "ca.crt"))),
    ])
    assert _denied(got[0][0]) and f"alice@{UID_DOMAIN}" in got[0][0]["error"], got[0]  # known, not an admin
    assert all(a["ok"] for a in got[1]), got[1]  # root's certificate: the administrator
    assert got[2][0]["code"] == "AUTH_FAILED" and "did not accept our certificate" in got[2][0]["error"], got[2]
    assert got[3][0]["code"] == "AUTH_FAILED" and "no mapping" in got[3][0]["error"], got[3]
    assert got[4][0]["code"] == "AUTH_FAILED" and "does not verify" in got[4][0]["error"], got[4]

    # the pool works on its new certificates: a job from submit runs on exec1
    submit = sec["submit"]
    done = submit.roost("submit", "job.sub", cwd=submit.host.dir / "work")
    jid = re.search(r"submitted to cluster (\d+)", done.stdout).group(1) + ".0"  # type: ignore[union-attr]
    deadline = time.monotonic() + 30
    while sec.job_status(jid) != 2:
        assert time.monotonic() < deadline, f"{jid} never ran\n{_log_tails(sec.pool)}"
        time.sleep(0.2)
    submit.roost("rm", jid)
