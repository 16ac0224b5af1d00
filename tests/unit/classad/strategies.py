"""Hypothesis strategies for ClassAd texts: random well-formed expressions and job/machine ads.

Everything generated is *text*, so the same input goes to both libraries.
Functions are drawn from a safe list: deterministic (no time(), random()),
and regular expressions come from a fixed list of patterns that mean the same
in PCRE (HTCondor) and Python's ``re``.
"""

from __future__ import annotations

from hypothesis import strategies as st

NAMES = ["a", "b", "Memory", "Cpus", "Owner", "Arch", "Rank", "x", "Requirements", "l", "r", "s"]
SCOPES = ["", "", "MY.", "TARGET."]

BINARY = [
    "+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "=?=", "=!=", "is", "isnt",
    "&&", "||", "&", "|", "^", "<<", ">>", ">>>",
]  # fmt: skip
UNARY = ["-", "+", "!", "~"]

# name -> arity; deterministic, defined for every argument type (the result may be ERROR)
SAFE_FUNCS = {
    "strcat": 2, "size": 1, "member": 2, "identicalMember": 2, "isUndefined": 1, "isError": 1,
    "isString": 1, "isInteger": 1, "isReal": 1, "isBoolean": 1, "isList": 1, "isClassAd": 1,
    "ifThenElse": 3, "toUpper": 1, "toLower": 1, "substr": 3, "int": 1, "real": 1, "string": 1,
    "bool": 1, "floor": 1, "ceiling": 1, "round": 1, "min": 1, "max": 1, "sum": 1, "avg": 1,
    "strcmp": 2, "stricmp": 2, "pow": 2, "quantize": 2, "join": 2, "stringListMember": 2,
    "stringListSize": 1, "split": 1, "unparse": 1, "versionCmp": 2, "anyCompare": 3,
}  # fmt: skip
REGEX_PATTERNS = ['"^a"', '"b$"', '"a.c"', '"[0-9]+"', '"x|y"', '"(ab)*"', '"A"']


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


ints = st.one_of(
    st.integers(-20, 20),
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([2**63 - 1, 2**31, 2**32, 0]),
).map(str)
reals = st.one_of(
    st.sampled_from(["0.0", "1.5", "-2.25", "1e10", "1e-3", "3.0", "0.1", "1e300"]),
    # only reals HTCondor's 16-digit unparse reads back exactly: roost prints 17 digits where
    # 16 lose the last bit (a documented deviation), which a text comparison would flag
    st.floats(allow_nan=False, allow_infinity=False, width=32).filter(lambda x: float(f"{x:.15E}") == x).map(repr),
)
strings = st.text(alphabet="aAbB xyz019,._-\"\\", max_size=8).map(_quote)
literals = st.one_of(
    ints,
    reals,
    strings,
    st.sampled_from(["true", "false", "undefined", "error", "TRUE", "{}", "[]"]),
)
attr_refs = st.builds(lambda scope, name: scope + name, st.sampled_from(SCOPES), st.sampled_from(NAMES))
leaves = st.one_of(literals, literals, attr_refs)


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    # deferred: keeps the strategy's repr short (otherwise it grows exponentially with depth)
    children = st.deferred(lambda: inner)

    def call(name: str) -> st.SearchStrategy[str]:
        return st.lists(children, min_size=SAFE_FUNCS[name], max_size=SAFE_FUNCS[name]).map(
            lambda args: f"{name}({', '.join(args)})"
        )

    return st.one_of(
        st.builds(lambda a, op, b: f"({a} {op} {b})", children, st.sampled_from(BINARY), children),
        # parenthesised: HTCondor's parser rejects a unary operator right after "?:" ("x ?: -(1)")
        st.builds(lambda op, a: f"({op}({a}))", st.sampled_from(UNARY), children),
        st.builds(lambda c, a, b: f"({c} ? {a} : {b})", children, children, children),
        st.builds(lambda a, b: f"({a} ?: {b})", children, children),
        st.sampled_from(sorted(SAFE_FUNCS)).flatmap(call),
        st.builds(lambda p, s: f"regexp({p}, {s})", st.sampled_from(REGEX_PATTERNS), children),
        st.lists(children, max_size=3).map(lambda xs: "{" + ", ".join(xs) + "}"),
        st.lists(st.tuples(st.sampled_from(NAMES), children), max_size=3, unique_by=lambda t: t[0].lower()).map(
            lambda kv: "[" + "; ".join(f"{k} = {v}" for k, v in kv) + "]"
        ),
        st.builds(lambda a, i: f"({a})[{i}]", children, st.one_of(st.integers(-1, 3).map(str), children)),
        st.builds(lambda a, n: f"({a}).{n}", children, st.sampled_from(NAMES)),
    )


