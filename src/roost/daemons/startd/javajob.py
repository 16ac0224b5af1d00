"""Java universe jobs: the host's JVM, found once, and the command line a job runs (the
java universe's execute side, execside.py: ``detect``, ``ad``, ``command``).

The startd advertises ``HasJava``, ``JavaVendor``, ``JavaVersion`` and
``JavaSpecificationVersion`` only when the ``JAVA`` program (HTCondor's knob) runs
here and says what it is (``java -XshowSettings:properties -version``). A java job's
``Arguments`` start with its main class; like HTCondor's starter, roost runs

    JAVA JAVA_CLASSPATH_ARGUMENT <JAVA_CLASSPATH_DEFAULT:jar files> JAVA_EXTRA_ARGUMENTS
         <java_vm_args> MainClass args...

in the sandbox (``.`` on the class path finds the transferred class file). HTCondor puts
its own wrapper class in front of the main class to tell an uncaught exception from an
exit code; roost does not: the job's exit code is the JVM's (1 after an uncaught
exception).
"""

from __future__ import annotations

import asyncio
import os
import posixpath
import shutil
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING

from roost.classad import ClassAd
from roost.daemons.startd.execside import Command, CommandError, DetectHost
from roost.daemons.startd.jobspec import JobSpec
from roost.submit.arglist import ArgSyntaxError, split_v2_raw

if TYPE_CHECKING:
    from roost.daemons.startd.jobcommand import Universes

PROBE_TIMEOUT = 60.0
_PROPERTIES = {"java.vendor": "JavaVendor", "java.version": "JavaVersion",
               "java.specification.version": "JavaSpecificationVersion"}


class JavaError(Exception):
    """The job's java command cannot be built (bad JVM arguments)."""


@dataclass(frozen=True)
class Jvm:
    """The JVM that answered here, and HTCondor's JAVA_* knobs."""

    path: str
    properties: dict[str, str]
    classpath_argument: str = "-classpath"
    classpath_separator: str = ":"
    classpath_default: tuple[str, ...] = (".",)
    extra_arguments: tuple[str, ...] = ()

    def ad(self) -> dict[str, object]:
        out: dict[str, object] = {"HasJava": True}
        for prop, attr in _PROPERTIES.items():
            if prop in self.properties:
                out[attr] = self.properties[prop]
        return out


def parse_properties(text: str) -> dict[str, str]:
    """``name = value`` lines of ``-XshowSettings:properties`` (continuation lines skipped)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        name, eq, value = line.strip().partition(" = ")
        if eq and name in _PROPERTIES:
            out[name] = value.strip()
    return out


def probe(java: str) -> tuple[dict[str, str] | None, str]:
    """(properties, why): whether ``java`` runs here (blocking: a JVM start, ~0.1-0.5 s)."""
    path = shutil.which(java)
    if path is None:
        return None, f"{java} is not installed (Debian: apt-get install default-jre-headless)"
    try:
        got = subprocess.run([path, "-XshowSettings:properties", "-version"], capture_output=True, text=True,
                             timeout=PROBE_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, f"{path} -version did not answer within {PROBE_TIMEOUT:g} s"
    except OSError as e:
        return None, f"cannot run {path}: {e.strerror or e}"
    props = parse_properties(got.stderr + got.stdout)
    if got.returncode != 0 or "java.version" not in props:
        tail = (got.stderr or got.stdout).strip().splitlines()[-1:] or [f"exit {got.returncode}"]
        return None, f"{path} -version failed: {tail[0]}"
    return props, f"{path}: {props.get('java.vendor', '?')} {props['java.version']}"


def make_jvm(path: str, props: dict[str, str], *, classpath_argument: str | None = None,
             separator: str | None = None, default: list[str] | None = None, extra: str | None = None) -> Jvm:
    """A Jvm with the JAVA_CLASSPATH_* and JAVA_EXTRA_ARGUMENTS knobs' values."""
    try:
        extra_args = tuple(split_v2_raw(extra or ""))
    except ArgSyntaxError as e:
        raise JavaError(f"JAVA_EXTRA_ARGUMENTS: {e}") from None
    return Jvm(shutil.which(path) or path, props, classpath_argument or "-classpath", (separator or ":")[0],
               tuple(default) if default else (".",), extra_args)


