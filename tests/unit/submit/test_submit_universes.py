"""Container, docker and java universes as condor_submit writes them; grid, vm and standard refused."""

from __future__ import annotations

import pytest

from roost.submit import SubmitError, parse_submit


def ad(text: str) -> dict:
    clusters = parse_submit(text + "\nqueue\n", file="job.sub", cwd="/home/u", env={}).expand(
        cluster_id=1, qdate=1000)
    return next(iter(clusters)).proc_ad(0)


def test_container_universe_with_a_registry_image() -> None:
    a = ad("universe = container\ncontainer_image = docker://localhost/tiny:1\nexecutable = run.sh")
    assert a["JobUniverse"] == 5 and a["WantContainer"] is True and a["WantDockerImage"] is True
    assert a["ContainerImage"] == "docker://localhost/tiny:1" and a["Cmd"] == "/home/u/run.sh"
    assert "WantDocker" not in a
    req = str(a["Requirements"])
    assert 'TARGET.HasContainer&& TARGET.HasDockerURL' in req and "OpSys" not in req
    assert req.startswith('(TARGET.Arch == "X86_64") && TARGET.HasContainer')


def test_image_kinds_need_matching_hosts() -> None:
    sif = ad("universe = container\ncontainer_image = /images/tool.sif\nexecutable = /bin/true")
    assert sif["WantSIF"] is True and "TARGET.HasSIF" in str(sif["Requirements"])
    box = ad("universe = container\ncontainer_image = /images/rootfs/\nexecutable = /bin/true")
    assert box["WantSandboxImage"] is True and "TARGET.HasSandboxImage" in str(box["Requirements"])


def test_a_vanilla_job_with_an_image_is_a_container_job() -> None:
    a = ad('executable = /bin/true\ndocker_image = "localhost/tiny"')
    assert a["WantContainer"] is True and a["WantDockerImage"] is True and a["DockerImage"] == "localhost/tiny"
    assert "TARGET.HasContainer&& TARGET.HasDockerURL" in str(a["Requirements"])


def test_docker_universe() -> None:
    a = ad("universe = docker\ndocker_image = localhost/tiny\nexecutable = job.sh\n"
           "docker_network_type = none\ndocker_pull_policy = Always")
    assert (a["JobUniverse"], a["WantDocker"], a["DockerImage"]) == (5, True, "localhost/tiny")
    assert a["DockerNetworkType"] == "none" and a["DockerPullPolicy"] == "Always"  # as written (condor); the startd reads it without case
    req = str(a["Requirements"])
    assert "TARGET.HasDocker" in req and "HasContainer" not in req and "DockerNetworks" not in req
    custom = ad("universe = docker\ndocker_image = x\nexecutable = /bin/true\ndocker_network_type = lab")
    assert "StringListMember(My.DockerNetworkType, TARGET.DockerNetworks)" in str(custom["Requirements"])


def test_the_image_may_say_what_to_run() -> None:
    a = parse_submit("universe = docker\ndocker_image = localhost/tiny\nqueue\n", cwd="/tmp", env={}).expand(
        cluster_id=1, qdate=0)
    job = next(iter(a)).proc_ad(0)
    assert (job["Cmd"], job["TransferExecutable"], job["DockerImage"]) == ("", False, "localhost/tiny")


def test_container_target_dir_and_entrypoint() -> None:
    a = ad("universe = container\ncontainer_image = docker://x\nexecutable = /bin/true\n"
           "container_target_dir = /srv\ndocker_override_entrypoint = true\ntransfer_container = false")
    assert (a["ContainerTargetDir"], a["DockerOverrideEntrypoint"], a["TransferContainer"]) == ("/srv", True, False)
    with pytest.raises(SubmitError, match=r"job.sub:4: container_target_dir = srv: must be an absolute"):
        ad("universe = container\ncontainer_image = docker://x\nexecutable = /bin/true\ncontainer_target_dir = srv")


@pytest.mark.parametrize(("text", "message"), [
    ("universe = docker\nexecutable = /bin/true", r"job.sub:1: universe = docker needs docker_image"),
    ("universe = docker\ndocker_image = x\ncontainer_image = docker://x\nexecutable = /bin/true",
     r"job.sub:3: universe = docker does not allow container_image"),
    ("universe = container\nexecutable = /bin/true", r"job.sub:1: universe = container needs container_image"),
    ("docker_image = x\ncontainer_image = docker://y\nexecutable = /bin/true",
     r"job.sub:2: cannot declare both docker_image and container_image"),
    ("universe = local\ndocker_image = x\nexecutable = /bin/true",
     r"job.sub:1: universe = local runs on the submit host without a container"),
    ("universe = container\ncontainer_image = library://x/y\nexecutable = /bin/true",
     r"job.sub:2: 'library://x/y' is not a valid container image"),
])
def test_bad_container_descriptions_name_the_line(text: str, message: str) -> None:
    with pytest.raises(SubmitError, match=message):
        ad(text)


