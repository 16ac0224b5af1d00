"""A real startd process driven through the claim protocol by a test-side schedd peer."""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import signal

import pytest

from daemon_logs import log_mark, wait_log
from roost.daemons.startd.leftovers import read_records
from roost.net.errors import RemoteError

from .startd_peer import Job, job_ad, pool, slot_ads

SCRIPT = b"""#!/bin/sh
read line < data.txt
echo "got: $line"
echo "to stderr" >&2
id -u > uid.txt
grep -E '^(Uid|Gid|Groups):' /proc/self/status > ids.txt
echo "$_CONDOR_SLOT $FOO" > env.txt
printf '%s|' "$@" > args.txt
mkdir -p outdir && echo deep > outdir/deep.txt
ln -s /etc/shadow leak.txt; ln -s /etc/shadow outdir/leak.txt
exit 3
"""

SUBMIT = """\
executable = /submit/dir/job.sh
arguments = "one 'two words'"
transfer_input_files = data.txt
output = job.out
error = job.err
environment = "FOO=bar"
should_transfer_files = YES
request_memory = 200
queue
"""


def run(coro):
    return asyncio.run(coro)


async def claim(peer, client, ad, lease=60.0):
    pslot = await peer.wait_for(lambda: slot_ads(peer).get("slot1"))
    private = peer.private[pslot["Name"]]
    return await client.call(
        "REQUEST_CLAIM", claim_id=private["ClaimId"], job_ad=ad,
        schedd_address=peer.address, lease=lease,
    )


def expected_uid() -> int:
    if os.geteuid() != 0:
        return os.geteuid()
    return pwd.getpwnam("nobody").pw_uid


def test_job_runs_end_to_end_and_claim_is_returned():
    async def main():
        async with pool() as (peer, startd, client):
            ad = job_ad(SUBMIT, owner="no-such-user-here")
            peer.jobs["1.0"] = Job(inputs=[("job.sh", SCRIPT, 0o644), ("data.txt", b"hello input\n", 0o644)])
            got = await claim(peer, client, ad)
            assert got["slot_ad"]["Name"].startswith("slot1_1@")
            assert got["slot_ad"]["Cpus"] == 1 and got["slot_ad"]["Memory"] == 256
            await client.call("ACTIVATE_CLAIM", claim_id=got["claim_id"], job_ad=ad)
            running = await peer.next_update()
            assert running["state"] == "running" and isinstance(running["pid"], int)
            assert running["claim_id"] == got["claim_id"] and running["job"] == "1.0"
            done = await peer.next_update()
            assert done["state"] == "exited" and done["exit_code"] == 3, done
            assert done["usage"]["RemoteUserCpu"] >= 0 and "RemoteSysCpu" in done["usage"]
            out = peer.jobs["1.0"].outputs
            assert out["job.out"] == b"got: hello input\n"
            assert out["job.err"] == b"to stderr\n"
            assert int(out["uid.txt"]) == expected_uid()
            ids = dict(line.split(":", 1) for line in out["ids.txt"].decode().splitlines())
            assert set(ids["Uid"].split()) == {str(expected_uid())}  # real, effective, saved, fs
            if os.geteuid() == 0:
                assert "0" not in ids["Gid"].split() and ids["Groups"].split() == []
            assert out["env.txt"] == b"slot1_1 bar\n"
            assert out["args.txt"] == b"one|two words|"
            assert out["outdir/deep.txt"] == b"deep\n"
            assert "data.txt" not in out and "job.sh" not in out and ".job.ad" not in out
            assert "leak.txt" not in out and "outdir/leak.txt" not in out  # links are not followed
            # the partitionable slot shows what is left; the dynamic slot is advertised
            ads = await peer.wait_for(
                lambda: (a := slot_ads(peer)).get("slot1_1", {}).get("Activity") == "Idle" and a
            )
            assert ads["slot1"]["Cpus"] == 3 and ads["slot1"]["Memory"] == 4096 - 256
            assert ads["slot1_1"]["State"] == "Claimed" and ads["slot1_1"]["SlotType"] == "Dynamic"
            assert "ClaimId" not in ads["slot1_1"]
            await _eventually(lambda: not [d for d in os.listdir(startd.home / "execute") if d.startswith("dir_")])
            # release: the dynamic slot goes away and its resources come home
            before = peer.reschedules
            await client.call("RELEASE_CLAIM", claim_id=got["claim_id"])
            await peer.wait_for(lambda: slot_ads(peer)["slot1"]["Cpus"] == 4)
            assert "slot1_1" not in slot_ads(peer)
            await peer.wait_for(lambda: peer.reschedules > before)
            with pytest.raises(RemoteError) as e:
                await client.call("KEEPALIVE", claim_id=got["claim_id"])
            assert e.value.code == "NOT_FOUND"

    run(main())


