"""``roost status``: the pool's slots (or schedds, submitters, daemons), as condor_status shows them.

Options follow condor_status: single dash, any unambiguous prefix (``-const``,
``-avail``), ``-constraint`` and ``-sort`` repeatable. The tables themselves are
in ``roost.cli.status_layout``.
"""

from __future__ import annotations

import re
import sys
import time
from typing import Any

from roost.api.collector import Collector
from roost.api.errors import PoolError
from roost.cli import status_layout as lay
from roost.cli.options import FLAG, VALUE, VALUES, Parser, UsageError, collector_for, pool_spec
from roost.cli.q_layout import terminal_width
from roost.cli.restrict import error_line, split_af
from roost.vocabulary import SlotState

PROG = "roost status"
SPEC = {
    "constraint": (VALUE, "only ads for which EXPR is true (repeatable: all must hold)"),
    "af": (VALUES, "-af[:jlht,r] ATTR|EXPR ...: values of each ad, one line per ad"),
    "format": (VALUE, "-format FMT EXPR: printf FMT of EXPR for each ad (repeatable)"),
    "long": (FLAG, "the whole ads"),
    "json": (FLAG, "the ads as a JSON array"),
    "xml": (FLAG, "the ads as HTCondor's XML ClassAd document"),
    "attributes": (VALUE, "with -long/-json: only these attributes (comma separated)"),
    "totals": (FLAG, "only the summary table"),
    "limit": (VALUE, "at most N ads"),
    "sort": (VALUE, "order by EXPR (repeatable; 'none' keeps the collector's order)"),
    "wide": (FLAG, "do not narrow columns to the screen"),
    "print-format": (VALUE, "lay the ads out as this custom print format file (.cpf) says"),
    "compact": (FLAG, "a line per machine (partitionable slots with their dynamic slots)"),
    "nocompact": (FLAG, "undo -compact"),
    "avail": (FLAG, "only slots that can take a job now (Unclaimed, with cpus and memory)"),
    "claimed": (FLAG, "only claimed slots, with their users"),
    "run": (FLAG, "the same as -claimed (with -schedd: schedds running jobs)"),
    "state": (FLAG, "slots with their state and activity times"),
    "startd": (FLAG, "slots (the default)"),
    "slots": (FLAG, "slots (the default)"),
    "schedd": (FLAG, "schedds and their job counts"),
    "submitters": (FLAG, "submitters and their job counts"),
    "negotiator": (FLAG, "negotiators and their last cycle"),
    "collector": (FLAG, "collectors"),
    "master": (FLAG, "masters"),
    "any": (FLAG, "every ad, of every type"),
    "flock": (FLAG, "the pools this pool flocks with: lent, borrowed, the ledger (docs/flocking.md)"),
    "web": (FLAG, "print the web dashboard's URL (docs/web.md)"),
    "annex": (FLAG, "the annexes `roost annex` made: pending in Slurm, running, ended (docs/annex.md)"),
    "direct": (VALUE, "accepted for condor_status's sake: the collector answers for every daemon"),
    **pool_spec(None),
}
ALIASES = {"pr": "print-format", "available": "avail", "autoformat": "af", "l": "long", "total": "totals", "cons": "constraint"}
_REPEATED = ("constraint", "sort", "format")
ANY_TYPES = ["Collector", "Master", "Negotiator", "Scheduler", "Submitter", "Machine"]
AVAIL = 'State == "Unclaimed" && Cpus > 0 && Memory > 0'
CLAIMED = 'State == "Claimed"'
COMPACT = "PartitionableSlot =?= true || DynamicSlot =!= true"