def test_java_universe_ships_the_class_and_jars() -> None:
    a = ad("universe = java\nexecutable = Hello.class\narguments = Hello world\n"
           "jar_files = lib/a.jar, /opt/b.jar\njava_vm_args = -Xmx64m -Dx=1")
    assert (a["JobUniverse"], a["Cmd"], a["TransferExecutable"]) == (10, "java", False)
    assert a["TransferInput"] == "/home/u/Hello.class,lib/a.jar,/opt/b.jar"
    assert a["JarFiles"] == "lib/a.jar,/opt/b.jar" and a["JavaVMArgs"] == "-Xmx64m -Dx=1"
    assert a["Args"] == "Hello world"
    assert str(a["Requirements"]).startswith("TARGET.HasJava && ")
    v2 = ad("universe = java\nexecutable = Hello.class\narguments = Hello\njava_vm_arguments2 = \"-Da='b c'\"")
    assert v2["JavaVMArguments"] == "-Da=b' 'c"  # condor's canonical form
    shared = ad("universe = java\nexecutable = Hello.class\narguments = Hello\nshould_transfer_files = NO")
    assert shared["Cmd"] == "/home/u/Hello.class" and "TransferInput" not in shared


def test_java_needs_its_main_class() -> None:
    with pytest.raises(SubmitError, match=r"job.sub:1: universe = java: arguments must name the main class"):
        ad("universe = java\nexecutable = Hello.class")


@pytest.mark.parametrize("universe", ["vm", "standard"])
def test_universes_roost_cannot_run_are_refused(universe: str) -> None:
    with pytest.raises(SubmitError, match=rf"job.sub:2: universe = {universe}: not supported by roost"):
        ad(f"executable = /bin/true\nuniverse = {universe}\ngrid_resource = condor cm.example schedd")


def test_a_grid_resource_roost_cannot_reach_is_refused_naming_file_line_and_what_it_can() -> None:
    with pytest.raises(SubmitError, match=r"job.sub:3: grid_resource = arc ce.example: type 'arc' is not "
                                          r"supported; supported: 'batch slurm'; 'batch sge'; 'condor <schedd name> "):
        ad("executable = /bin/true\nuniverse = grid\ngrid_resource = arc ce.example")
    with pytest.raises(SubmitError, match=r"job.sub:3: grid_resource = condor cm.example: expected 'condor "):
        ad("executable = /bin/true\nuniverse = grid\ngrid_resource = condor cm.example")


def test_a_condor_c_grid_resource_is_taken() -> None:
    job = ad("executable = /bin/true\nuniverse = grid\ngrid_resource = condor schedd@b cm.b.example:9618")
    assert job["GridResource"] == "condor schedd@b cm.b.example:9618" and job["JobUniverse"] == 9


def test_unknown_universe_lists_the_ones_there_are() -> None:
    with pytest.raises(SubmitError, match=r"job.sub:1: universe = mars: unknown universe \(use vanilla, container"):
        ad("universe = mars\nexecutable = /bin/true")


@pytest.mark.parametrize(("text", "message"), [
    ("container_image = docker:alpine", r"job.sub:2: container_image = docker:alpine: a registry image is written "
     r"docker://alpine"),
    ("container_image = docker-archive:/root/x.tar", r"job.sub:2: container_image = docker-archive:/root/x.tar: "
     r"the docker-archive: prefix is not docker://"),
    ("container_image = oci:layout", r"job.sub:2: .* the oci: prefix is not docker://"),
    ("container_image = docker://oci-archive:/x.tar", r"job.sub:2: .*the oci-archive: transport loads an image"),
    ("docker_image = containers-storage:x", r"job.sub:2: docker_image = containers-storage:x: the "
     r"containers-storage: transport"),
    ("docker_image = dir:/root", r"job.sub:2: docker_image = dir:/root: the dir: transport"),
    ("docker_image = a b", r"job.sub:2: docker_image = a b: not a registry image reference"),
])
def test_images_the_execute_host_would_load_from_its_own_files_are_refused(text: str, message: str) -> None:
    """Only a registry image (docker://... or a docker_image name) or a directory: a
    transport would have the execute host's runtime (root) read its own files."""
    with pytest.raises(SubmitError, match=message):
        ad(f"universe = container\n{text}\nexecutable = /bin/true")


def test_registry_images_and_directories_still_pass() -> None:
    for text in ("container_image = docker://ghcr.io/o/i:1.2@sha256:" + "0" * 64,
                 "container_image = /images/rootfs", "docker_image = localhost:5000/tiny:1",
                 "container_image = oras://ghcr.io/o/i:1"):
        assert ad(f"universe = container\n{text}\nexecutable = /bin/true")["WantContainer"] is True
