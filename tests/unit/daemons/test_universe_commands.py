"""The command lines the startd runs for container, docker and java jobs (pure functions)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from roost.classad import ClassAd
from roost.daemons.startd import container, javajob, plainjob
from roost.daemons.startd.jobcommand import (
    CommandError,
    Universes,
    command,
    execute_sides,
    side_for,
)
from roost.daemons.startd.jobspec import Identity, parse_job
from roost.daemons.userfiles import User

PODMAN = container.Runtime("podman", "/usr/bin/podman", "4.3.1", ("--runtime", "runc"),
                           ("--ulimit", "nofile=1024:1024", "--init"), ("lab",))
BOX = "/var/lib/roost/execute/dir_7_1"
ROOT = User(0, 0, frozenset({0}))
NOBODY = User(65534, 65534, frozenset({65534}))


def job(**attrs: object) -> ClassAd:
    ad = ClassAd()
    base: dict[str, object] = {"ClusterId": 3, "ProcId": 0, "Cmd": "/home/u/run.sh", "Arguments": "a 'b c'",
                               "Iwd": "/home/u", "ShouldTransferFiles": "YES", "Owner": "u", "JobUniverse": 5}
    base.update(attrs)
    for k, v in base.items():
        ad[k] = v
    return ad


def argv_of(ad: ClassAd, universes: Universes, **kw: object) -> list[str]:
    spec = parse_job(ad, "fs")
    ident = Identity(1000, 1000, "u", "/home/u")
    exe = f"{BOX}/run.sh"
    user = kw.get("user", ROOT)
    assert isinstance(user, User)
    cmd = command(spec, universes, exe=exe, sandbox=BOX, sandbox_name="dir_7_1", identity=ident, user=user,
                  env={"_CONDOR_SCRATCH_DIR": BOX, "X": "1"}, memory_mib=512, cpus=2,
                  stdin=bool(kw.get("stdin", False)))
    return cmd.argv


def test_a_container_job_runs_in_its_sandbox_as_its_user() -> None:
    u = Universes(runtime=PODMAN, execute_dir="/var/lib/roost/execute")
    argv = argv_of(job(WantContainer=True, ContainerImage="docker://localhost/tiny:1"), u)
    name = u.container_name("dir_7_1")
    assert name.startswith("roost-") and name.endswith("-dir_7_1")
    assert argv[:5] == ["/usr/bin/podman", "--runtime", "runc", "run", "--rm"]
    i = argv.index("--user")
    assert argv[i + 1] == "1000:1000"
    # --mount: Docker's --volume would make a missing source directory, as root
    assert argv[argv.index("--mount") + 1] == f"type=bind,source={BOX},target={BOX}" and "--volume" not in argv
    assert argv[argv.index("--workdir") + 1] == BOX
    assert "--memory=512m" in argv and "--cpu-shares=200" in argv and "--cap-drop=all" in argv
    assert "-i" not in argv and "--init" in argv and argv[argv.index("--name") + 1] == name
    assert f"--env=_CONDOR_SCRATCH_DIR={BOX}" in argv and "--env=X=1" in argv and "--env" not in argv
    # the image, then the transferred program and the job's own arguments
    assert argv[-4:] == ["localhost/tiny:1", f"{BOX}/run.sh", "a", "b c"]


def test_the_slot_gpus_are_passed_in() -> None:
    u = Universes(runtime=PODMAN, execute_dir="/x")
    spec = parse_job(job(WantContainer=True, ContainerImage="docker://i"), "fs")
    argv = command(spec, u, exe=f"{BOX}/run.sh", sandbox=BOX, sandbox_name="d", identity=Identity(1, 1, "", ""),
                   user=ROOT, env={"_CONDOR_AssignedGPUs": "GPU-1,GPU-3"}, memory_mib=None, cpus=1, stdin=False).argv
    devices = [argv[i + 1] for i, a in enumerate(argv) if a == "--device"]
    assert devices == ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia1", "/dev/nvidia3"]
    assert not any(a.startswith("--memory") for a in argv)


def test_target_dir_moves_the_sandbox_inside() -> None:
    u = Universes(runtime=PODMAN, execute_dir="/x")
    argv = argv_of(job(WantContainer=True, ContainerImage="docker://img", ContainerTargetDir="/srv"), u,
                   stdin=True)
    assert argv[argv.index("--mount") + 1] == f"type=bind,source={BOX},target=/srv"
    assert argv[argv.index("--workdir") + 1] == "/srv"
    assert "--env=_CONDOR_SCRATCH_DIR=/srv" in argv and argv[-3:] == ["/srv/run.sh", "a", "b c"] and "-i" in argv


def test_docker_image_network_entrypoint_and_pull() -> None:
    u = Universes(runtime=PODMAN, execute_dir="/x")
    argv = argv_of(job(WantDocker=True, DockerImage="localhost/tiny", DockerNetworkType="none",
                       DockerOverrideEntrypoint=True, DockerPullPolicy="always"), u)
    assert "--network=none" in argv and "--hostname" in argv
    assert argv[argv.index("--entrypoint") + 1] == f"{BOX}/run.sh" and argv[-3:] == ["localhost/tiny", "a", "b c"]
    assert "--pull" not in argv  # the starter pulls before the run (container.ensure_image)
    host = argv_of(job(WantDocker=True, DockerImage="i", DockerNetworkType="host"), u)
    assert "--network=host" in host and "--hostname" not in host
    assert "--network=lab" in argv_of(job(WantDocker=True, DockerImage="i", DockerNetworkType="lab"), u)
    with pytest.raises(CommandError, match="docker_network_type = other: not in this host's DOCKER_NETWORKS"):
        argv_of(job(WantDocker=True, DockerImage="i", DockerNetworkType="other"), u)


def test_the_image_own_command_and_programs_inside_the_image() -> None:
    u = Universes(runtime=PODMAN, execute_dir="/x")
    bare = argv_of(job(WantDocker=True, DockerImage="i", Cmd="", Arguments="", TransferExecutable=False), u)
    assert bare[-1] == "i"
    inside = argv_of(job(WantDocker=True, DockerImage="i", Cmd="/bin/echo", TransferExecutable=False), u)
    assert inside[-4:] == ["i", "/bin/echo", "a", "b c"]


def test_a_rootfs_directory_image_and_unsupported_ones(dirs: Path) -> None:
    u = Universes(runtime=PODMAN, execute_dir="/x")
    argv = argv_of(job(WantContainer=True, ContainerImage=f"{dirs}/open"), u, user=NOBODY)
    assert argv[argv.index("--rootfs") + 1] == f"{dirs}/open:O"  # an overlay: the directory stays as it is
    with pytest.raises(CommandError, match="Singularity"):
        argv_of(job(WantContainer=True, ContainerImage="/images/x.sif"), u)
    with pytest.raises(CommandError, match="no working container runtime"):
        argv_of(job(WantContainer=True, ContainerImage="docker://i"), Universes())


def test_nothing_from_the_job_ad_becomes_an_option_of_the_runtime() -> None:
    u = Universes(runtime=PODMAN, execute_dir="/x")
    with pytest.raises(CommandError, match="not an image name"):
        argv_of(job(WantDocker=True, DockerImage="--privileged"), u)
    with pytest.raises(CommandError, match="container_target_dir = /srv:rw"):
        argv_of(job(WantContainer=True, ContainerImage="docker://i", ContainerTargetDir="/srv:rw"), u)


@pytest.mark.parametrize("image", [
    {"DockerImage": "docker-archive:/etc/shadow.tar"}, {"DockerImage": "oci-archive:/srv/x.tar"},
    {"DockerImage": "oci:layout"}, {"DockerImage": "dir:/root"}, {"DockerImage": "containers-storage:x"},
    {"DockerImage": "docker:alpine"}, {"ContainerImage": "docker://docker-archive:/x.tar"},
    {"ContainerImage": "docker://oci:x"}, {"ContainerImage": "docker-daemon:x:1"},
    {"ContainerImage": "rootfs"}, {"DockerImage": "UPPER/case"},
])
def test_only_registry_images_or_directories_reach_the_runtime(image: dict[str, str]) -> None:
    """A transport would have the runtime, as root, load the host's files as an image."""
    u = Universes(runtime=PODMAN, execute_dir="/x")
    with pytest.raises(CommandError, match="transport|not a registry image|neither a registry image"):
        argv_of(job(WantContainer=True, **image), u)


