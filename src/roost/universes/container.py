"""The container universe, and docker, its alias: a vanilla job (``JobUniverse = 5``)
run in an image by the execute host's container runtime (podman or docker).

``universe = docker`` needs ``docker_image`` (``WantDocker``); ``universe = container``,
or any vanilla job naming an image, is a container job (``WantContainer``) whose image
says what the execute host must run (``docker://`` a registry image, ``WantDockerImage``;
``.sif`` a Singularity file, ``WantSIF``; anything else a directory, ``WantSandboxImage``).
Only a registry's images: another ``scheme:`` prefix (podman's transports such as
``docker-archive:/x.tar``, which load the execute host's files as root) is refused,
and so is ``docker:`` without ``//``. Requirements ask for ``TARGET.HasDocker`` /
``TARGET.HasContainer && TARGET.HasDockerURL``... as condor_submit writes them. The
image grammar (``reference_problem``) is the startd's check too.
"""

from __future__ import annotations

import re

from roost.universes.base import Get, RunsOn, SubmitBuild, Universe, arch_clause, flag

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


def read_images(b: SubmitBuild, universe: str) -> None:
    """Image commands -> DockerImage / ContainerImage and what kind of image it is
    (vanilla and local read them too: a vanilla job with an image is a container job,
    a local one is refused)."""
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


def _check_reference(b: SubmitBuild, value: str, key: str) -> None:
    why = reference_problem(value.removeprefix("docker://"))
    if why is not None:
        b.error(f"{key} = {value}: {why}", key)


def _check_container_image(b: SubmitBuild, image: str) -> None:
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


def is_container_job(b: SubmitBuild) -> bool:
    """The job runs in an image (set by ``read_images``, or by ``universe = docker/container``)."""
    return bool(b.lookup("WantDocker") or b.lookup("WantContainer"))


def _early(b: SubmitBuild, universe: str) -> None:
    b.set("WantDocker" if universe == "docker" else "WantContainer", True)
    read_images(b, universe)


#: docker_network_type values every runtime has; others must be in the host's DockerNetworks
_STANDARD_NETWORKS = ("host", "none", "nat")


def container_clause(b: SubmitBuild) -> str:
    """What a docker or container job needs of the execute host, as condor_submit writes it."""
    if b.lookup("WantDocker"):
        clause = "TARGET.HasDocker"
        network = b.lookup("DockerNetworkType")
        if isinstance(network, str) and network and network not in _STANDARD_NETWORKS:
            clause += "&& StringListMember(My.DockerNetworkType, TARGET.DockerNetworks)"
        return clause
    clause = "TARGET.HasContainer"
    if b.lookup("DockerImage") is not None or b.lookup("WantDockerImage"):
        clause += "&& TARGET.HasDockerURL"
    elif b.lookup("WantSIF"):
        clause += "&& TARGET.HasSIF"
    elif b.lookup("WantSandboxImage"):
        clause += "&& TARGET.HasSandboxImage"
    return clause


def _platform(b: SubmitBuild, machine: set[str]) -> list[str]:
    """The image brings its own OpSys: only Arch and the runtime are asked for."""
    return [*arch_clause(b, machine), container_clause(b)]


def _claims(get: Get) -> bool:
    return flag(get, "WantDocker") or flag(get, "WantContainer")


#: submit commands the image reading uses (vanilla's and local's too)
KEYS = frozenset(
    "container_image docker_image container_target_dir docker_pull_policy docker_override_entrypoint "
    "transfer_container".split())

UNIVERSE = Universe(
    name="container", aliases=("docker",), number=5, runs_on=RunsOn.SLOT,
    execute="roost.daemons.startd.container",
    summary="a vanilla job run in an image by the execute host's podman or docker",
    keys=KEYS, advertises=("HasContainer", "HasDockerURL", "HasDocker", "DockerVersion", "HasSandboxImage"),
    early=_early, platform=_platform, claims=_claims, kill_sig=None, disk_by_version=True, needs_cmd=False,
)
