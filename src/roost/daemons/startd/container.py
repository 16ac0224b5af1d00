"""Container and docker universe jobs: finding a runtime that works, and its command line
(the container universe's execute side, execside.py: ``detect``, ``ad``, ``prepare``,
``command``).

The startd advertises ``HasContainer``, ``HasDockerURL`` (and ``HasDocker``,
``DockerVersion``, ``HasSandboxImage``) only when a runtime *runs* a container here,
not merely when its program is installed: ``probe`` imports an empty image (no
registry needed) and runs a program that is not in it; a runtime that got as far as
looking for it (exit 127) has set up namespaces, cgroups, limits and mounts, which is
where a runtime fails on a host that cannot run it. Podman is tried first (no daemon;
each OCI runtime it has, crun then runc, until one works: crun refuses hybrid cgroup
hierarchies that runc accepts), then Docker (``docker info`` must answer).

A job runs as ``RUNTIME run --rm -i --name roost-<sandbox> --user UID:GID --mount
type=bind,source=SANDBOX,target=INSIDE -w INSIDE ... IMAGE [CMD ARGS]`` (``run_argv``, a pure function),
started by the starter like any job: the runtime's client is the job's process, its
exit code the job's, its stdin/stdout/stderr the job's files. As HTCondor, the sandbox
is mounted at its own path (``container_target_dir`` moves it), the job runs as the
user a vanilla job would, in the sandbox, with the slot's memory (``--memory``) and
CPU weight (``--cpu-shares``), all capabilities dropped. Signals the starter sends
reach the container through the client (podman and docker proxy them); SIGKILL
cannot be proxied, so the starter also removes the container by name (``rm_argv``),
and does again when it cleans up.

The client runs as root, so nothing the job names is resolved with root's rights: an
image is a registry reference (never a transport such as ``docker-archive:/x.tar``
that loads host files), and a job's Iwd mounted in place of a sandbox (no file
transfer) or an image directory is first walked as the job's user (``user_dir``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import posixpath
import resource
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from roost.classad import ClassAd
from roost.daemons.startd.execside import Command, CommandError, DetectHost
from roost.daemons.startd.jobspec import Identity, JobSpec
from roost.daemons.userfiles import User, open_dir
from roost.submit.arglist import ArgSyntaxError, split_v2_raw
from roost.universes.container import reference_problem

if TYPE_CHECKING:
    from roost.daemons.startd.jobcommand import Universes

PROBE_IMAGE = "localhost/roost-probe:1"
PROBE_TIMEOUT = 60.0  # seconds: a first run may set up the runtime's storage
LABEL = "org.roost.sandbox"
#: docker_network_type values every runtime has (others must be in DOCKER_NETWORKS)
STANDARD_NETWORKS = ("host", "none", "nat")


@dataclass(frozen=True)
class Runtime:
    """A container runtime that ran the probe here."""

    kind: str  # "podman" or "docker"
    path: str
    version: str  # `podman -v` / `docker -v`: "podman version 4.3.1" (DockerVersion)
    options: tuple[str, ...] = ()  # global options that made it work (--runtime runc ...)
    run_options: tuple[str, ...] = ()  # options every run needs here (limits the host allows)
    networks: tuple[str, ...] = ()  # DOCKER_NETWORKS: extra networks jobs may ask for

    def ad(self) -> dict[str, object]:
        """The machine attributes this runtime earns (HTCondor's names)."""
        out: dict[str, object] = {"HasContainer": True, "HasDockerURL": True, "HasDocker": True,
                                  "DockerVersion": self.version, "ContainerRuntime": self.kind}
        if self.kind == "podman":
            out["HasSandboxImage"] = True  # an unpacked root directory: podman run --rootfs
        if self.networks:
            out["DockerNetworks"] = ",".join(self.networks)
        return out


@dataclass(frozen=True)
class ContainerJob:
    """What a job ad asks of the runtime."""

    image: str  # as the runtime names it (docker:// stripped), or a directory (rootfs)
    rootfs: bool  # the image is an unpacked root directory on this host
    cmd: str  # the program to run inside ("" : the image's own command)
    args: list[str]
    target_dir: str | None  # container_target_dir: where the sandbox appears inside
    network: str  # docker_network_type ("" : the runtime's default)
    pull_always: bool
    override_entrypoint: bool
    env: dict[str, str] = field(default_factory=dict)


class ContainerError(Exception):
    """The job asks for something this host's runtime will not do."""


def is_container_job(ad: ClassAd) -> bool:
    return _bool(ad, "WantDocker") or _bool(ad, "WantContainer")


def _bool(ad: ClassAd, name: str) -> bool:
    v = ad.eval(name) if name in ad else None
    return v is True


def _str(ad: ClassAd, name: str) -> str:
    v = ad.eval(name) if name in ad else None
    return v if isinstance(v, str) else ""


def job_request(ad: ClassAd, cmd: str, args: list[str]) -> ContainerJob:
    """The container a job ad asks for; ``cmd`` is the program as the starter resolved it
    (in the sandbox when it was transferred), "" for the image's own."""
    docker, image = _str(ad, "DockerImage"), _str(ad, "ContainerImage")
    if docker:
        name, rootfs = docker.removeprefix("docker://"), False
    elif image.startswith("docker://"):
        name, rootfs = image[len("docker://"):], False
    elif image.endswith(".sif"):
        raise ContainerError(f"container_image {image}: Singularity images (.sif) are not supported here")
    elif image.startswith("/"):
        name, rootfs = image, True
    elif image:
        raise ContainerError(f"container_image {image}: neither a registry image (docker://...) nor the "
                             "absolute path of an image directory")
    else:
        raise ContainerError("the job names no docker_image or container_image")
    if not name or name.startswith("-") or any(c.isspace() or ord(c) < 32 for c in name):
        raise ContainerError(f"image {name!r}: not an image name")  # never an option to the runtime
    # only a registry's image: any transport (docker-archive:/x.tar, oci:, dir:,
    # containers-storage: ...) has the runtime, as root, read the host's files
    why = None if rootfs else reference_problem(name)
    if why is not None:
        raise ContainerError(f"image {name}: {why}")
    if rootfs and any(c in name for c in ":,"):
        raise ContainerError(f"container_image {name}: an image directory's path may not hold : or ,")
    target = _str(ad, "ContainerTargetDir") or None
    if target is not None and (not target.startswith("/") or any(c in target for c in ":,")
                               or ".." in target.split("/")):
        raise ContainerError(f"container_target_dir = {target}: must be an absolute path without : or ,")
    return ContainerJob(image=name, rootfs=rootfs, cmd=cmd, args=args, target_dir=target,
                        network=_str(ad, "DockerNetworkType").lower(),
                        pull_always=_str(ad, "DockerPullPolicy").lower() == "always",
                        override_entrypoint=_bool(ad, "DockerOverrideEntrypoint"))


def run_argv(rt: Runtime, job: ContainerJob, *, name: str, sandbox: str, uid: int, gid: int,
             groups: list[int], env: dict[str, str], memory_mib: int | None, cpus: int, stdin: bool,
             extra: list[str] | None = None, gpus: list[int] | None = None) -> list[str]:
    """The runtime's command line for ``job`` (HTCondor's ``docker create`` choices);
    ``gpus``: the slot's NVIDIA devices (their minor numbers), passed in as HTCondor does
    (the image brings its own CUDA libraries)."""
    inside = job.target_dir or sandbox
    argv = [rt.path, *rt.options, "run", "--rm", "--name", name, "--label", f"{LABEL}={name}"]
    if stdin:
        argv.append("-i")
    argv += ["--user", f"{uid}:{gid}"]
    for g in groups:
        if g != gid:
            argv += ["--group-add", str(g)]
    if any(c in sandbox for c in ":,="):
        raise ContainerError(f"the job's directory {sandbox}: a path holding : , or = cannot be mounted")
    # --mount, not --volume: Docker makes a missing bind source (as root); --mount refuses
    argv += ["--mount", f"type=bind,source={sandbox},target={inside}", "--workdir", inside]
    if gpus:
        for dev in ("/dev/nvidiactl", "/dev/nvidia-uvm", *(f"/dev/nvidia{n}" for n in gpus)):
            argv += ["--device", dev]
    if memory_mib:
        argv.append(f"--memory={memory_mib}m")
    argv.append(f"--cpu-shares={100 * max(cpus, 1)}")
    argv += ["--cap-drop=all", "--security-opt", "no-new-privileges"]
    if rt.kind == "docker":
        argv += ["--log-driver", "none"]
    network = job.network
    if network == "host":
        argv.append("--network=host")
    elif network == "none":
        argv.append("--network=none")
    elif network and network != "nat":
        if network not in rt.networks:
            raise ContainerError(f"docker_network_type = {network}: not in this host's DOCKER_NETWORKS")
        argv.append(f"--network={network}")
    if network != "host":
        argv += ["--hostname", name]
    argv += list(rt.run_options)
    argv += list(extra or ())
    for k, v in sorted(env.items()):  # _CONDOR_SCRATCH_DIR, TMPDIR ... as the job sees them
        # one word, --env=...: a name the job chose can never be read as an option
        argv.append(f"--env={k}={inside_path(v, sandbox, job.target_dir)}")
    cmd = inside_path(job.cmd, sandbox, job.target_dir) if job.cmd else ""
    if cmd and job.override_entrypoint:
        argv += ["--entrypoint", cmd]
        cmd = ""
    if job.rootfs and any(c in job.image for c in ":,"):  # resolved: a link may have brought them
        raise ContainerError(f"container_image {job.image}: an image directory's path may not hold : or ,")
    if job.rootfs:  # :O an overlay: podman (root) would make dev/, proc/, etc/ ... in the directory
        argv += ["--rootfs", f"{job.image}:O"]
    else:
        argv.append(job.image)
    if cmd:
        argv.append(cmd)
    argv += job.args
    return argv


def rm_argv(rt: Runtime, name: str) -> list[str]:
    """Kill and remove a job's container (what SIGKILL to the client cannot do)."""
    if rt.kind == "podman":  # podman's --force waits 10 s for the stop signal first
        return [rt.path, *rt.options, "rm", "--force", "--time", "0", name]
    return [rt.path, *rt.options, "rm", "--force", name]


def extra_arguments(text: str | None) -> list[str]:
    """DOCKER_EXTRA_ARGUMENTS (V2 syntax), added to every run."""
    try:
        return split_v2_raw(text or "")
    except ArgSyntaxError as e:
        raise ContainerError(f"DOCKER_EXTRA_ARGUMENTS: {e}") from None


# -- finding a runtime (blocking: the startd runs it on a thread) ----------------------

def _run(argv: list[str], timeout: float = PROBE_TIMEOUT) -> tuple[int, str]:
    try:
        got = subprocess.run(argv, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return 124, f"{argv[0]} {argv[1] if len(argv) > 1 else ''} took over {timeout:g} s"
    except OSError as e:
        return 126, f"cannot run {argv[0]}: {e.strerror or e}"
    return got.returncode, (got.stderr or got.stdout).decode("utf-8", "replace").strip()


def host_limits() -> tuple[str, ...]:
    """The open-file and process limits a job gets, as the runtime must be told: by
    default podman asks for more than a host without CAP_SYS_RESOURCE may grant, and
    the container then fails to start."""
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)[0]
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/sys/kernel/pid_max") as f:
            pid_max = int(f.read())
        nproc = pid_max if nproc == resource.RLIM_INFINITY else min(nproc, pid_max)
    out = []
    if nofile != resource.RLIM_INFINITY:
        out += ["--ulimit", f"nofile={nofile}:{nofile}"]
    if nproc != resource.RLIM_INFINITY:
        out += ["--ulimit", f"nproc={nproc}:{nproc}"]
    return tuple(out)


def _probe_image(path: str, options: tuple[str, ...]) -> str | None:
    """Import the empty probe image (once); None when done, else why not."""
    rc, _ = _run([path, *options, "image", "inspect", PROBE_IMAGE], timeout=30)
    if rc == 0:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        tar = os.path.join(tmp, "empty.tar")
        with tarfile.open(tar, "w"):
            pass
        rc, out = _run([path, *options, "import", tar, PROBE_IMAGE])
    return None if rc == 0 else f"cannot import a probe image: {out.splitlines()[-1] if out else rc}"


def _try_run(path: str, options: tuple[str, ...], run_options: tuple[str, ...]) -> str | None:
    """Run the probe image: None when the runtime got as far as looking for the program."""
    rc, out = _run([path, *options, "run", "--rm", "--network=none", *run_options, PROBE_IMAGE,
                    "/roost-probe-absent"])
    if rc == 127 or (rc == 1 and "failed to exec pid1: No such file" in out):  # the latter: --init's
        return None
    last = out.splitlines()[-1] if out else f"exit {rc}"
    return last.removeprefix("Error: ")


def probe(podman: str = "podman", docker: str = "docker",
          networks: tuple[str, ...] = ()) -> tuple[Runtime | None, str]:
    """(runtime, why): the first container runtime that runs a container here."""
    whys = []
    limits = host_limits()
    p = shutil.which(podman)
    if p is not None:
        rc, version = _run([p, "-v"], timeout=30)  # DockerVersion: `docker -v`'s line, as HTCondor
        if rc != 0:
            whys.append(f"{p} version failed: {version}")
        else:
            found = [o for o in ("crun", "runc") if shutil.which(o)]
            tries = [(), *[("--runtime", o) for o in found]]
            for options in tries:
                why = _probe_image(p, options)
                for run_options in ((*limits, "--init"), limits):  # --init: a small init as pid 1
                    if why is None:
                        why = _try_run(p, options, run_options)
                        if why is None:
                            how = " ".join((*options, *run_options))
                            return Runtime("podman", p, version.strip(), options, run_options, networks), \
                                f"{p} runs containers ({how})"
                        if "init" not in why:
                            break
                        why = None
                whys.append(f"podman {' '.join(options) or '(default runtime)'}: {why}")
    else:
        whys.append(f"{podman} is not installed (Debian: apt-get install podman)")
    d = shutil.which(docker)
    if d is not None:
        rc, info = _run([d, "info", "--format", "{{.ServerVersion}}"], timeout=30)
        if rc != 0 or not info:
            whys.append(f"docker info failed: {info.splitlines()[-1] if info else rc}")
        else:
            why = _probe_image(d, ())
            version = _run([d, "-v"], timeout=30)[1] or info
            for run_options in (("--init",), ()):
                if why is None:
                    why = _try_run(d, (), run_options)
                    if why is None:
                        return Runtime("docker", d, version.strip(), (), run_options, networks), \
                            f"{d} (server {info.strip()}) runs containers"
                    if "init" not in why:
                        break
                    why = None
            whys.append(f"docker: {why}")
    return None, "; ".join(whys)


PULL_TIMEOUT = 3600.0  # seconds an image pull may take
_present: set[tuple[str, str]] = set()  # (runtime, image) seen here: not looked up again


def user_dir(path: str, user: User, what: str) -> str:
    """``path`` resolved, once the job's ``user`` could reach it: the runtime's client
    runs as root, which would mount any directory (one below another user's 0700
    directory too); ContainerError saying why not."""
    real = os.path.realpath(path)
    try:
        os.close(open_dir(real, user))
    except OSError as e:
        why = e.strerror or str(e)
        raise ContainerError(f"{what} {path}: not a directory the job's user can reach ({why})") from None
    return real


def ensure_image(rt: Runtime, job: ContainerJob, user: User) -> None:
    """Pull the job's image unless the host has it (``docker_pull_policy = always``: pull
    anyway), so that a missing image holds the job with the runtime's reason instead of
    the runtime's exit code (125) passing for the job's; an image directory must be one
    the job's ``user`` reaches. Blocking: on a thread."""
    if job.rootfs:
        user_dir(job.image, user, "container_image")
        return
    key = (rt.path, job.image)
    if not job.pull_always and key in _present:
        return
    if not job.pull_always and _run([rt.path, *rt.options, "image", "inspect", job.image], timeout=60)[0] == 0:
        _present.add(key)
        return
    rc, out = _run([rt.path, *rt.options, "pull", "-q", job.image], timeout=PULL_TIMEOUT)
    if rc != 0:
        last = out.splitlines()[-1] if out else f"exit {rc}"
        raise ContainerError(f"cannot pull image {job.image}: {last.removeprefix('Error: ')}")
    _present.add(key)


def main_pid(rt: Runtime, name: str) -> int | None:
    """The host pid of the container's first process (its process group: what it uses is
    read from /proc, as a vanilla job's); None while it has none (blocking)."""
    rc, out = _run([rt.path, *rt.options, "inspect", "--format", "{{.State.Pid}}", name], timeout=30)
    try:
        pid = int(out.strip()) if rc == 0 else 0
    except ValueError:
        return None
    return pid or None


def pause(rt: Runtime, name: str, on: bool) -> None:
    """Freeze or thaw a job's container (the owner policy's SUSPEND and CONTINUE;
    blocking: the cleaner thread). Stopping the runtime's client stops nothing inside."""
    _run([rt.path, *rt.options, "pause" if on else "unpause", name], timeout=60)


def remove(rt: Runtime, name: str) -> None:
    """Remove a job's container, if it is still there (blocking; the cleaner thread)."""
    _run(rm_argv(rt, name), timeout=60)


def leftover_names(rt: Runtime) -> list[str]:
    """Containers a previous startd started (labelled), running or not (blocking)."""
    rc, out = _run([rt.path, *rt.options, "ps", "--all", "--filter", f"label={LABEL}",
                    "--format", "{{.Names}}"], timeout=60)
    return [n.strip() for n in out.splitlines() if n.strip().startswith("roost-")] if rc == 0 else []


def inside_path(path: str, sandbox: str, target_dir: str | None) -> str:
    """Where a sandbox path appears inside the container."""
    if target_dir and path == sandbox:
        return target_dir
    if target_dir and path.startswith(sandbox + "/"):
        return posixpath.join(target_dir, path[len(sandbox) + 1:])
    return path


# -- the container universe's execute side (execside.py) ------------------------------

def ad(universes: Universes) -> dict[str, object]:
    """HasContainer, HasDocker ... once a runtime has run a container here."""
    return universes.runtime.ad() if universes.runtime is not None else {}


async def detect(host: DetectHost) -> None:
    """Find the runtime (STARTD_DETECT_CONTAINERS); then what a previous startd's jobs
    left in it is removed, before any container job can match here (the adopted jobs'
    containers stay)."""
    cfg, log, u = host.config, host.log, host.universes
    if not cfg.get_bool("STARTD_DETECT_CONTAINERS", True):
        return
    loop = asyncio.get_running_loop()
    networks = tuple(n.strip() for n in (cfg.get_list("DOCKER_NETWORKS", []) or []) if n.strip())
    rt, why = await loop.run_in_executor(None, probe, cfg.get("PODMAN") or "podman", cfg.get("DOCKER") or "docker",
                                         networks)
    if rt is None:
        log.info("containers: not advertised (container and docker jobs will not match): %s", why)
        return
    try:
        u.docker_extra = extra_arguments(cfg.get("DOCKER_EXTRA_ARGUMENTS"))
    except ContainerError as e:
        log.warning("containers: not advertised: %s", e)
        return
    prefix = u.container_name("")
    names = await loop.run_in_executor(None, leftover_names, rt)
    ours = {u.container_name(s.name) for s in host.claims.starters.values()}
    for name in names:
        if name.startswith(prefix) and name not in ours:
            await loop.run_in_executor(None, remove, rt, name)
            log.info("leftover from a previous startd: removed container %s", name)
    u.runtime = rt
    log.info("containers: %s; advertising HasContainer, HasDocker", why)
    host.changed(*host.slots)


async def prepare(spec: JobSpec, universes: Universes, user: User) -> None:
    """The job's image, pulled off the event loop (an image directory ``user`` must reach)."""
    if spec.job_ad is None or universes.runtime is None:
        return
    try:
        job = job_request(spec.job_ad, spec.cmd, spec.args)
        await asyncio.to_thread(ensure_image, universes.runtime, job, user)
    except ContainerError as e:
        raise CommandError(str(e)) from None


def command(spec: JobSpec, universes: Universes, *, exe: str, sandbox: str, sandbox_name: str,
            identity: Identity, user: User, env: dict[str, str], memory_mib: int | None, cpus: int,
            stdin: bool) -> Command:
    """The runtime's ``run`` for the job. The runtime runs as root: the directories it
    mounts that the job chose (its Iwd without file transfer, an image directory) must
    be ones ``user`` reaches."""
    ad, u = spec.job_ad, universes
    assert ad is not None  # the registry gives only a job ad that asks for an image here
    if u.runtime is None:
        raise CommandError("this host has no working container runtime (podman or docker)")
    if not spec.cmd:
        cmd = ""  # the image's own command
    elif spec.transfer and spec.transfer_executable and exe.startswith(sandbox + "/"):
        cmd = exe  # the sandbox is mounted at its own path (or container_target_dir)
    else:
        cmd = spec.cmd  # a program inside the image
    try:
        job = job_request(ad, cmd, spec.args)
        if job.rootfs:
            job = dataclasses.replace(job, image=user_dir(job.image, user, "container_image"))
        mounted = sandbox if spec.transfer else user_dir(spec.iwd, user, "the job's Iwd")
        if mounted != (sandbox if spec.transfer else spec.iwd) and job.target_dir is None:
            if any(c in spec.iwd for c in ":,="):
                raise ContainerError(f"the job's Iwd {spec.iwd}: a path holding : , or = cannot be mounted")
            job = dataclasses.replace(job, target_dir=spec.iwd)  # where the job knows it
        name = u.container_name(sandbox_name)
        argv = run_argv(u.runtime, job, name=name, sandbox=mounted, uid=identity.uid, gid=identity.gid,
                        groups=_groups(identity), env=env, memory_mib=memory_mib, cpus=cpus, stdin=stdin,
                        extra=u.docker_extra, gpus=_gpus(env))
    except ContainerError as e:
        raise CommandError(str(e)) from None
    return Command(argv, u.runtime.path, False, name)


def _gpus(env: dict[str, str]) -> list[int]:
    """The slot's GPUs (``GPU-<index>``, as the startd names them in _CONDOR_AssignedGPUs)."""
    out = []
    for g in env.get("_CONDOR_AssignedGPUs", "").split(","):
        index = g.strip().rpartition("-")[2]
        if index.isdigit():
            out.append(int(index))
    return out


def _groups(identity: Identity) -> list[int]:
    """The supplementary groups a job of its own Owner has (HTCondor's --group-add)."""
    if not identity.real_owner or not identity.name:
        return []
    try:
        return sorted(set(os.getgrouplist(identity.name, identity.gid)))
    except (OSError, KeyError):
        return []