def test_registry_references_that_are_fine() -> None:
    u = Universes(runtime=PODMAN, execute_dir="/x")
    for ref in ("alpine", "alpine:3.19", "localhost:5000/a/b:1", "ghcr.io/o/img@sha256:" + "a" * 64,
                "docker.io/library/busybox:1.36-musl"):
        assert ref in argv_of(job(WantDocker=True, DockerImage=ref), u)
    assert argv_of(job(WantContainer=True, ContainerImage="docker://alpine:3.19"), u)[-4] == "alpine:3.19"


@pytest.fixture
def dirs() -> Iterator[Path]:
    """open/ (anyone's), private/ (0700, root's) holding data/ (0755), and a link to it."""
    top = Path(tempfile.mkdtemp(prefix="roost-uc-", dir="/tmp"))
    try:
        top.chmod(0o755)
        (top / "open").mkdir(mode=0o755)
        (top / "private" / "data").mkdir(parents=True)
        (top / "private").chmod(0o700)
        (top / "private" / "data").chmod(0o755)
        (top / "open" / "link").symlink_to(top / "private" / "data")
        yield top
    finally:
        (top / "private").chmod(0o755)
        for root, subdirs, files in os.walk(top, topdown=False):
            for f in files:
                os.unlink(os.path.join(root, f))
            for d in subdirs:
                p = os.path.join(root, d)
                os.unlink(p) if os.path.islink(p) else os.rmdir(p)
        top.rmdir()