def vm_args(ad: ClassAd) -> list[str]:
    """java_vm_args: JavaVMArguments (V2) or JavaVMArgs (V1)."""
    v2 = ad.eval("JavaVMArguments") if "JavaVMArguments" in ad else None
    v1 = ad.eval("JavaVMArgs") if "JavaVMArgs" in ad else None
    try:
        if isinstance(v2, str):
            return split_v2_raw(v2)
    except ArgSyntaxError as e:
        raise JavaError(f"JavaVMArguments: {e}") from None
    return v1.split() if isinstance(v1, str) else []


def jar_files(ad: ClassAd, transferred: bool, sandbox: str) -> list[str]:
    """The job's jar_files as paths here: their names in the sandbox when they were sent."""
    v = ad.eval("JarFiles") if "JarFiles" in ad else None
    jars = [j.strip() for j in v.split(",") if j.strip()] if isinstance(v, str) else []
    if transferred:
        return [os.path.join(sandbox, posixpath.basename(j)) for j in jars]
    return jars


def java_argv(jvm: Jvm, jars: list[str], vm: list[str], args: list[str]) -> list[str]:
    """The JVM's command line: class path (defaults, then the jars), extra and job VM
    arguments, then the job's own arguments (main class first)."""
    if not args:
        raise JavaError("a java job's arguments must start with its main class")
    classpath = jvm.classpath_separator.join([*jvm.classpath_default, *jars])
    return [jvm.path, jvm.classpath_argument, classpath, *jvm.extra_arguments, *vm, *args]


# -- the java universe's execute side (execside.py) -----------------------------------

def ad(universes: Universes) -> dict[str, object]:
    """HasJava, JavaVersion ... once the JAVA program has answered."""
    return universes.jvm.ad() if universes.jvm is not None else {}


async def detect(host: DetectHost) -> None:
    """Run JAVA once (STARTD_DETECT_JAVA) and keep the JVM with the JAVA_* knobs."""
    cfg, log = host.config, host.log
    if not cfg.get_bool("STARTD_DETECT_JAVA", True):
        return
    java = cfg.get("JAVA") or "java"
    props, why = await asyncio.get_running_loop().run_in_executor(None, probe, java)
    if props is None:
        log.info("java: not advertised (java universe jobs will not match): %s", why)
        return
    try:
        host.universes.jvm = make_jvm(
            java, props, classpath_argument=cfg.get("JAVA_CLASSPATH_ARGUMENT"),
            separator=cfg.get("JAVA_CLASSPATH_SEPARATOR"), default=cfg.get_list("JAVA_CLASSPATH_DEFAULT", []),
            extra=cfg.get("JAVA_EXTRA_ARGUMENTS"))
    except JavaError as e:
        log.warning("java: not advertised: %s", e)
        return
    log.info("java: %s; advertising HasJava", why)
    host.changed(*host.slots)


def command(spec: JobSpec, universes: Universes, *, sandbox: str, **_: object) -> Command:
    """The JVM's command line for the job, run as the job's user in its sandbox."""
    jvm, ad = universes.jvm, spec.job_ad
    if jvm is None:
        raise CommandError("this host has no working Java (JAVA)")
    assert ad is not None  # the registry gives only a job ad of the java universe here
    try:
        argv = java_argv(jvm, jar_files(ad, spec.transfer, sandbox), vm_args(ad), spec.args)
    except JavaError as e:
        raise CommandError(str(e)) from None
    return Command(argv, jvm.path, True)
