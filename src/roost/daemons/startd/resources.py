"""What this execute machine has: CPUs, memory, disk, GPUs, platform names.

Measured once when the startd starts; NUM_CPUS, MEMORY, RESERVED_MEMORY
and DISK override what is measured, as in HTCondor.
"""

from __future__ import annotations

import logging
import os
import platform
import shutil
import socket
import subprocess

from roost.config import Config
from roost.core.slots import Machine, Resources

log = logging.getLogger(__name__)

_ARCH = {"X86_64": "X86_64", "AMD64": "X86_64", "AARCH64": "aarch64", "ARM64": "aarch64",
         "I686": "INTEL", "I386": "INTEL", "PPC64LE": "ppc64le"}


def detected_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def detected_memory_mib() -> int:
    """MemTotal from /proc/meminfo (what HTCondor reads), else the page count."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)
    except (ValueError, OSError):
        return 1024


def disk_kib(path: str) -> int:
    """Space free to unprivileged users under ``path`` (the execute directory)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return 0
    return st.f_bavail * st.f_frsize // 1024


def detect_gpus(timeout: float = 5.0) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(ids, names) of NVIDIA GPUs from nvidia-smi; empty when there is none."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return (), ()
    try:
        out = subprocess.run(
            [exe, "--query-gpu=index,name", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=timeout, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError) as e:
        log.warning("nvidia-smi failed, offering no GPUs: %s", e)
        return (), ()
    ids, names = [], []
    for line in out.splitlines():
        index, _, name = line.partition(",")
        if index.strip().isdigit():
            ids.append(f"GPU-{index.strip()}")
            names.append(name.strip())
    return tuple(ids), tuple(names)


def detect_gpu_properties(timeout: float = 5.0) -> dict[str, str]:
    """Each NVIDIA GPU's properties as the ClassAd text HTCondor advertises per GPU
    (``GPUs_GPU_0 = [Id = "GPU-0"; DeviceName = ...; Capability = 9.0; GlobalMemoryMb = ...]``),
    by id; what ``require_gpus`` and ``gpus_minimum_*`` are matched against. Empty when
    nvidia-smi is missing or fails."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return {}
    try:
        out = subprocess.run(
            [exe, "--query-gpu=index,name,compute_cap,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=timeout, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError) as e:
        log.warning("nvidia-smi failed, advertising no GPU properties: %s", e)
        return {}
    props: dict[str, str] = {}
    for line in out.splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) < 4 or not f[0].isdigit():
            continue
        gid = f"GPU-{f[0]}"
        parts = [f'Id = "{gid}"', 'DeviceName = "' + f[1].replace("\\", "").replace('"', "") + '"']
        try:
            parts.append(f"Capability = {float(f[2])!r}")
        except ValueError:
            pass
        if f[3].isdigit():
            parts.append(f"GlobalMemoryMb = {int(f[3])}")
        props[gid] = "[" + "; ".join(parts) + "]"
    return props


def arch() -> str:
    machine = platform.machine().upper()
    return _ARCH.get(machine, machine)


def opsys_version() -> tuple[str, str, int]:
    """(OpSysAndVer, OpSysName, OpSysMajorVer) as HTCondor spells them, e.g. Debian12."""
    try:
        info = platform.freedesktop_os_release()
    except OSError:
        return "LINUX", "Linux", 0
    name = info.get("NAME", "Linux").split()[0]
    ver = info.get("VERSION_ID", "0").split(".")[0]
    major = int(ver) if ver.isdigit() else 0
    return f"{name}{major}", name, major


def machine_name(cfg: Config) -> str:
    return cfg.get("FULL_HOSTNAME") or socket.getfqdn() or socket.gethostname()


def detect(cfg: Config, execute_dir: str, *, gpus: bool = True) -> Machine:
    """The machine the startd offers, after the config's overrides."""
    cpus_seen = detected_cpus()
    mem_seen = detected_memory_mib()
    cpus = cfg.get_int("NUM_CPUS", cpus_seen) or cpus_seen
    memory = (cfg.get_int("MEMORY", mem_seen) or mem_seen) - (cfg.get_int("RESERVED_MEMORY", 0) or 0)
    disk = cfg.get_int("DISK") or disk_kib(execute_dir)
    gpu_ids, gpu_names = detect_gpus() if gpus and cfg.get_bool("STARTD_DETECT_GPUS", True) else ((), ())
    gpu_props = detect_gpu_properties() if gpu_ids else {}
    and_ver, os_name, major = opsys_version()
    name = machine_name(cfg)
    return Machine(
        name=name,
        total=Resources(max(cpus, 1), max(memory, 0), max(disk, 0), gpu_ids),
        arch=arch(),
        opsys="LINUX" if platform.system() == "Linux" else platform.system().upper(),
        opsys_and_ver=and_ver,
        opsys_name=os_name,
        opsys_major_ver=major,
        gpu_names=gpu_names,
        gpu_props=tuple((g, gpu_props[g]) for g in gpu_ids if g in gpu_props),
        detected_cpus=cpus_seen,
        detected_memory=mem_seen,
        uid_domain=cfg.get("UID_DOMAIN") or name,
        filesystem_domain=cfg.get("FILESYSTEM_DOMAIN") or name,
    )
