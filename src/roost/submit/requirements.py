"""The default clauses condor_submit appends to ``Requirements``.

condor_submit looks at which machine attributes the user's expression
already references and only adds a clause (Arch, OpSys, Disk, Memory, Cpus,
GPUs and other ``Request<Tag>`` resources, file transfer) for an attribute
the user left alone. Like HTCondor, an unqualified name counts as a machine
attribute unless it is one of the few job attributes it checks for
(RequestMemory...), and ``MY.x`` never does.
"""

from __future__ import annotations

from collections.abc import Iterator

from roost.classad.errors import ClassAdSyntaxError
from roost.submit.builder import Builder
from roost.submit.commands import job_universe, wrap_for
from roost.submit.values import Expr

_JOB_SIDE = {"requestmemory", "vm_ckptmac", "requirements"}
_BUILTIN_REQUESTS = {"RequestCpus", "RequestDisk", "RequestMemory"}


def _walk(node: object) -> Iterator[object]:
    # lazy: only reached from references(), which imports the ClassAd parser lazily
    from roost.classad import ast

    if isinstance(node, ast.Node):
        yield node
        if isinstance(node, ast.AttrRef):
            if node.base is not None:
                yield from _walk(node.base)
            return
        for f in node._fields:
            yield from _walk(getattr(node, f, None))
    elif isinstance(node, tuple | list):
        for x in node:
            yield from _walk(x)


def references(text: str) -> tuple[set[str], set[str]]:
    """(job refs, machine refs), lower-cased, of a Requirements expression."""
    # lazy: the ClassAd parser (~12 ms) only for requirements; `roost submit` is a new process each time
    from roost.classad import ast
    from roost.classad.parser import parse_expr

    job: set[str] = set()
    machine: set[str] = set()
    for n in _walk(parse_expr(text)):
        if not isinstance(n, ast.AttrRef):
            continue
        base = n.base
        if base is None:
            if n.lname in ("my", "target"):
                continue
            (job if n.lname in _JOB_SIDE else machine).add(n.lname)
        elif isinstance(base, ast.AttrRef) and base.base is None:
            if base.lname == "target":
                machine.add(n.lname)
            elif base.lname == "my":
                job.add(n.lname)
    return job, machine


def _number(v: object) -> float | None:
    if isinstance(v, bool) or isinstance(v, Expr):
        return None
    if isinstance(v, int | float):
        return float(v)
    return None


#: GPU properties a ``require_gpus`` expression can name (the clauses that ``gpus_minimum_*``
#: add are left out when the user's expression already constrains the same property)
_GPU_CLAUSES = (("GPUsMinCapability", "capability", "Capability >= GPUsMinCapability"),
                ("GPUsMaxCapability", "capability", "Capability <= GPUsMaxCapability"),
                ("GPUsMinMemory", "globalmemorymb", "GlobalMemoryMb >= GPUsMinMemory"),
                ("GPUsMinRuntime", "maxsupportedversion", "MaxSupportedVersion >= GPUsMinRuntime"))


def h_require_gpus(b: Builder) -> None:
    """The effective ``RequireGPUs``: ``require_gpus`` and-ed with the ``gpus_minimum_*``
    clauses, as condor_submit makes it after every other GPU attribute is known."""
    if b.lookup("RequestGPUs") is None:
        return
    req = b.lookup("RequireGPUs")
    props: set[str] = set()
    if req is not None:
        try:
            job, machine = references(str(req))
        except ClassAdSyntaxError:
            return  # already refused where require_gpus was read
        props = job | machine
    clauses = [c for attr, prop, c in _GPU_CLAUSES if b.lookup(attr) is not None and prop not in props]
    if not clauses:
        return
    if req is not None:
        clauses.insert(0, wrap_for(str(req), "&&"))
    b.set("RequireGPUs", Expr(" && ".join(clauses)))


