"""What condor_submit does for the universes beyond vanilla: container, docker, java,
grid (``grid_resource``, submit/gridresource.py), and the ones roost cannot run (vm,
standard), refused here rather than left idle.

Container and docker jobs are vanilla jobs (``JobUniverse = 5``) with an image:
``universe = docker`` needs ``docker_image`` (``WantDocker``); ``universe = container``,
or any vanilla job naming an image, is a container job (``WantContainer``) whose image
says what the execute host must run (``docker://`` a registry image, ``WantDockerImage``;
``.sif`` a Singularity file, ``WantSIF``; anything else a directory, ``WantSandboxImage``).
Only a registry's images: another ``scheme:`` prefix (podman's transports such as
``docker-archive:/x.tar``, which load the execute host's files as root) is refused,
and so is ``docker:`` without ``//``.
requirements.py turns those into ``TARGET.HasDocker`` / ``TARGET.HasContainer &&
TARGET.HasDockerURL``... as condor_submit does.

A java job's ``executable`` is its ``.class`` (or ``.jar``) file and its first argument
the main class. As condor_submit, the class file and ``jar_files`` travel as input files
and ``Cmd`` becomes ``java``: the execute host's JVM runs ``java -classpath .:jars ...
MainClass args`` in the sandbox.
"""

from __future__ import annotations

import re

from roost.submit import arglist
from roost.submit.builder import Builder
from roost.submit.gridresource import GridResourceError, parse_grid_resource

#: universes roost refuses at submit, with why and what to do instead
REFUSED = {
    "vm": "roost runs no virtual machines; use universe = container with an image instead",
    "standard": "HTCondor dropped the standard universe in 9.0; use vanilla "
                "(with checkpoint_exit_code, or checkpoint_method = criu, to checkpoint)",
}
_BAD_PREFIXES = ("instance://", "library://", "shub://")

