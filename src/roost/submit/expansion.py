"""Expanding one queue statement into procs: the hot path of a large submission.

Every command handler runs once for the first proc, recording which submit
commands and attributes it reads; only the handlers that depend on per-proc
macros (directly, or via an attribute another such handler wrote) run again.
Handlers fed only by numeric live variables (ProcId, Step, Row, numeric item
values...) are run once more on sentinels and become attribute templates, so
most procs cost a dict and a few ``str.format_map`` calls.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from roost.submit import commands
from roost.submit.builder import _LAZY, BuildContext, Builder, ProcBuilder
from roost.submit.errors import SubmitError
from roost.submit.jobads import ClusterSubmission
from roost.submit.macros import BUILTIN_LIVE, Expander, Template, classad_number, probe_template
from roost.submit.queue import QueueSpec
from roost.submit.requirements import h_require_gpus, h_requirements
from roost.submit.values import AttrValue, Expr
from roost.universes import registry

HANDLERS: list[commands.Handler] = [*commands.HANDLERS, h_require_gpus, h_requirements]


@dataclass
class QueueBlock:
    """One queue statement and the submit hash as it stood there."""

    macros: dict[str, str]
    lines: dict[str, int]
    keys: list[str]
    spec: QueueSpec
    count: int
    items: list[dict[str, str]] | None


def block_procs(b: QueueBlock) -> int:
    if b.items is None:
        return b.count
    n = len(b.items)
    return b.count * sum(1 for i in range(n) if b.spec.selected(i, n))


def _base_ad(cluster_id: int, ctx: BuildContext) -> dict[str, AttrValue]:
    """The attributes condor_submit puts in every job before any command."""
    return {
        "MyType": "Job",
        "TargetType": "Machine",
        "ClusterId": cluster_id,
        "QDate": ctx.qdate,
        "Owner": ctx.owner if ctx.owner else Expr("undefined"),
        "RemoteWallClockTime": 0.0,
        "RemoteUserCpu": 0.0,
        "RemoteSysCpu": 0.0,
        "CumulativeRemoteUserCpu": 0.0,
        "CumulativeRemoteSysCpu": 0.0,
        "ExitStatus": 0,
        "NumCkpts": 0,
        "NumJobStarts": 0,
        "NumJobCompletions": 0,
        "NumRestarts": 0,
        "NumSystemHolds": 0,
        "CommittedTime": 0,
        "CommittedSlotTime": 0,
        "CumulativeSlotTime": 0,
        "TotalSuspensions": 0,
        "LastSuspensionTime": 0,
        "CumulativeSuspensionTime": 0,
        "CommittedSuspensionTime": 0,
        "ExitBySignal": False,
        "CompletionDate": 0,
        "CurrentHosts": 0,
        "MinHosts": 1,
        "MaxHosts": 1,
    }


def expand_block(block: QueueBlock, cluster: ClusterSubmission, ctx: BuildContext, used: set[str]) -> None:
    item_vars = [v.lower() for v in (block.spec.vars if block.items is not None else [])]
    live_names = list(BUILTIN_LIVE) + [v for v in item_vars if v not in BUILTIN_LIVE]
    # a queue variable is a submit command for its procs (``queue input, arguments from ...``
    # sets In and Args), winning over the same command written above, as in condor_submit
    macros = dict(block.macros)
    for v in item_vars:
        if v in macros or commands.is_known_key(v) or v.startswith(("my.", "request_")):
            macros[v] = f"$({v})"  # (only these: every other variable is read through $())
    universe = registry.named(macros.get("universe", "") or "vanilla")
    parallel = universe is not None and universe.node_macro  # $(Node): each node's number
    defaults = _defaults(ctx)  # read-only, so one dict serves every proc's expander
    exp = Expander(macros, env=ctx.env, cwd=ctx.cwd, evaluate=classad_number, defaults=defaults)

    # classify every command once: static text, a template, or full per-proc expansion
    static: dict[str, str] = {}
    per_proc: dict[str, Template | None] = {}
    for low in macros:
        try:
            probe, tmpl, live = probe_template(macros[low], exp, live_names)
        except SubmitError as e:
            raise SubmitError(e.message, file=ctx.file, line=block.lines.get(low, 0)) from None
        used |= exp.used
        if live:
            per_proc[low] = tmpl
        else:
            static[low] = probe

    # one generator for the block, so $RANDOM_INTEGER() differs from proc to proc (seeded: reproducible)
    rng = random.Random(cluster.cluster_id * 1_000_003 + len(cluster.proc_diffs))

    def full(low: str, live: dict[str, str]) -> str | None:
        e = Expander(macros, env=ctx.env, live=live, cwd=ctx.cwd, evaluate=classad_number, defaults=defaults,
                     rng=rng)
        try:
            return e.lookup(low)
        except SubmitError as err:
            raise SubmitError(err.message, file=ctx.file, line=block.lines.get(low, 0)) from None

    def values_for(live: dict[str, str]) -> Callable[[str], str | None]:
        def get(low: str) -> str | None:
            v = static.get(low)
            if v is not None:
                return v
            if low in per_proc:
                t = per_proc[low]
                return t.render(live) if t is not None else full(low, live)
            return None
        return get

    procs = _proc_items(block, cluster.cluster_id, len(cluster.proc_diffs), item_vars, parallel)
    first_cluster_block = not cluster.cluster_ad
    # first proc of the block: run every handler, recording what each reads and writes
    live0 = dict(next(procs))
    base = _base_ad(cluster.cluster_id, ctx)
    b = Builder(values_for(live0), block.lines, ctx, base=base, keys=block.keys)
    dependent: list[tuple[commands.Handler, set[str], bool]] = []
    tainted_attrs: set[str] = set()
    for h in HANDLERS:
        b.keys_read = set()
        b.attrs_read = set()
        before = dict(b.ad)
        h(b)
        written = {k for k, v in b.ad.items() if before.get(k, _MISSING) is not v}
        live_keys = b.keys_read & per_proc.keys()
        via_attrs = bool(b.attrs_read & tainted_attrs)
        if live_keys or via_attrs:
            dependent.append((h, live_keys, via_attrs))
            tainted_attrs |= written
    cluster.warnings.extend(b.warnings)
    block_ad = dict(base)
    block_ad.update(b.ad)
    if first_cluster_block:
        cluster.cluster_ad = block_ad
        block_extra: dict[str, AttrValue] = {}
    else:
        block_extra = {k: v for k, v in block_ad.items() if cluster.cluster_ad.get(k, _MISSING) != v}
    cluster_ad = cluster.cluster_ad

    diffs = cluster.proc_diffs
    first_diff: dict[str, AttrValue] = {"ProcId": int(live0["procid"])}
    first_diff.update(block_extra)
    diffs.append(first_diff)
    # every further proc: only the dependent handlers, over the merged block ad
    merged = dict(cluster_ad)
    merged.update(block_extra)
    lines = block.lines
    keys = block.keys
    templates = [(k, t) for k, t in per_proc.items() if t is not None]
    lazies = [k for k, t in per_proc.items() if t is None]
    base_vals = {k: v for k, v in static.items() if v}
    for k in lazies:
        base_vals[k] = _LAZY
    numeric = set(_NUMERIC_LIVE)
    if _NUMERIC_LIVE and block.items:
        for v in block.spec.vars:
            if all(_NUMBER_RE.match(it.get(v, "")) for it in block.items):
                numeric.add(v.lower())
    fast, slow = _attribute_templates(dependent, per_proc, base_vals, live0, b.ad, lines, ctx, merged, keys,
                                      live_names, frozenset(numeric))
    # a value built only from $(Cluster) is the same for every proc: it lives in the cluster ad
    fast = [(a, t, e) for a, t, e in fast if not set(t.slots) <= {"cluster", "clusterid"}]
    pid = int(live0["procid"]) + 1
    if not fast and not slow and not block_extra and block.items is None:
        # nothing varies from proc to proc (`queue 1000000` of one command): each later
        # proc is its ProcId alone, made without rendering its live variables
        diffs.extend([{"ProcId": p} for p in range(pid, pid + block.count - 1)])
        return
    for live in procs:
        d: dict[str, AttrValue] = {"ProcId": pid}
        pid += 1
        if block_extra:
            d.update(block_extra)
        for attr, t, is_expr in fast:
            v = t.render(live)
            d[attr] = Expr(v) if is_expr else v
        if slow:
            vals = base_vals.copy()
            for k, t in templates:
                vals[k] = t.render(live)
            # live is used before the next proc replaces its values, so binding it is safe
            lazy_fn = functools.partial(full, live=live) if lazies else _no_lazy
            pb = ProcBuilder(vals, lines, ctx, merged, keys, lazy_fn)
            for attr, _, _ in fast:  # a re-run handler reads this proc's templated attributes
                pb.ad[attr] = d[attr]  # (UserLog under a per-proc Iwd), not proc 0's
            for h in slow:
                h(pb)
            for k, v in pb.ad.items():
                if cluster_ad.get(k, _MISSING) != v or k in block_extra:
                    d[k] = v
        diffs.append(d)


#: live variables whose values are decimal numbers, so a sentinel stands in for them faithfully
_NUMERIC_LIVE = frozenset({"cluster", "clusterid", "process", "procid", "step", "itemindex", "row"})
#: item values that are unsigned decimal numbers qualify too (a numeric parameter sweep)
_NUMBER_RE = re.compile(r"\d+(\.\d+)?\Z")


def _no_lazy(low: str) -> str | None:
    return None


def _attribute_templates(dependent, per_proc, base_vals, live0, first_ad, lines, ctx, merged, keys, live_names, numeric):  # type: ignore[no-untyped-def]
    """Split dependent handlers into attribute templates and handlers to re-run.

    A handler whose per-proc inputs are templates over numeric live variables
    only (ClusterId, ProcId, Step, Row...) is run once on sentinel values; the
    attributes it writes become templates over the same variables. Numbers
    contain no whitespace, quotes or path separators, so a sentinel takes the
    same path through the handler's logic as every real value would; the
    result is checked against the real first proc before it is trusted.
    """
    fast: list[tuple[str, Template, bool]] = []
    slow: list[commands.Handler] = []
    for h, live_keys, via_attrs in dependent:
        ok = not via_attrs and not ((ctx.file_size or ctx.check_path) and h in commands.READS_FILES) and all(
            per_proc.get(k) is not None and set(per_proc[k].slots) <= numeric for k in live_keys
        )
        got: list[tuple[str, Template, bool]] = []
        if ok:
            vals = dict(base_vals)
            for k in live_keys:
                t = per_proc[k]
                vals[k] = "".join(p + (f"\x01{live_names.index(t.slots[i])}\x02" if i < len(t.slots) else "")
                                  for i, p in enumerate(t.parts))
            pb = ProcBuilder(vals, lines, ctx, merged, keys, _no_lazy)
            try:
                h(pb)
            except SubmitError:
                ok = False
            if ok:
                for attr, v in pb.ad.items():
                    if isinstance(v, str) and "\x01" in v:
                        t = Template(v, live_names)
                        if first_ad.get(attr) != t.render(live0):
                            ok = False
                            break
                        got.append((attr, t, isinstance(v, Expr)))
                    elif first_ad.get(attr, _MISSING) != v:
                        ok = False
                        break
        if ok:
            fast.extend(got)
        else:
            slow.append(h)
    return fast, slow


_MISSING = object()


def _defaults(ctx: BuildContext) -> dict[str, str]:
    return {
        "submit_file": ctx.file or "",
        "iwd": ctx.cwd,
        "arch": ctx.arch,
        "opsys": ctx.opsys,
        "submit_time": str(ctx.qdate),
    }


def _proc_items(block: QueueBlock, cluster_id: int, first_proc: int, item_vars: list[str], parallel: bool):  # type: ignore[no-untyped-def]
    """Live variables for each proc of a block, in queue order.

    One dict is updated in place and yielded again: the caller uses it before
    asking for the next proc and keeps no reference (a 100,000-proc cluster
    would otherwise build 100,000 throwaway dicts).
    """
    c = str(cluster_id)
    proc = first_proc
    node = "#pArAlLeLnOdE#" if parallel else ""
    live = {"cluster": c, "clusterid": c, "process": "", "procid": "", "item": "",
            "itemindex": "0", "row": "0", "step": "0", "node": node}
    if block.items is None:
        for step in range(block.count):
            p = str(proc)
            live["process"] = live["procid"] = p
            live["step"] = str(step)
            yield live
            proc += 1
        return
    n = len(block.items)
    lowered = all(v == v.lower() for v in block.spec.vars)
    for ix, item in enumerate(block.items):
        if block.spec.slice is not None and not block.spec.selected(ix, n):
            continue
        live["itemindex"] = live["row"] = str(ix)
        if lowered:
            live.update(item)
        else:
            for k, v in item.items():
                live[k.lower()] = v
        for step in range(block.count):
            p = str(proc)
            live["process"] = live["procid"] = p
            live["step"] = str(step)
            yield live
            proc += 1
