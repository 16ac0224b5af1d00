"""Container, docker and java universe jobs through a real pool.

No image registry is reachable, so the image is built here from scratch: a tarball
holding a static busybox (Debian's busybox-static), imported with ``podman import``.
The image has no python3, which tells a job that ran inside it from one that ran on
the host. Tests skip, saying why, where podman cannot run a container or there is no
JDK.
"""

from __future__ import annotations

import os
import pwd
import shutil
import struct
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from poolkit import PoolHandle, start_pool, stop_pool, wait_until

from roost.daemons.startd import container

IMAGE = "localhost/roost-test-busybox:1"
BUSYBOX = ("/bin/busybox", "/usr/bin/busybox")
APPLETS = ("sh", "cat", "echo", "id", "pwd", "sleep", "ls", "test")


def _static(path: str) -> bool:
    """An ELF executable without an interpreter (PT_INTERP): runs in an empty image."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2:
                return False
            phoff, = struct.unpack_from("<Q", head, 32)
            phentsize, phnum = struct.unpack_from("<HH", head, 54)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError:
        return False
    return all(struct.unpack_from("<I", table, i * phentsize)[0] != 3 for i in range(phnum))


@pytest.fixture(scope="module")
def runtime() -> container.Runtime:
    rt, why = container.probe()
    if rt is None:
        pytest.skip(f"no container runtime runs containers here: {why}")
    if rt.kind != "podman":
        pytest.skip("the test image is built with podman import")
    busybox = next((b for b in BUSYBOX if _static(b)), None)
    if busybox is None:
        pytest.skip("no static busybox to build the test image from (Debian: apt-get install busybox-static)")
    with tempfile.TemporaryDirectory() as tmp:
        tar = os.path.join(tmp, "rootfs.tar")
        with tarfile.open(tar, "w") as t:
            t.add(busybox, "bin/busybox")
            for name in APPLETS:
                link = tarfile.TarInfo(f"bin/{name}")
                link.type, link.linkname = tarfile.SYMTYPE, "busybox"
                t.addfile(link)
            tmpdir = tarfile.TarInfo("tmp")
            tmpdir.type, tmpdir.mode = tarfile.DIRTYPE, 0o1777
            t.addfile(tmpdir)
        got = subprocess.run([rt.path, *rt.options, "import", "--change", "ENV PATH=/bin", tar, IMAGE],
                             capture_output=True, text=True, timeout=120)
        assert got.returncode == 0, got.stderr
    return rt


@pytest.fixture(scope="module")
def upool() -> Iterator[PoolHandle]:
    home = Path(tempfile.mkdtemp(prefix="roost-itu-", dir="/tmp"))
    p = start_pool(home, "STARTD_DETECT_CONTAINERS = True\nSTARTD_DETECT_JAVA = True\n")
    try:
        yield p
    finally:
        stop_pool(p)


def _machine(pool: PoolHandle, attr: str) -> dict:
    """A slot ad once the startd's probes have put ``attr`` in it."""
    got: list[dict] = []

    def seen() -> bool:
        c = pool.collector()
        try:
            got[:] = c.query_objs("Machine", constraint=f"{attr} =?= true")
        finally:
            c.close()
        return bool(got)

    wait_until(seen, 60, f"a slot advertising {attr}")
    return got[0]


def _containers(rt: container.Runtime) -> list[str]:
    out = subprocess.run([rt.path, *rt.options, "ps", "--all", "--filter", f"label={container.LABEL}",
                          "--format", "{{.Names}}"], capture_output=True, text=True, timeout=60).stdout
    return out.split()


def test_a_container_job_runs_inside_its_image_with_its_files(
        runtime: container.Runtime, upool: PoolHandle, jobdir: Path) -> None:
    ad = _machine(upool, "HasContainer")
    assert ad["HasDocker"] is True and ad["HasDockerURL"] is True and ad["DockerVersion"]
    script = jobdir / "job.sh"
    script.write_text("#!/bin/sh\nid -u\npwd\necho \"scratch=$_CONDOR_SCRATCH_DIR\"\ncat in.txt\n"
                      "test -e /usr/bin/python3 && echo host || echo image\necho made > out.txt\n"
                      "echo oops >&2\nexit 3\n")
    script.chmod(0o755)
    (jobdir / "in.txt").write_text("input\n")
    r = upool.submit(f"universe = container\ncontainer_image = docker://{IMAGE}\nexecutable = job.sh\n"
                     "transfer_input_files = in.txt\noutput = job.out\nerror = job.err\nlog = job.log\n"
                     "request_memory = 64\nqueue\n", jobdir)
    upool.wait(r.job_ids(), timeout=120)
    job = upool.job(f"{r.cluster}.0")
    assert job is not None and job["ExitCode"] == 3, job
    lines = (jobdir / "job.out").read_text().splitlines()
    assert lines[0] == str(pwd.getpwnam("nobody").pw_uid)  # the job's user, as a vanilla job
    assert lines[1] == lines[2].removeprefix("scratch=") and "/execute/" in lines[1]  # run in its sandbox
    assert lines[3:] == ["input", "image"]
    assert (jobdir / "job.err").read_text() == "oops\n"
    assert (jobdir / "out.txt").read_text() == "made\n"
    assert "Requirements" in job and "HasDockerURL" in str(job["Requirements"])