def _parse(argv: list[str]) -> tuple[Any, dict[str, list[Any]]]:
    """Options, plus the repeatable ones in order (the Parser keeps only the last)."""
    parser = Parser(PROG, "[options] [NAME ...]", SPEC, ALIASES)
    rest: list[str] = []
    many: dict[str, list[Any]] = {k: [] for k in _REPEATED}
    i = 0
    while i < len(argv):
        a = argv[i]
        word = a.lstrip("-")
        name = None
        if a.startswith("-") and len(a) > 1 and word and not word[0].isdigit():
            try:
                name = parser._resolve(word)
            except UsageError:
                name = None
        if name in _REPEATED:
            want = 2 if name == "format" else 1
            if len(argv) - i - 1 < want:
                raise UsageError(f"option -{name} needs {'FMT EXPR' if want == 2 else 'a value'}")
            vals = argv[i + 1:i + 1 + want]
            many[name].append(tuple(vals) if want == 2 else vals[0])
            i += 1 + want
            continue
        rest.append(a)
        i += 1
    return parser.parse(rest), many


def main(argv: list[str]) -> int:
    argv, af_flags = split_af(argv)
    try:
        opts, many = _parse(argv)
        limit = None
        if opts.limit is not None:
            if not str(opts.limit).isdigit():
                raise UsageError(f"-limit takes a number of ads, not {opts.limit!r}")
            limit = int(opts.limit) or None  # condor_status: 0 is no limit
    except UsageError as e:
        print(f"{PROG}: {e}\n(`{PROG} -help` lists the options)", file=sys.stderr)
        return 2
    if opts.web:
        return _web_url()
    if opts.annex:
        # lazy: only -annex reads annex records and asks Slurm
        from roost.cli.status_annex import main_annex

        return main_annex(opts.pool, bool(opts.json))
    if opts.flock:
        # lazy: only -flock asks the negotiator
        from roost.cli.status_flock import main_flock

        return main_flock(opts.pool, bool(opts.json))
    print_format = None
    if opts.values["print-format"]:
        # lazy: only -print-format parses print format files (and needs the ClassAd library)
        from roost.cli.print_format import load

        try:
            print_format = load(str(opts.values["print-format"]), status=True)
        except ValueError as e:
            print(f"{PROG}: {e}", file=sys.stderr)
            return 1
    kinds = [k for k, on in (("Scheduler", opts.schedd), ("Submitter", opts.submitters),
                             ("Negotiator", opts.negotiator), ("Collector", opts.collector),
                             ("Master", opts.master), ("Any", opts.any)) if on]
    if len(kinds) > 1:
        print(f"{PROG}: give one of -schedd, -submitters, -negotiator, -collector, -master, -any",
              file=sys.stderr)
        return 2
    kind = kinds[0] if kinds else "Machine"
    compact = bool(opts.compact) and not opts.nocompact and print_format is None
    claimed = bool(opts.claimed or (opts.run and kind == "Machine"))
    if compact and kind != "Machine":
        print(f"{PROG}: -compact shows slots; it does not go with -{kind.lower()}", file=sys.stderr)
        return 2
    view = "custom" if (opts.af or many["format"] or opts.long or opts.json or opts.xml) else \
        ("claimed" if claimed else "state" if opts.state else "normal")
    totals_view = view
    if print_format is not None:
        # the file's columns; the totals (SUMMARY STANDARD) those of the view it replaces
        view, totals_view = "custom", ("claimed" if claimed else "state" if opts.state else "normal")
    constraints = [f"({c})" for c in many["constraint"]]
    if print_format is not None and print_format.where:  # the file's WHERE adds to the constraint
        constraints.append(f"({print_format.where})")
    if kind == "Machine":
        if opts.avail:
            constraints.append(AVAIL)
        if claimed and not compact:
            constraints.append(CLAIMED)
        if compact and view != "custom":
            # -claimed's own test (CLAIMED_COMPACT) needs NumDynamicSlots, which roost's
            # partitionable slots do not advertise: it is applied below, with their children
            constraints.append(COMPACT)
    if opts.positional:
        # lazy: only NAME arguments need ClassAd string quoting (roost.classad, ~4 ms)
        from roost.classad.unparse import quote

        constraints.append("(" + " || ".join(f"Name == {quote(n)} || Machine == {quote(n)}"
                                             for n in opts.positional) + ")")
    constraint = " && ".join(constraints) or None
    grouped = kind == "Machine" and bool(opts.totals) and not compact and print_format is None \
        and view in ("normal", "state") and limit is None
    try:
        col = Collector(address=collector_for(opts.pool))
        if grouped:
            # the totals count states: a few distinct rows of four attributes, with their counts
            ads, counts = col.query_grouped("Machine", constraint, lay.TOTALS_ATTRS[view])
            if ads:
                sys.stdout.write("\n" + lay.slot_totals(ads, state_view=view == "state", wide=bool(opts.wide),
                                                        counts=counts))
            return 0
        types = ANY_TYPES if kind == "Any" else [kind]
        # a print format's functions and the totals read more than its columns name: whole ads
        projection = None if print_format is not None else \
            _projection(kind, view, compact, opts.af or [], many, bool(opts.totals))
        dynamic: list[dict[str, Any]] = []
        if compact and view != "custom" and constraints == [COMPACT]:
            # one query, split here: the slots a line shows and the dynamic slots folded into them
            ads, dynamic = _split_compact(col.query_objs("Machine", None, projection))
            if ads is None:  # an expression where a flag should be: the collector evaluates it
                ads = col.query_objs("Machine", constraint, projection)
                dynamic = col.query_objs("Machine", "DynamicSlot =?= true", projection)
        else:
            ads = [a for t in types for a in col.query_objs(t, constraint, projection)]
            if compact and view != "custom":
                dynamic = col.query_objs("Machine", "DynamicSlot =?= true", projection)
        if compact and view != "custom" and claimed:
            ads = [a for a in ads if _claimed_compact(a, dynamic)]
    except (PoolError, ValueError) as e:
        print(error_line(PROG, e), file=sys.stderr)
        return 1
    try:
        ads = _sort(ads, many["sort"], compact)
    except ValueError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    if limit is not None:
        ads = ads[:limit]
    out = sys.stdout
    if print_format is not None:
        # condor_status: headings even with no ads; the totals after a blank line, with ads
        width = None if opts.wide else terminal_width()
        out.write(print_format.render(ads, time.time(), width - 1 if width else None))
        if ads and not print_format.nosummary:
            out.write(_table(ads, [], kind, totals_view, False, bool(opts.wide), True))
        return 0
    if many["format"]:
        # lazy: only -format prints printf conversions
        from roost.cli import printf

        out.write(printf.text(many["format"], ads))
        return 0
    if view == "custom":
        # lazy: only -af/-long/-json print ads; adtext compiles a regex on import (~1 ms)
        from roost.cli import adtext

        if opts.attributes and (opts.long or opts.json or opts.xml):
            keep = {a.strip().lower() for a in str(opts.attributes).split(",") if a.strip()}
            ads = [{k: v for k, v in a.items() if k.lower() in keep} for a in ads]
        if opts.xml:
            out.write(adtext.xml_text(ads))
            return 0
        out.write(adtext.ads_text(ads, json=bool(opts.json), long=bool(opts.long), af=opts.af or None,
                                  af_flags=af_flags))
        return 0
    if not ads:
        return 0
    out.write(_table(ads, dynamic, kind, view, compact, bool(opts.wide), bool(opts.totals)))
    return 0