def test_signals_failures_and_claim_reuse():
    async def main():
        async with pool() as (peer, startd, client):
            killer = job_ad("executable = /bin/sh\narguments = \"-c 'kill -9 $$'\"\n"
                            "transfer_executable = false\nqueue\n")
            got = await claim(peer, client, killer)
            cid = got["claim_id"]
            await client.call("ACTIVATE_CLAIM", claim_id=cid, job_ad=killer)
            running = await peer.next_update()
            assert running["state"] == "running", running
            done = await peer.next_update()
            assert done["state"] == "exited" and done["exit_signal"] == 9 and "exit_code" not in done
            # the same claim runs the next job: a missing executable is a clear failure
            missing = job_ad("executable = /no/such/program\ntransfer_executable = false\nqueue\n", cluster=2)
            await peer.wait_for(lambda: slot_ads(peer).get("slot1_1", {}).get("Activity") == "Idle")
            await client.call("ACTIVATE_CLAIM", claim_id=cid, job_ad=missing)
            failed = await peer.next_update()
            assert failed["state"] == "failed" and failed["job"] == "2.0"
            assert failed["error"] == "Failed to execute '/no/such/program': (errno=2: 'No such file or directory')"
            # no input files on the schedd side: the transfer failure is reported too
            nofiles = job_ad("executable = /submit/x.sh\nqueue\n", cluster=3)
            peer.refuse_inputs.add("3.0")
            await peer.wait_for(lambda: slot_ads(peer).get("slot1_1", {}).get("Activity") == "Idle")
            await client.call("ACTIVATE_CLAIM", claim_id=cid, job_ad=nofiles)
            failed = await peer.next_update()
            assert failed["state"] == "failed" and "input transfer failed" in failed["error"]

    run(main())


def test_refusals_and_malformed_requests_leave_the_daemon_up():
    async def main():
        async with pool('START = TARGET.Owner != "mallory"\n') as (peer, startd, client):
            with pytest.raises(RemoteError) as e:
                await client.call("KEEPALIVE", claim_id="no-such-claim")
            assert e.value.code == "NOT_FOUND"
            mallory = job_ad("executable = /bin/true\nqueue\n", owner="mallory")
            with pytest.raises(RemoteError) as e:
                await claim(peer, client, mallory)
            assert e.value.code == "DENIED" and "START" in e.value.message
            greedy = job_ad("executable = /bin/true\nrequest_cpus = 64\nqueue\n")
            with pytest.raises(RemoteError) as e:
                await claim(peer, client, greedy)
            assert e.value.code == "DENIED"
            for bad in [
                {"cmd": "REQUEST_CLAIM"},
                {"cmd": "REQUEST_CLAIM", "claim_id": 7, "job_ad": {}},
                {"cmd": "ACTIVATE_CLAIM", "claim_id": "x", "job_ad": "nope"},
                {"cmd": "RELEASE_CLAIM", "claim_id": "x"},
                {"cmd": "NO_SUCH_COMMAND"},
            ]:
                with pytest.raises(RemoteError):
                    await client.call(bad.pop("cmd"), **bad)
            # a bad expression inside a job ad, and raw garbage on a fresh connection
            pslot = slot_ads(peer)["slot1"]
            cid = peer.private[pslot["Name"]]["ClaimId"]
            with pytest.raises(RemoteError) as e:
                await client.call("REQUEST_CLAIM", claim_id=cid, schedd_address=peer.address,
                                  job_ad={"Requirements": "/Expr(((()/"})
            assert e.value.code == "BAD_REQUEST"
            host, port = startd.address.rsplit(":", 1)
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(b"\x00\x00\x00\x05{{{{{")
            await writer.drain()
            await reader.read(1000)
            writer.close()
            # still serving, slot untouched
            ok = job_ad("executable = /bin/true\ntransfer_executable = false\nqueue\n")
            got = await claim(peer, client, ok)
            assert got["claim_id"] != cid

    run(main())