def test_an_iwd_mounted_without_transfer_must_be_reachable_by_the_job_user(dirs: Path) -> None:
    """The runtime's client is root: it would mount bob's /home/bob/private/data for alice."""
    u = Universes(runtime=PODMAN, execute_dir="/x")
    no_transfer = {"ShouldTransferFiles": "NO", "TransferExecutable": False, "Cmd": "/bin/true"}
    ok = argv_of(job(WantDocker=True, DockerImage="i", Iwd=f"{dirs}/open", **no_transfer), u, user=NOBODY)
    assert ok[ok.index("--mount") + 1] == f"type=bind,source={dirs}/open,target={dirs}/open"
    for iwd in (f"{dirs}/private/data", f"{dirs}/open/link", f"{dirs}/absent"):
        with pytest.raises(CommandError, match=r"the job's Iwd .*: not a directory the job's user can reach"):
            argv_of(job(WantDocker=True, DockerImage="i", Iwd=iwd, **no_transfer), u, user=NOBODY)
    # a link the user may follow: its target is mounted where the job knows its Iwd
    (dirs / "open" / "here").symlink_to(dirs / "open")
    via = argv_of(job(WantDocker=True, DockerImage="i", Iwd=f"{dirs}/open/here", **no_transfer), u, user=NOBODY)
    assert via[via.index("--mount") + 1] == f"type=bind,source={dirs}/open,target={dirs}/open/here"


def test_an_image_directory_must_be_reachable_by_the_job_user(dirs: Path) -> None:
    u = Universes(runtime=PODMAN, execute_dir="/x")
    for image in (f"{dirs}/private/data", f"{dirs}/open/link"):
        ad = job(WantContainer=True, ContainerImage=image)
        with pytest.raises(CommandError, match=r"container_image .*: not a directory the job's user can reach"):
            argv_of(ad, u, user=NOBODY)
        with pytest.raises(container.ContainerError, match="not a directory the job's user can reach"):
            container.ensure_image(PODMAN, container.job_request(ad, "", []), NOBODY)
    assert argv_of(job(WantContainer=True, ContainerImage=f"{dirs}/private/data"), u, user=ROOT)