def test_a_directory_image_runs_as_the_container_root(
        runtime: container.Runtime, upool: PoolHandle, jobdir: Path) -> None:
    _machine(upool, "HasSandboxImage")
    root = jobdir / "rootfs"
    (root / "bin").mkdir(parents=True)
    busybox = next(b for b in BUSYBOX if _static(b))
    shutil.copy(busybox, root / "bin" / "busybox")
    for name in APPLETS:
        (root / "bin" / name).symlink_to("busybox")
    r = upool.submit(f"universe = container\ncontainer_image = {root}\nexecutable = /bin/echo\n"
                     "transfer_executable = false\narguments = from a directory\noutput = dir.out\nqueue\n", jobdir)
    upool.wait(r.job_ids(), timeout=120)
    assert (jobdir / "dir.out").read_text() == "from a directory\n"
    assert sorted(os.listdir(root)) == ["bin"]  # the runtime (root) made nothing in it: an overlay
    job = upool.job(f"{r.cluster}.0")
    assert job is not None and job["WantSandboxImage"] is True and "HasSandboxImage" in str(job["Requirements"])


def test_an_image_that_cannot_be_pulled_holds_the_job_saying_why(
        runtime: container.Runtime, upool: PoolHandle, jobdir: Path) -> None:
    _machine(upool, "HasDocker")
    r = upool.submit("universe = docker\ndocker_image = localhost/roost-no-such-image:1\n"
                     "executable = /bin/true\ntransfer_executable = false\nqueue\n", jobdir)
    jid = f"{r.cluster}.0"
    held = upool.wait_for(jid, lambda j: j.get("JobStatus") == 5, timeout=120, what="held")
    assert "cannot pull image localhost/roost-no-such-image:1" in held["HoldReason"], held["HoldReason"]
    upool.roost("rm", jid, check=True)


def test_directories_the_job_user_cannot_reach_are_not_mounted(
        runtime: container.Runtime, upool: PoolHandle, jobdir: Path) -> None:
    """The runtime's client is root: an Iwd (no file transfer) or an image directory
    below a directory the job's user (nobody) cannot search holds the job instead."""
    _machine(upool, "HasSandboxImage")
    private = jobdir / "private"
    (private / "data").mkdir(parents=True)
    (private / "data" / "secret.txt").write_text("secret\n")
    private.chmod(0o700)
    (private / "data").chmod(0o755)
    (jobdir / "out").mkdir(mode=0o777)
    (jobdir / "out").chmod(0o777)
    r = upool.submit(f"universe = docker\ndocker_image = {IMAGE}\nexecutable = /bin/cat\n"
                     "transfer_executable = false\nshould_transfer_files = no\narguments = secret.txt\n"
                     f"initialdir = {private}/data\noutput = {jobdir}/out/iwd.out\nqueue\n", jobdir)
    jid = f"{r.cluster}.0"
    held = upool.wait_for(jid, lambda j: j.get("JobStatus") == 5, timeout=120, what="held")
    # refused before anything is opened or run: the job's user could not enter its Iwd (14)
    assert "cannot enter the job's Iwd" in held["HoldReason"], held["HoldReason"]
    assert held["HoldReasonCode"] == 14
    out = jobdir / "out" / "iwd.out"
    assert not out.exists() or out.read_text() == ""
    upool.roost("rm", jid, check=True)
    r = upool.submit(f"universe = container\ncontainer_image = {private}/data\nexecutable = /bin/true\n"
                     "transfer_executable = false\nqueue\n", jobdir)
    jid = f"{r.cluster}.0"
    held = upool.wait_for(jid, lambda j: j.get("JobStatus") == 5, timeout=120, what="held")
    assert f"container_image {private}/data: not a directory the job's user can reach" in held["HoldReason"]
    upool.roost("rm", jid, check=True)


def test_a_docker_job_runs_a_program_of_its_image(
        runtime: container.Runtime, upool: PoolHandle, jobdir: Path) -> None:
    _machine(upool, "HasDocker")
    r = upool.submit(f"universe = docker\ndocker_image = {IMAGE}\nexecutable = /bin/echo\n"
                     "transfer_executable = false\narguments = from the image\noutput = echo.out\n"
                     "docker_network_type = none\nqueue\n", jobdir)
    upool.wait(r.job_ids(), timeout=120)
    assert (jobdir / "echo.out").read_text() == "from the image\n"
    job = upool.job(f"{r.cluster}.0")
    assert job is not None and job["ExitCode"] == 0