_SLOT_ATTRS = ["Name", "Machine", "OpSys", "Arch", "State", "Activity", "CondorLoadAvg", "Memory",
               "EnteredCurrentActivity", "MyCurrentTime", "LastHeardFrom", "OCU", "SlotBackfill",
               "PartitionableSlot", "DynamicSlot"]
_VIEW_ATTRS = {"claimed": ["RemoteUser", "ClientMachine", "LoadAvg", "Mips", "KFlops"],
               "state": ["Cpus", "KeyboardIdle", "EnteredCurrentState"]}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DIGITS = re.compile(r"(\d+)")


#: what -compact's lines, its folding of slots and its totals read (status_layout)
_COMPACT_ATTRS = ["Name", "Machine", "SlotTypeID", "SlotType", "State", "Activity", "Cpus", "Memory",
                  "PartitionableSlot", "DynamicSlot", "NumDynamicSlots", "RemoteUser", "RecentJobStarts",
                  "Arch", "OpSys", "OpSysAndVer", "OpSysShortName", "TotalSlotCpus", "TotalSlotGPUs",
                  "TotalSlotMemory", "TotalLoadAvg", "TotalCpus", "SlotBackfill", "ChildState"]


def _projection(kind: str, view: str, compact: bool, af: list[str], many: dict[str, list[Any]],
                totals: bool = False) -> list[str] | None:
    """The attributes the view needs (None: whole ads), so a big pool's ads stay small on the
    wire (condor_status sends a projection too)."""
    if kind != "Machine" or (view == "custom" and not (af or many["format"])) or (compact and view == "custom"):
        return None
    exprs = list(af) + [e for _, e in many["format"]] + list(many["sort"])
    if not all(_IDENT.fullmatch(e) for e in exprs):
        return None  # an expression may read any attribute
    if view == "custom":
        return ["Name", "Machine", *exprs]
    if compact:
        return [*_COMPACT_ATTRS, *exprs]
    if totals and view == "claimed":
        return [*lay.TOTALS_ATTRS["claimed"], *exprs]
    return [*_SLOT_ATTRS, *_VIEW_ATTRS.get(view, []), *exprs]