def test_lease_expiry_kills_the_job_and_frees_the_slot():
    async def main():
        async with pool() as (peer, startd, client):
            sleeper = job_ad("executable = /bin/sleep\narguments = 60\ntransfer_executable = false\nqueue\n")
            got = await claim(peer, client, sleeper, lease=1.0)
            await client.call("ACTIVATE_CLAIM", claim_id=got["claim_id"], job_ad=sleeper)
            running = await peer.next_update()
            pid = running["pid"]
            for _ in range(8):  # keep-alives hold the claim well past its lease
                await asyncio.sleep(0.25)
                assert (await client.call("KEEPALIVE", claim_id=got["claim_id"]))["state"] == "Busy"
            assert os.path.exists(f"/proc/{pid}") and "slot1_1" in slot_ads(peer)
            await peer.wait_for(lambda: "slot1_1" not in slot_ads(peer) and slot_ads(peer)["slot1"]["Cpus"] == 4)
            await _gone(pid)
            with pytest.raises(RemoteError) as e:
                await client.call("KEEPALIVE", claim_id=got["claim_id"])
            assert e.value.code == "NOT_FOUND"

    run(main())


async def _gone(pid: int, timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while True:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().split(")")[-1].split()[0] == "Z":
                        return
            except FileNotFoundError:
                return
            await asyncio.sleep(0.02)


def test_deactivate_graceful_then_hard():
    async def main():
        async with pool() as (peer, startd, client):
            # a job that ignores SIGTERM: graceful vacate waits JobMaxVacateTime, then SIGKILLs
            peer.jobs["1.0"] = Job(inputs=[("stubborn.sh", b"#!/bin/sh\ntrap '' TERM\nsleep 60 &\nwait\n", 0o755)])
            stubborn = job_ad("executable = stubborn.sh\n+JobMaxVacateTime = 1\nqueue\n")
            got = await claim(peer, client, stubborn)
            cid = got["claim_id"]
            await client.call("ACTIVATE_CLAIM", claim_id=cid, job_ad=stubborn)
            pid = (await peer.next_update())["pid"]
            result = await client.call("DEACTIVATE_CLAIM", claim_id=cid, graceful=True)
            assert result["state"] == "vacated" and result["job"] == "1.0"
            await _gone(pid)
            vacated = await peer.next_update()
            assert vacated["state"] == "vacated"
            # the claim survives a vacate and runs the next job; a fast vacate kills at once
            sleeper = job_ad("executable = /bin/sleep\narguments = 60\ntransfer_executable = false\nqueue\n", 2)
            await peer.wait_for(lambda: slot_ads(peer).get("slot1_1", {}).get("Activity") == "Idle")
            await client.call("ACTIVATE_CLAIM", claim_id=cid, job_ad=sleeper)
            pid = (await peer.next_update())["pid"]
            result = await client.call("DEACTIVATE_CLAIM", claim_id=cid, graceful=False)
            assert result["state"] == "vacated"
            await _gone(pid)
            await client.call("RELEASE_CLAIM", claim_id=cid)

    run(main())


def test_report_waits_for_the_schedd_to_reconnect():
    async def main():
        async with pool() as (peer, startd, client):
            peer.jobs["1.0"] = Job(inputs=[("job.sh", b"#!/bin/sh\necho done > result.txt\n", 0o755)])
            ad = job_ad("executable = job.sh\nshould_transfer_files = YES\nqueue\n")
            got = await claim(peer, client, ad)
            cid = got["claim_id"]
            peer.refuse_updates = True  # the schedd "restarted": it knows no job yet
            mark = log_mark(startd.home / "log" / "StartLog")
            await client.call("ACTIVATE_CLAIM", claim_id=cid, job_ad=ad)
            await asyncio.to_thread(wait_log, startd.home / "log" / "StartLog",
                                    r"job 1\.0: schedd does not know the job \(yet\)", mark)
            assert peer.updates.empty()
            peer.refuse_updates = False
            answer = await client.call("RECONNECT", claim_id=cid, schedd_address=peer.address)
            assert answer["job"] == "1.0"
            states = [(await peer.next_update())["state"]]
            while states[-1] != "exited":
                states.append((await peer.next_update())["state"])
            assert states[-1] == "exited"
            assert peer.jobs["1.0"].outputs["result.txt"] == b"done\n"

    run(main())


def test_static_slots_from_num_slots_and_job_in_iwd():
    async def main():
        async with pool("NUM_SLOTS = 2\n") as (peer, startd, client):
            ads = await peer.wait_for(lambda: len(slot_ads(peer)) == 2 and slot_ads(peer))
            assert {a["SlotType"] for a in ads.values()} == {"Static"}
            assert ads["slot1"]["Cpus"] == 2 and ads["slot2"]["Memory"] == 2048
            iwd = startd.home / "iwd"
            iwd.mkdir()
            os.chmod(iwd, 0o777)
            ad = job_ad("executable = /bin/sh\narguments = \"-c 'pwd; echo $_CONDOR_SCRATCH_DIR'\"\n"
                        "output = out.txt\nshould_transfer_files = NO\n"
                        f"+FileSystemDomain = \"{ads['slot2']['FileSystemDomain']}\"\nqueue\n", iwd=str(iwd))
            cid = peer.private[ads["slot2"]["Name"]]["ClaimId"]
            got = await client.call("REQUEST_CLAIM", claim_id=cid, job_ad=ad,
                                    schedd_address=peer.address, lease=30)
            assert got["claim_id"] == cid and got["slot_ad"]["Name"].startswith("slot2@")
            await client.call("ACTIVATE_CLAIM", claim_id=cid, job_ad=ad)
            await peer.next_update()
            done = await peer.next_update()
            assert done["exit_code"] == 0 and not peer.jobs.get("1.0", Job()).outputs
            cwd, scratch = (iwd / "out.txt").read_text().split()
            assert cwd == str(iwd) and scratch.startswith(str(startd.home / "execute" / "dir_"))
            await client.call("RELEASE_CLAIM", claim_id=cid)
            # a released static slot gets a new claim id: the old one is dead
            name = ads["slot2"]["Name"]
            await peer.wait_for(lambda: peer.private[name]["ClaimId"] != cid)
            assert peer.ads[name]["State"] == "Unclaimed"
            with pytest.raises(RemoteError):
                await client.call("ACTIVATE_CLAIM", claim_id=cid, job_ad=ad)

    run(main())


def test_restarted_startd_kills_leftover_jobs():
    """A job started without the launcher helper (no keeper to wait for it: a host
    without a compiler) cannot be adopted: the next startd kills it."""
    async def main():
        async with pool("STARTD_BUILD_LAUNCHER = False\n") as (peer, startd, client):
            sleeper = job_ad("executable = /bin/sh\narguments = \"-c 'sleep 60 & sleep 61'\"\n"
                             "transfer_executable = false\nqueue\n")
            got = await claim(peer, client, sleeper)
            await client.call("ACTIVATE_CLAIM", claim_id=got["claim_id"], job_ad=sleeper)
            pid = (await peer.next_update())["pid"]
            startd.kill()  # kill -9: the job's process group outlives it
            assert os.path.exists(f"/proc/{pid}")
            try:
                await client.close()
                await startd.start()
                await _gone(pid)
                await _eventually(lambda: not [d for d in os.listdir(startd.home / "execute") if d.startswith("dir_")])
                with pytest.raises(RemoteError) as e:
                    await startd.client().call("KEEPALIVE", claim_id=got["claim_id"])
                assert e.value.code == "NOT_FOUND"
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)

    run(main())