def h_requirements(b: Builder) -> None:
    user = b.get("requirements")
    if b.get("MY.Requirements") is not None:
        if user is not None:
            b.warn("MY.Requirements (or +Requirements) overrides requirements; remove one of them", "requirements")
        return
    answer = f"({user})" if user is not None else ""
    universe = job_universe(b)
    if not universe.matchmaking:
        b.set("Requirements", Expr(answer or "true"))
        return
    machine: set[str] = set()
    if answer:
        try:
            job, machine = references(answer)
        except ClassAdSyntaxError as e:
            b.error(f"requirements = {user}: not a valid ClassAd expression ({e.message})", "requirements")
            return
        if "requirements" in job or "requirements" in machine:
            b.error(f"requirements = {user} is circular; did you mean $(Requirements)?", "requirements")
    parts = [answer] if answer else []

    def add(clause: str) -> None:
        parts.append(clause)

    # Arch and OpSys, or what the universe asks instead (HasJava, a container runtime)
    parts.extend(universe.platform(b, machine))
    if "disk" not in machine:
        d = b.lookup("RequestDisk")
        if d is not None:
            n = _number(d)
            if n is None or n > 0:
                if universe.disk_by_version:
                    add('(versionGE(split(TARGET.CondorVersion)[1], "25.12.0") || (TARGET.Disk >= RequestDisk))')
                else:
                    add("(TARGET.Disk >= RequestDisk)")
        else:
            add("(TARGET.Disk >= DiskUsage)")
    elif b.lookup("RequestDisk") is not None:
        add("(TARGET.Disk >= RequestDisk)")
    m = b.lookup("RequestMemory")
    if m is not None:
        n = _number(m)
        if n is None or n > 1.0:
            add("(TARGET.Memory >= RequestMemory)")
    if "cpus" not in machine:
        c = b.lookup("RequestCpus")
        if c is not None:
            n = _number(c)
            if n is None or n > 1.0:
                add("(TARGET.Cpus >= RequestCpus)")
    tags = sorted(
        (a for a in set(b.ad) | set(b.base)
        if a.lower().startswith("request") and len(a) >= 9 and a[7] != "_" and a not in _BUILTIN_REQUESTS
         and b.lookup(a) is not None),
        key=str.lower,  # HTCondor keeps these in a case-insensitive set
    )
    for attr in tags:
        tag = attr[7:]
        if tag.lower() in machine:
            continue
        v = b.lookup(attr)
        if isinstance(v, str) and not isinstance(v, Expr):
            if v:
                add(f"regexp({attr}, TARGET.{tag})")
            continue
        n = _number(v)
        if n is None or n > 0:
            if b.lookup("Require" + tag) is not None:
                # count the host's resources of this kind that satisfy Require<Tag>
                add(f"(countMatches(MY.Require{tag},TARGET.Available{tag}) >= {attr})")
            else:
                add(f"(TARGET.{tag} >= {attr})")
    if universe.transfers_files:
        should = b.lookup("ShouldTransferFiles")
        fsd = "(TARGET.FileSystemDomain == MY.FileSystemDomain)"
        if should == "NO":
            if "filesystemdomain" not in machine:
                add(fsd)
        elif not ({"hasfiletransfer", "hasjobtransferplugins"} & machine):
            xfer = "TARGET.HasFileTransfer"
            if b.lookup("TransferPlugins"):
                xfer = "TARGET.HasJobTransferPlugins"
            extra = ""
            when = b.lookup("WhenToTransferOutput")
            if b.lookup("TransferCheckpoint") is not None or b.lookup("PreserveRelativePaths") is True or when == "ON_SUCCESS":
                extra = ' && versioncmp( split(TARGET.CondorVersion)[1], "8.9.7" ) >= 0'
            methods = sorted({
                f.split("://", 1)[0].lower()
                for f in str(b.lookup("TransferInput") or "").split(",")
                if "://" in f
            })
            for meth in methods:
                extra += f' && stringListIMember("{meth}",TARGET.HasFileTransferPluginMethods)'
            if methods:
                b.set("WantTransferPluginMethods", ",".join(methods))
            if should == "IF_NEEDED" and "filesystemdomain" not in machine:
                add(f"({fsd} || ({xfer}{extra}))")
            else:
                add(f"({xfer}{extra})")
    if b.lookup("DeferralTime") is not None:
        if universe.deferral_needs_startd:
            add("TARGET.HasJobDeferral")
        # matched only from one schedd interval before its prep time until its window closes
        add("(((time() + ScheddInterval) >= (DeferralTime - DeferralPrepTime)) && "
            "(time() < (DeferralTime + DeferralWindow)))")
    if b.lookup("WantFTOnCheckpoint") is True and "hasselfcheckpointtransfers" not in machine:
        add("TARGET.HasSelfCheckpointTransfers")
    method = b.lookup("CheckpointMethod")
    if method is not None:
        if not isinstance(method, str) or method.lower() not in ("criu", "self"):
            b.error(f"checkpoint_method = {method}: use criu (or self, a job that checkpoints itself)",
                    "checkpoint_method")
        if method.lower() == "criu" and "hascriu" not in machine:
            add("TARGET.HasCRIU")  # only hosts where `criu check` passed
    b.set("Requirements", Expr(" && ".join(parts)))