def _split_compact(ads: list[dict[str, Any]]) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]]]:
    """Slot ads as -compact's two queries would have them: those COMPACT holds for, and the
    dynamic slots (``DynamicSlot =?= true``). (None, []) when a flag is an expression, which
    only the collector can evaluate."""
    rows, dynamic = [], []
    for a in ads:
        p, d = lay.attr("PartitionableSlot")(a), lay.attr("DynamicSlot")(a)
        if isinstance(p, str) or isinstance(d, str):
            return None, []
        if d is True:
            dynamic.append(a)
        if p is True or d is not True:
            rows.append(a)
    return rows, dynamic


def _claimed_compact(ad: dict[str, Any], dynamic: list[dict[str, Any]]) -> bool:
    """condor_status -compact -claimed's rows: claimed static slots, and partitionable
    slots with dynamic slots (counted by NumDynamicSlots, or found among ``dynamic``)."""
    if ad.get("PartitionableSlot") is True:
        n = ad.get("NumDynamicSlots")
        return (isinstance(n, int) and n > 0) or any(d.get("Machine") == ad.get("Machine") for d in dynamic)
    return ad.get("State") == SlotState.CLAIMED


def _sort(ads: list[dict[str, Any]], keys: list[str], compact: bool) -> list[dict[str, Any]]:
    """condor_status's order: ``-sort`` keys in turn, then Machine and Name (none: as they came)."""
    if any(k.lower() in ("false", "0", "no", "none") for k in keys):
        return ads
    keys = keys or ["Machine", "Name"]
    if compact and keys[0].lower() != "machine":
        keys = ["Machine", *keys]
    exprs = [k for k in keys if not _IDENT.fullmatch(k)]
    if exprs:
        # lazy: the ClassAd library only for sort keys that are expressions (~25 ms)
        from roost.classad import ExprTree
        from roost.classad.errors import ClassAdSyntaxError

        for e in exprs:
            try:
                ExprTree(e)
            except ClassAdSyntaxError as err:
                raise ValueError(f"-sort {e!r} does not parse: {err}") from None

    getters = {k: lay.attr(k) for k in keys if k not in exprs}  # made once, not once per ad

    def key(ad: dict[str, Any]) -> tuple[Any, ...]:
        out: list[Any] = []
        cache: list[Any] = []
        for k in keys:
            if k in exprs:
                # lazy: the ClassAd library only for expression keys (~25 ms)
                from roost.classad import ExprTree
                from roost.cli.adtext import to_classad

                if not cache:
                    cache.append(to_classad(ad))
                try:
                    v = ExprTree(k).eval(cache[0])
                except Exception:
                    v = None
            else:
                v = getters[k](ad)
            out.append(_sort_key(v, k.lower() == "name"))
        return tuple(out)
    return sorted(ads, key=key)