async def _eventually(pred, timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not pred():
            await asyncio.sleep(0.02)


def test_job_that_ended_while_its_schedd_was_unreachable_is_reported_after_reconnect():
    async def main():
        async with pool() as (peer, startd, client):
            pslot = await peer.wait_for(lambda: slot_ads(peer).get("slot1"))
            fsd = pslot["FileSystemDomain"]
            ad = job_ad("executable = /bin/sh\narguments = \"-c 'exit 7'\"\nshould_transfer_files = NO\n"
                        f"+FileSystemDomain = \"{fsd}\"\nqueue\n")
            got = await client.call("REQUEST_CLAIM", claim_id=peer.private[pslot["Name"]]["ClaimId"],
                                    job_ad=ad, schedd_address="127.0.0.1:1", lease=30)
            cid = got["claim_id"]
            # The claim's own ad (Claimed/Idle) went out at once; forget it, so that the
            # next Idle ad is the one sent after the job's processes were gone (the
            # Busy ad between may be folded into it).
            name = (await peer.wait_for(lambda: [n for n in peer.ads if n.startswith("slot1_1@")]))[0]
            del peer.ads[name]
            await client.call("ACTIVATE_CLAIM", claim_id=cid, job_ad=ad)
            await peer.wait_for(lambda: slot_ads(peer).get("slot1_1", {}).get("Activity") == "Idle")
            answer = await client.call("RECONNECT", claim_id=cid, schedd_address=peer.address)
            assert answer["job"] == "1.0" and answer["state"] == "exited" and answer["exit_code"] == 7
            update = await peer.next_update()
            while update["state"] == "running":
                update = await peer.next_update()
            assert update["state"] == "exited" and update["exit_code"] == 7 and update["job"] == "1.0"

    run(main())


def test_processes_that_leave_the_process_group_die_with_the_job_when_cgroups_work():
    async def main():
        async with pool() as (peer, startd, client):
            log = (startd.home / "log" / "StartLog").read_text()
            if "jobs run in cgroups" not in log:
                pytest.skip("no writable cgroup v2 here")
            peer.jobs["1.0"] = Job(inputs=[("escape.sh", b"#!/bin/sh\nsetsid sleep 61 &\necho $! > pid.txt\n", 0o755)])
            ad = job_ad("executable = escape.sh\nqueue\n")
            got = await claim(peer, client, ad)
            await client.call("ACTIVATE_CLAIM", claim_id=got["claim_id"], job_ad=ad)
            update = await peer.next_update()
            while update["state"] == "running":
                update = await peer.next_update()
            escaped = int(peer.jobs["1.0"].outputs["pid.txt"])
            await _gone(escaped)

    run(main())


def test_a_stopped_startd_kills_what_its_running_job_left_outside_the_process_group():
    """A startd stopped (SIGTERM) with a job running abandons it: the job and what it
    left outside its process group (setsid) die with its cgroup."""
    async def main():
        async with pool() as (peer, startd, client):
            if "jobs run in cgroups" not in (startd.home / "log" / "StartLog").read_text():
                pytest.skip("no writable cgroup v2 here")
            script = b"#!/bin/sh\nsetsid sleep 61 &\necho $! > pid.txt\nsleep 60\n"
            peer.jobs["1.0"] = Job(inputs=[("escape.sh", script, 0o755)])
            ad = job_ad("executable = escape.sh\nqueue\n")
            got = await claim(peer, client, ad)
            await client.call("ACTIVATE_CLAIM", claim_id=got["claim_id"], job_ad=ad)
            sandbox = await peer.wait_for(lambda: [p for p in (startd.home / "execute").glob("dir_*/pid.txt")
                                                   if p.read_text().strip()], timeout=30)
            escaped = int(sandbox[0].read_text())
            assert await startd.stop() is not None
            await _gone(escaped)

    run(main())


def test_a_restarted_startd_adopts_both_jobs_of_a_reused_claim():
    """A claim runs its next job while the first one's report still waits (the schedd
    refuses it for now); the startd is killed; the next one adopts both records: the
    first job reports, the second runs on to its end on the same claim."""
    if os.geteuid() != 0:
        pytest.skip("jobs outlive the startd under the launcher, built as root")

    async def main():
        async with pool() as (peer, startd, client):
            await asyncio.to_thread(wait_log, startd.home / "log" / "StartLog", "job launcher ready")
            peer.jobs["1.0"] = Job(inputs=[("job.sh", b"#!/bin/sh\necho one > result.txt\n", 0o755)])
            peer.jobs["1.1"] = Job(inputs=[("job.sh", b"#!/bin/sh\nsleep 3\necho two > result.txt\n", 0o755)])
            first = job_ad("executable = job.sh\nshould_transfer_files = YES\nqueue\n")
            second = {**first, "ProcId": 1}
            got = await claim(peer, client, first)
            cid = got["claim_id"]
            peer.refuse_updates = True  # the first job's final report waits
            await client.call("ACTIVATE_CLAIM", claim_id=cid, job_ad=first)
            for _ in range(100):  # the claim takes the next job once the first has exited
                try:
                    await client.call("ACTIVATE_CLAIM", claim_id=cid, job_ad=second)
                    break
                except RemoteError as e:
                    assert e.code == "DENIED", e
                    await asyncio.sleep(0.1)
            # past the second job's spawn: both records name a live (or ended) kept job,
            # which is what the next startd adopts (a loaded machine may take seconds)
            execute = str(startd.home / "execute")
            await peer.wait_for(lambda: len([r for r in read_records(execute) if r.adoptable()]) == 2, timeout=30)
            startd.kill()
            await startd.start()
            peer.refuse_updates = False
            ends: dict[str, dict] = {}
            while len(ends) < 2:
                u = await peer.next_update(timeout=30)
                if u["state"] in ("exited", "failed", "vacated"):
                    ends[u["job"]] = u
            assert ends["1.0"]["state"] == "exited" and ends["1.0"]["exit_code"] == 0, ends
            assert ends["1.1"]["state"] == "exited" and ends["1.1"]["exit_code"] == 0, ends
            assert peer.jobs["1.0"].outputs["result.txt"] == b"one\n"
            assert peer.jobs["1.1"].outputs["result.txt"] == b"two\n"
            assert "after job 1.0" in (startd.home / "log" / "StartLog").read_text()  # one claim, two records

    run(main())


@pytest.mark.parametrize("batch", [True, False], ids=["UPDATE_ADS", "older-collector"])
def test_periodic_round_refreshes_unchanged_slots(batch):
    """Every UPDATE_INTERVAL the startd's slots reach the collector again: ads that changed
    only in owner attributes as short notes (their idle times, loads and clock), a slot
    whose state changed whole; a collector without UPDATE_ADS gets whole ads."""
    async def go():
        config = "NUM_SLOTS = 2\nUPDATE_INTERVAL = 1\nPOLLING_INTERVAL = 0.2\nSTARTD_DETECT_CRIU = False\n"
        async with pool(config, batch=batch) as (peer, _, client):
            ads = await peer.wait_for(lambda: len(slot_ads(peer)) == 2 and slot_ads(peer))
            t0 = ads["slot1"]["MyCurrentTime"]
            if batch:
                await peer.wait_for(lambda: peer.refreshed >= 2, timeout=15)
            whole, notes = peer.ad_updates, peer.refreshed
            if batch:
                await peer.wait_for(lambda: peer.refreshed >= notes + 4, timeout=15)
                assert peer.ad_updates == whole  # nothing but owner attributes changed
            else:
                await peer.wait_for(lambda: peer.ad_updates >= whole + 4, timeout=15)
                assert peer.refreshed == 0
            await peer.wait_for(lambda: slot_ads(peer)["slot1"]["MyCurrentTime"] > t0, timeout=15)
            assert "KeyboardIdle" in slot_ads(peer)["slot1"]
            # a collector that lost its ads (restarted) answers the notes "missing": whole ads follow
            peer.ads.clear()
            back = await peer.wait_for(lambda: len(slot_ads(peer)) == 2 and slot_ads(peer), timeout=15)
            assert back["slot1"]["State"] == "Unclaimed" and "Requirements" in back["slot1"]
            await claim(peer, client, job_ad("executable = /bin/true\nqueue\n"))
            await peer.wait_for(lambda: any(a.get("State") == "Claimed" for a in slot_ads(peer).values()))
            assert peer.ad_updates > whole
    run(go())