expressions = st.recursive(leaves, _extend, max_leaves=12)

# --- ads -------------------------------------------------------------------------------------

_req_terms = st.sampled_from([
    'TARGET.Arch == "X86_64"', 'TARGET.OpSys == "LINUX"', "TARGET.Memory >= RequestMemory",
    "TARGET.Disk >= RequestDisk", "TARGET.Cpus >= RequestCpus", "TARGET.Memory >= MY.RequestMemory",
    'TARGET.Owner != "mallory"', "MY.LoadAvg < 0.5", "KeyboardIdle > 300", "TARGET.KFlops > 1000",
    "isUndefined(TARGET.Nope)", "TARGET.Nope", 'member(TARGET.Owner, {"alice", "bob"})',
    "TARGET.RequestCpus <= Cpus", "TARGET.RequestMemory <= Memory", 'TARGET.Arch =?= "X86_64"',
    "Start", "TARGET.Requirements", "true", "undefined", "error", '"str"', "1",
])  # fmt: skip
requirements = st.one_of(
    _req_terms,
    st.lists(_req_terms, min_size=2, max_size=5).flatmap(
        lambda terms: st.lists(st.sampled_from(["&&", "&&", "||"]), min_size=len(terms) - 1, max_size=len(terms) - 1).map(
            lambda ops: terms[0] + "".join(f" {o} {t}" for o, t in zip(ops, terms[1:]))
        )
    ),
)
ranks = st.sampled_from([
    "0", "TARGET.KFlops / 1000", "TARGET.Memory", 'TARGET.Owner == "alice" ? 10 : 0', "undefined", "-1.5",
])  # fmt: skip
small = st.sampled_from(["1", "2", "4", "8", "1024", "2048", "4096", "0", "undefined", "2.5", '"4"'])


@st.composite
def job_ads(draw: st.DrawFn) -> str:
    attrs = {
        "MyType": '"Job"',
        "Owner": draw(st.sampled_from(['"alice"', '"bob"', '"mallory"', '"ALICE"', "undefined"])),
        "RequestCpus": draw(small),
        "RequestMemory": draw(small),
        "RequestDisk": draw(small),
        "Requirements": draw(requirements),
        "Rank": draw(ranks),
    }
    if draw(st.booleans()):
        attrs["Memory"] = draw(small)  # a job attribute shadowing a machine one
    return "[" + "; ".join(f"{k} = {v}" for k, v in attrs.items()) + "]"


@st.composite
def machine_ads(draw: st.DrawFn) -> str:
    attrs = {
        "MyType": '"Machine"',
        "Name": '"slot1@node"',
        "Arch": draw(st.sampled_from(['"X86_64"', '"x86_64"', '"ARM64"', "undefined"])),
        "OpSys": draw(st.sampled_from(['"LINUX"', '"WINDOWS"'])),
        "Memory": draw(small),
        "Disk": draw(small),
        "Cpus": draw(small),
        "KFlops": draw(st.sampled_from(["500", "2000000", "undefined"])),
        "LoadAvg": draw(st.sampled_from(["0.1", "0.9", "1"])),
        "KeyboardIdle": draw(st.sampled_from(["0", "1000"])),
        "Start": draw(requirements),
        "Requirements": draw(st.sampled_from(["START", "Start && TARGET.RequestCpus <= Cpus", "true"])),
        "Rank": draw(ranks),
    }
    return "[" + "; ".join(f"{k} = {v}" for k, v in attrs.items()) + "]"


# an ad the generated expressions' bare names resolve in
SCOPE_ADS = st.builds(
    lambda a, b, s: f'[a = {a}; b = {b}; s = {s}; l = {{1, "x", 2.5}}; r = [a = 7; x = a]; Memory = 2048; Cpus = 4]',
    literals,
    expressions,
    strings,
)