def test_removing_a_container_job_kills_its_container(
        runtime: container.Runtime, upool: PoolHandle, jobdir: Path) -> None:
    _machine(upool, "HasContainer")
    before = set(_containers(runtime))
    r = upool.submit(f"universe = container\ncontainer_image = docker://{IMAGE}\nexecutable = /bin/sleep\n"
                     "transfer_executable = false\narguments = 600\njob_max_vacate_time = 1\nqueue\n", jobdir)
    jid = f"{r.cluster}.0"
    upool.wait_for(jid, lambda j: j.get("JobStatus") == 2, timeout=60, what="running")
    wait_until(lambda: set(_containers(runtime)) - before, 30, "the job's container")
    # its usage is the container's (a busybox sleep, ~1 MiB), not the runtime client's (~40 MiB)
    running = upool.wait_for(jid, lambda j: j.get("ResidentSetSize", 0) > 0, timeout=30, what="usage")
    assert running["ResidentSetSize"] < 16 * 1024, running["ResidentSetSize"]
    started = time.monotonic()
    upool.roost("rm", jid, check=True)
    wait_until(lambda: not set(_containers(runtime)) - before, 60, "the container removed")
    assert time.monotonic() - started < 60
    upool.wait(jid, timeout=60)
    job = upool.job(jid)
    assert job is not None and job["JobStatus"] == 3


def test_holding_a_container_job_that_ignores_its_signal_removes_its_container(
        runtime: container.Runtime, upool: PoolHandle, jobdir: Path) -> None:
    _machine(upool, "HasContainer")
    script = jobdir / "stubborn.sh"
    script.write_text("#!/bin/sh\ntrap '' TERM\nwhile true; do sleep 1; done\n")
    script.chmod(0o755)
    before = set(_containers(runtime))
    r = upool.submit(f"universe = docker\ndocker_image = {IMAGE}\nexecutable = stubborn.sh\n"
                     "job_max_vacate_time = 1\nqueue\n", jobdir)
    jid = f"{r.cluster}.0"
    upool.wait_for(jid, lambda j: j.get("JobStatus") == 2, timeout=60, what="running")
    wait_until(lambda: set(_containers(runtime)) - before, 30, "the job's container")
    upool.roost("hold", jid, check=True)
    upool.wait_for(jid, lambda j: j.get("JobStatus") == 5, timeout=60, what="held")
    # SIGTERM is ignored inside: the hard kill removes the container by name
    wait_until(lambda: not set(_containers(runtime)) - before, 60, "the container removed")
    upool.roost("rm", jid, check=True)


HELLO = """
public class Hello {
    public static void main(String[] args) {
        System.out.println(Greeter.greet(String.join(" ", args)) + " " + System.getProperty("roost.test"));
        System.exit(4);
    }
}
"""
GREETER = "public class Greeter { static String greet(String who) { return \"hello \" + who; } }\n"


def test_a_java_job_runs_its_class_with_its_jar(upool: PoolHandle, jobdir: Path) -> None:
    javac, jar = shutil.which("javac"), shutil.which("jar")
    if javac is None or jar is None or shutil.which("java") is None:
        pytest.skip("no JDK here (Debian: apt-get install default-jdk-headless)")
    src = jobdir / "src"
    src.mkdir()
    (src / "Greeter.java").write_text(GREETER)
    (src / "Hello.java").write_text(HELLO)
    subprocess.run([javac, "-d", str(src), str(src / "Greeter.java"), str(src / "Hello.java")], check=True,
                   timeout=120)
    subprocess.run([jar, "cf", str(jobdir / "greet.jar"), "-C", str(src), "Greeter.class"], check=True, timeout=60)
    shutil.copy(src / "Hello.class", jobdir / "Hello.class")
    ad = _machine(upool, "HasJava")
    assert ad["JavaVersion"] and ad["JavaSpecificationVersion"] and ad["JavaVendor"]
    r = upool.submit("universe = java\nexecutable = Hello.class\narguments = Hello big world\n"
                     "jar_files = greet.jar\njava_vm_args = -Droost.test=vmarg -Xmx64m\n"
                     "output = java.out\nerror = java.err\nqueue\n", jobdir)
    upool.wait(r.job_ids(), timeout=120)
    assert (jobdir / "java.out").read_text() == "hello big world vmarg\n", (jobdir / "java.err").read_text()
    job = upool.job(f"{r.cluster}.0")
    assert job is not None and job["ExitCode"] == 4 and job["Cmd"] == "java"