def _sort_key(v: Any, natural: bool) -> tuple[Any, ...]:
    """Undefined first, then numbers, then strings (case-insensitively, as condor_status;
    slot2 before slot10 in names)."""
    if isinstance(v, bool):
        return (1, int(v), ())
    if isinstance(v, (int, float)):
        return (1, v, ())
    if isinstance(v, str):
        low = v.lower()
        parts = tuple((0, int(t), "") if t.isdigit() else (1, 0, t) for t in _DIGITS.split(low)) \
            if natural else ((1, 0, low),)
        return (2, 0, parts)
    return (0, 0, ())


def _table(ads: list[dict[str, Any]], dynamic: list[dict[str, Any]], kind: str, view: str,
           compact: bool, wide: bool, totals_only: bool) -> str:
    rows, summary = "", ""
    if kind == "Machine":
        if compact:
            folded = lay.fold_compact(ads, dynamic)
            cols = lay.claimed_compact_cols() if view == "claimed" else lay.compact_cols()
            rows = lay.render(folded, cols)
            counted = [a for a in ads if not (a.get("PartitionableSlot") is True
                                              and not (a.get("Cpus") and a.get("Memory")))]
            # a dynamic slot counts under its partitionable slot's platform (condor rolls up ChildState)
            parents = {(a.get("Machine"), a.get("SlotTypeID")): a for a in ads if a.get("PartitionableSlot") is True}
            for d in dynamic:
                t = d.get("SlotTypeID")
                p = parents.get((d.get("Machine"), -t if isinstance(t, int) else t)) or \
                    parents.get((d.get("Machine"), t))
                if p is not None:
                    counted.append({**d, **{k: p.get(k) for k in ("Arch", "OpSys", "OpSysAndVer")}})
            summary = lay.slot_totals(counted, wide=wide, key=lay.platform)
        elif view == "claimed":
            rows, summary = lay.render(ads, lay.run_cols()), lay.run_totals(ads, wide=wide)
        elif view == "state":
            rows, summary = lay.render(ads, lay.state_cols()), lay.slot_totals(ads, state_view=True, wide=wide)
        else:
            rows, summary = lay.render(ads, lay.normal_cols(wide)), lay.slot_totals(ads, wide=wide)
    elif kind == "Scheduler":
        rows, summary = lay.render(ads, lay.schedd_cols()), lay.job_totals(ads, schedd=True, wide=wide)
    elif kind == "Submitter":
        rows, summary = lay.render(ads, lay.submitter_cols()), lay.job_totals(ads, schedd=False, wide=wide)
    elif kind == "Negotiator":
        rows = lay.render(ads, lay.negotiator_cols(_date))
    elif kind == "Collector":
        rows = lay.render(ads, lay.collector_cols())
    elif kind == "Master":
        rows = lay.render(ads, lay.master_cols())
    else:
        rows = lay.render(ads, lay.any_cols())
    if totals_only:
        return "\n" + summary if summary else ""
    return rows + ("\n" + summary if summary else "")


def _date(t: Any) -> str:
    """``PRINTAS DATE``: ``11/26 04:29`` in local time."""
    lt = time.localtime(t)
    return f"{lt.tm_mon:>2}/{lt.tm_mday:<2} {lt.tm_hour:02d}:{lt.tm_min:02d}"


def _web_url() -> int:
    """``-web``: the dashboard's URL, from the address file its daemon writes on this host."""
    # lazy: only -web reads the run directory
    from roost.api.home import pool_home, read_address, run_path

    home = pool_home()
    addr = read_address(run_path(home, "web.address"))
    if addr is None:
        print(f"roost status: no web dashboard is running here (ROOST_HOME={home}; "
              "WEB in DAEMON_LIST starts one)", file=sys.stderr)
        return 1
    print(f"http://{addr}/")
    return 0