#: transports podman (containers/image) reads before a ':'; each but docker:// names a
#: file or store on the execute host, which the runtime (root) would load as an image
TRANSPORTS = frozenset(("docker", "docker-archive", "docker-daemon", "oci", "oci-archive", "dir",
                        "containers-storage", "sif", "tarball", "ostree", "atomic"))
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_LABEL = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"
#: a registry host has a dot or a port, or is localhost (else it is the name's first part)
_HOST = rf"(?:localhost(?::[0-9]+)?|{_LABEL}(?:\.{_LABEL})+(?::[0-9]+)?|{_LABEL}:[0-9]+)"
#: a registry image reference: [host[:port]/]name(/name)*[:tag][@digest] (Docker's grammar)
_REFERENCE = re.compile(rf"(?:{_HOST}/)?{_COMPONENT}(?:/{_COMPONENT})*(?::[\w][\w.-]{{0,127}})?"
                        r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def reference_problem(ref: str) -> str | None:
    """Why ``ref`` (``docker://`` already taken off) is not a registry image reference,
    None when it is. A transport's ``name:`` prefix (``docker-archive:/x.tar``,
    ``oci:dir``, ``containers-storage:x``) is refused even where it reads as a name
    and a tag: the runtime would take it for that transport."""
    scheme = _SCHEME.match(ref)
    if scheme is not None and scheme.group()[:-1].lower() in TRANSPORTS:
        return (f"the {scheme.group()} transport loads an image from the execute host; only registry "
                "images (docker://[host/]name[:tag]) or an image directory are allowed")
    if _REFERENCE.fullmatch(ref) is None:
        return "not a registry image reference ([host[:port]/]name[:tag][@digest], lower case)"
    return None

#: submit commands read here (KNOWN_KEYS: no "unused" warning for them)
KEYS = frozenset(
    "container_image docker_image container_target_dir docker_pull_policy docker_override_entrypoint "
    "transfer_container jar_files java_vm_args java_vm_arguments java_vm_arguments2 "
    "grid_resource batch_queue batch_runtime batch_project".split()
)


def h_grid(b: Builder) -> None:
    """``universe = grid`` (issue 30): ``grid_resource`` names where the job goes (checked
    here: an unsupported one is an error naming what is), ``batch_queue`` (the partition),
    ``batch_runtime`` (wall time, seconds) and ``batch_project`` as HTCondor's
    ``BatchQueue``/``BatchRuntime``/``BatchProject``."""
    if b.lookup("JobUniverse") != 9:
        return
    resource = b.get("grid_resource")
    try:
        parsed = parse_grid_resource(resource)
    except GridResourceError as e:
        b.error(str(e), "grid_resource")
        return
    b.set("GridResource", str(parsed))
    queue = b.get("batch_queue")
    if queue is not None and queue.strip():
        b.set("BatchQueue", queue.strip())
    project = b.get("batch_project")
    if project is not None and project.strip():
        b.set("BatchProject", project.strip())
    runtime = b.get("batch_runtime")
    if runtime is not None and runtime.strip():
        try:
            seconds = int(runtime.strip())
            if seconds <= 0:
                raise ValueError
        except ValueError:
            b.error(f"batch_runtime = {runtime}: expected a positive number of seconds", "batch_runtime")
            return
        b.set("BatchRuntime", seconds)


def refuse(b: Builder, universe: str) -> None:
    """A submit error for a universe roost cannot run (it would sit idle forever)."""
    why = REFUSED.get(universe)
    if why is not None:
        b.error(f"universe = {universe}: not supported by roost: {why}", "universe")


def _image(value: str) -> str:
    v = value.strip()
    return v[1:-1].strip() if len(v) >= 2 and v[0] == v[-1] == '"' else v


def image_kind(image: str) -> str:
    """condor_submit's reading of a container_image: ``docker`` (a registry image),
    ``sif`` (a Singularity file) or ``sandbox`` (an unpacked root directory)."""
    s = image.strip()
    if s.startswith("docker://"):
        return "docker"
    if s.endswith(".sif"):
        return "sif"
    return "sandbox"


def h_container(b: Builder) -> None:
    """Image commands -> DockerImage / ContainerImage and what kind of image it is."""
    universe = (b.get("universe") or "vanilla").strip().lower()
    docker = b.get("docker_image")
    container = b.get("container_image")
    if universe == "docker":
        if container is not None:
            b.error("universe = docker does not allow container_image (use docker_image, or "
                    "universe = container)", "container_image")
        if docker is None or not _image(docker):
            b.error("universe = docker needs docker_image (the image to run the job in)", "universe")
        if docker is not None and _image(docker):
            _check_reference(b, _image(docker), "docker_image")
        b.set("DockerImage", _image(docker or ""))
    elif universe in ("container", "vanilla", "local"):
        if docker is not None and container is not None:
            b.error("cannot declare both docker_image and container_image", "container_image")
        if docker is not None:
            if not _image(docker):
                b.error(f"'{docker}' is not a valid docker_image", "docker_image")
            _check_reference(b, _image(docker), "docker_image")
            b.set("DockerImage", _image(docker))
            b.set("WantDockerImage", True)
        elif container is not None:
            image = _image(container)
            if not image or image.startswith(_BAD_PREFIXES):
                b.error(f"'{container}' is not a valid container image", "container_image")
            _check_container_image(b, image)
            b.set("ContainerImage", image)
            kind = image_kind(image)
            b.set({"docker": "WantDockerImage", "sif": "WantSIF", "sandbox": "WantSandboxImage"}[kind], True)
            if not b.bool("transfer_container", True):
                b.set("ContainerImageSource", "local")
            else:  # where a registry image comes from, as condor_submit marks it
                for scheme in ("docker", "oras"):
                    if image.startswith(scheme + "://"):
                        b.set("ContainerImageSource", scheme)
        elif universe == "container":
            b.error("universe = container needs container_image (or docker_image)", "universe")
        if (docker is not None or container is not None) and universe == "local":
            b.error("universe = local runs on the submit host without a container in roost: "
                    "use universe = container (or drop the image)", "universe")
        if docker is not None or container is not None:
            b.set("WantContainer", True)
    else:
        return
    target = b.get("container_target_dir")
    if target is not None:
        target = _image(target)
        if not target.startswith("/"):
            b.error(f"container_target_dir = {target}: must be an absolute path inside the container",
                    "container_target_dir")
    # ContainerTargetDir, DockerPullPolicy, DockerOverrideEntrypoint, TransferContainer:
    # condor_submit's plain keyword table (commands.py) sets them as written


def _check_reference(b: Builder, value: str, key: str) -> None:
    why = reference_problem(value.removeprefix("docker://"))
    if why is not None:
        b.error(f"{key} = {value}: {why}", key)


def _check_container_image(b: Builder, image: str) -> None:
    """A registry image is ``docker://...`` (as HTCondor's manual writes it: the execute
    host reads nothing else as one); another ``scheme:`` prefix is refused, not taken
    for a directory, and a directory is named by its path."""
    if image.startswith("docker://"):
        _check_reference(b, image, "container_image")
    elif image.lower().startswith("docker:"):
        b.error(f"container_image = {image}: a registry image is written "
                f"docker://{image[len('docker:'):]} (docker: without // is not one)", "container_image")
    elif not image.startswith(("/", "oras://")) and (scheme := _SCHEME.match(image)) is not None:
        b.error(f"container_image = {image}: the {scheme.group()} prefix is not "
                "docker://; a container image is a registry image (docker://[host/]name[:tag]), "
                "a .sif file or an image directory", "container_image")


def is_container_job(b: Builder) -> bool:
    return bool(b.lookup("WantDocker") or b.lookup("WantContainer"))


def h_java(b: Builder) -> None:
    """Java universe: the class file and jar_files as inputs, ``Cmd = "java"``, VM arguments."""
    if b.lookup("JobUniverse") != 10:
        return
    args = b.lookup("Arguments") or b.lookup("Args")
    if not args or not str(args).strip():
        b.error("universe = java: arguments must name the main class first (arguments = MyClass ...)",
                "arguments" if b.get("arguments") is not None else "universe")
    jars = b.get("jar_files")
    if jars is not None:
        b.set("JarFiles", ",".join(j.strip() for j in jars.split(",") if j.strip()))
    v2 = b.get("java_vm_arguments2")
    v1 = b.get("java_vm_args", "java_vm_arguments")
    try:
        if v2 is not None:
            b.set("JavaVMArguments", arglist.parse_arguments2(v2))
        elif v1 is not None:
            attr, value = arglist.parse_arguments(v1)
            b.set("JavaVMArgs" if attr == "Args" else "JavaVMArguments", value)
    except arglist.ArgSyntaxError as e:
        b.error(f"java_vm_args: {e}", "java_vm_arguments2" if v2 is not None else "java_vm_args")
    if b.lookup("ShouldTransferFiles") == "NO":
        return
    inputs = [f for f in str(b.lookup("TransferInput") or "").split(",") if f]
    cmd = b.lookup("Cmd")
    if isinstance(cmd, str) and cmd and cmd != "java" and cmd not in inputs:
        inputs.append(cmd)
    for jar in str(b.lookup("JarFiles") or "").split(","):
        if jar and jar not in inputs:
            inputs.append(jar)
    b.set("TransferInput", ",".join(inputs))
    b.set("Cmd", "java")
    b.set("TransferExecutable", False)