def test_docker_itself_logs_nothing_of_its_own() -> None:
    docker = container.Runtime("docker", "/usr/bin/docker", "27.0", (), ())
    argv = argv_of(job(WantDocker=True, DockerImage="i"), Universes(runtime=docker, execute_dir="/x"))
    assert argv[:3] == ["/usr/bin/docker", "run", "--rm"] and argv[argv.index("--log-driver") + 1] == "none"
    assert docker.ad()["HasDocker"] is True and "HasSandboxImage" not in docker.ad()
    assert PODMAN.ad()["DockerNetworks"] == "lab" and PODMAN.ad()["HasSandboxImage"] is True


def test_rm_argv_and_extra_arguments() -> None:
    assert container.rm_argv(PODMAN, "roost-x") == ["/usr/bin/podman", "--runtime", "runc", "rm", "--force",
                                                   "--time", "0", "roost-x"]
    assert container.extra_arguments("--shm-size 1g '--label=a b'") == ["--shm-size", "1g", "--label=a b"]


JVM = javajob.Jvm("/usr/bin/java", {"java.version": "17.0.15", "java.vendor": "Debian",
                                    "java.specification.version": "17"}, extra_arguments=("-Xss2m",))


def test_a_java_job_runs_its_main_class_with_its_jars() -> None:
    u = Universes(jvm=JVM)
    ad = job(JobUniverse=10, Cmd="java", TransferExecutable=False, Arguments="Hello world",
             JarFiles="lib/a.jar,/opt/b.jar", JavaVMArgs="-Xmx64m -Dx=1")
    assert argv_of(ad, u) == ["/usr/bin/java", "-classpath", f".:{BOX}/a.jar:{BOX}/b.jar", "-Xss2m",
                              "-Xmx64m", "-Dx=1", "Hello", "world"]
    shared = job(JobUniverse=10, Cmd="/home/u/Hello.class", ShouldTransferFiles="NO", Arguments="Hello",
                 JarFiles="lib/a.jar", JavaVMArguments="'-Da=b c'")
    assert argv_of(shared, u) == ["/usr/bin/java", "-classpath", ".:lib/a.jar", "-Xss2m", "-Da=b c", "Hello"]
    with pytest.raises(CommandError, match="no working Java"):
        argv_of(ad, Universes())
    with pytest.raises(CommandError, match="main class"):
        argv_of(job(JobUniverse=10, Cmd="java", Arguments=""), u)


def test_the_jvm_properties_and_its_ad() -> None:
    text = ("Property settings:\n    java.class.path = \n    java.specification.version = 17\n"
            "    java.vendor = Debian\n    java.version = 17.0.15\n    line.separator = \\n\n")
    props = javajob.parse_properties(text)
    assert props == {"java.specification.version": "17", "java.vendor": "Debian", "java.version": "17.0.15"}
    assert javajob.make_jvm("/usr/bin/java", props).ad() == {
        "HasJava": True, "JavaVendor": "Debian", "JavaVersion": "17.0.15", "JavaSpecificationVersion": "17"}


def test_vanilla_jobs_are_untouched() -> None:
    assert argv_of(job(), Universes()) == [f"{BOX}/run.sh", "a", "b c"]


def test_the_registry_picks_each_jobs_execute_side() -> None:
    """jobcommand asks roost.universes which module starts a job (issue 28)."""
    assert side_for(job()) is plainjob and side_for(None) is plainjob
    assert side_for(job(JobUniverse=11)) is plainjob  # a parallel node is its own program
    assert side_for(job(WantContainer=True, ContainerImage="docker://localhost/tiny:1")) is container
    assert side_for(job(WantDocker=True, DockerImage="localhost/tiny:1")) is container
    assert side_for(job(JobUniverse=10)) is javajob
    assert side_for(job(JobUniverse=99)) is plainjob  # no universe has it: the program, as before
    with pytest.raises(CommandError, match="scheduler universe job runs beside its schedd"):
        side_for(job(JobUniverse=7))
    assert set(execute_sides()) == {plainjob, container, javajob}


def test_the_slots_advertise_what_each_execute_side_found() -> None:
    assert Universes().ad() == {}
    both = Universes(runtime=PODMAN, jvm=JVM).ad()
    assert both["HasContainer"] is True and both["HasDocker"] is True and both["HasJava"] is True
    assert both["JavaVersion"] == "17.0.15" and both["ContainerRuntime"] == "podman"
