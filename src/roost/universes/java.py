"""The java universe (10): the job's ``executable`` is its ``.class`` (or ``.jar``) file
and its first argument the main class. As condor_submit, the class file and
``jar_files`` travel as input files and ``Cmd`` becomes ``java``; the execute host's JVM
(``roost.daemons.startd.javajob``, advertised as ``HasJava``) runs ``java -classpath
.:jars ... MainClass args`` in the sandbox. Requirements ask for ``TARGET.HasJava``
instead of the submit host's Arch and OpSys: Java byte code runs anywhere."""

from __future__ import annotations

from roost.universes.base import RunsOn, SubmitBuild, Universe


def _late(b: SubmitBuild, universe: str) -> None:
    """The class file and jar_files as inputs, ``Cmd = "java"``, VM arguments."""
    args = b.lookup("Arguments") or b.lookup("Args")
    if not args or not str(args).strip():
        b.error("universe = java: arguments must name the main class first (arguments = MyClass ...)",
                "arguments" if b.get("arguments") is not None else "universe")
    jars = b.get("jar_files")
    if jars is not None:
        b.set("JarFiles", ",".join(j.strip() for j in jars.split(",") if j.strip()))
    v2 = b.get("java_vm_arguments2")
    v1 = b.get("java_vm_args", "java_vm_arguments")
    if v2 is not None:
        b.set("JavaVMArguments", b.arguments(v2, "java_vm_arguments2", v2=True)[1])
    elif v1 is not None:
        attr, value = b.arguments(v1, "java_vm_args", v2=False)
        b.set("JavaVMArgs" if attr == "Args" else "JavaVMArguments", value)
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


def _platform(b: SubmitBuild, machine: set[str]) -> list[str]:
    return ["TARGET.HasJava"]


UNIVERSE = Universe(
    name="java", number=10, runs_on=RunsOn.SLOT, execute="roost.daemons.startd.javajob",
    summary="a Java class or jar run by the execute host's JVM",
    keys=frozenset("jar_files java_vm_args java_vm_arguments java_vm_arguments2".split()),
    advertises=("HasJava", "JavaVendor", "JavaVersion", "JavaSpecificationVersion"),
    late=_late, platform=_platform,
)
