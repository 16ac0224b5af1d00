"""The command a starter runs for a job, by universe: the program itself (vanilla), the
host's JVM (java, javajob.py) or the container runtime (container and docker,
container.py). What the host has is ``Universes``, found once by the startd."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import os
from dataclasses import dataclass, field

from roost.daemons.startd import container, javajob
from roost.daemons.startd.jobspec import Identity, JobSpec
from roost.daemons.userfiles import User

JAVA_UNIVERSE = 10


@dataclass
class Universes:
    """The runtimes this host has (None: none works here; the startd says why in its log)."""

    runtime: container.Runtime | None = None
    jvm: javajob.Jvm | None = None
    docker_extra: list[str] = field(default_factory=list)  # DOCKER_EXTRA_ARGUMENTS
    execute_dir: str = ""

    def ad(self) -> dict[str, object]:
        out: dict[str, object] = {}
        if self.runtime is not None:
            out.update(self.runtime.ad())
        if self.jvm is not None:
            out.update(self.jvm.ad())
        return out

    def container_name(self, sandbox_name: str) -> str:
        """Unique per execute directory: two startds on one host never touch each
        other's containers."""
        tag = hashlib.sha256(self.execute_dir.encode()).hexdigest()[:8]
        return f"roost-{tag}-{sandbox_name}"


@dataclass(frozen=True)
class Command:
    argv: list[str]
    executable: str
    as_job_user: bool  # False: started as the startd's user (the runtime switches inside)
    container: str | None = None  # the container's name, for removal


async def prepare(spec: JobSpec, universes: Universes | None, user: User) -> None:
    """What must be on this host before the job starts: a container job's image (pulled
    off the event loop; an image directory ``user`` must reach; CommandError says why it
    cannot be had)."""
    ad = spec.job_ad
    if ad is None or universes is None or universes.runtime is None or not container.is_container_job(ad):
        return
    try:
        job = container.job_request(ad, spec.cmd, spec.args)
        await asyncio.to_thread(container.ensure_image, universes.runtime, job, user)
    except container.ContainerError as e:
        raise CommandError(str(e)) from None


class CommandError(Exception):
    """This host cannot run the job as its ad asks (the job's report says why)."""


def command(spec: JobSpec, universes: Universes | None, *, exe: str, sandbox: str, sandbox_name: str,
            identity: Identity, user: User, env: dict[str, str], memory_mib: int | None, cpus: int,
            stdin: bool) -> Command:
    """What to exec for the job; ``exe`` is its program as found on this machine. A
    container's runtime runs as root: the directories it mounts that the job chose (its
    Iwd without file transfer, an image directory) must be ones ``user`` reaches."""
    ad = spec.job_ad
    u = universes or Universes()
    if ad is not None and container.is_container_job(ad):
        if u.runtime is None:
            raise CommandError("this host has no working container runtime (podman or docker)")
        if not spec.cmd:
            cmd = ""  # the image's own command
        elif spec.transfer and spec.transfer_executable and exe.startswith(sandbox + "/"):
            cmd = exe  # the sandbox is mounted at its own path (or container_target_dir)
        else:
            cmd = spec.cmd  # a program inside the image
        try:
            job = container.job_request(ad, cmd, spec.args)
            if job.rootfs:
                job = dataclasses.replace(job, image=container.user_dir(job.image, user, "container_image"))
            mounted = sandbox if spec.transfer else container.user_dir(spec.iwd, user, "the job's Iwd")
            if mounted != (sandbox if spec.transfer else spec.iwd) and job.target_dir is None:
                if any(c in spec.iwd for c in ":,="):
                    raise container.ContainerError(f"the job's Iwd {spec.iwd}: a path holding : , or = "
                                                   "cannot be mounted")
                job = dataclasses.replace(job, target_dir=spec.iwd)  # where the job knows it
            name = u.container_name(sandbox_name)
            groups = _groups(identity)
            argv = container.run_argv(u.runtime, job, name=name, sandbox=mounted,
                                      uid=identity.uid, gid=identity.gid, groups=groups, env=env,
                                      memory_mib=memory_mib, cpus=cpus, stdin=stdin, extra=u.docker_extra,
                                      gpus=_gpus(env))
        except container.ContainerError as e:
            raise CommandError(str(e)) from None
        return Command(argv, u.runtime.path, False, name)
    if ad is not None and ad.eval("JobUniverse") == JAVA_UNIVERSE:
        if u.jvm is None:
            raise CommandError("this host has no working Java (JAVA)")
        try:
            argv = javajob.java_argv(u.jvm, javajob.jar_files(ad, spec.transfer, sandbox),
                                     javajob.vm_args(ad), spec.args)
        except javajob.JavaError as e:
            raise CommandError(str(e)) from None
        return Command(argv, u.jvm.path, True)
    return Command([exe, *spec.args], exe, True)


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
