"""Operators and literals, roost.classad against classad2, over every type pair."""

from __future__ import annotations

import pytest
from diff_harness import check_all

# One or more representatives per ClassAd type, as literal expression texts.
TYPED_VALUES: dict[str, list[str]] = {
    "int": ["0", "7", "-3", "9223372036854775807"],
    "real": ["2.5", "0.0", "-1.5", "1e308", 'real("NaN")', 'real("INF")'],
    "string": ['"abc"', '"ABC"', '""', '"10"'],
    "bool": ["true", "false"],
    "undefined": ["undefined"],
    "error": ["error"],
    "list": ["{1, 2}", "{}"],
    "record": ["[a = 1]", "[]"],
    "abstime": ['absTime("2020-01-01T00:00:00Z")', 'absTime("2020-06-01T12:00:00+02:00")'],
    # relTime(<number>): HTCondor turns relTime("1:00:00") into a *real* at parse time (isReltime
    # is false), which test_literals and the function tables cover
    "reltime": ["relTime(3600)", "relTime(-5)"],
}
ALL_VALUES = [v for vs in TYPED_VALUES.values() for v in vs]

BINARY_OPS = [
    "+", "-", "*", "/", "%",
    "<", "<=", ">", ">=", "==", "!=", "=?=", "=!=", "is", "isnt",
    "&&", "||", "&", "|", "^", "<<", ">>", ">>>",
]  # fmt: skip
UNARY_OPS = ["-", "+", "!", "~"]


@pytest.mark.parametrize("op", BINARY_OPS)
def test_binary_operator_every_type_pair(op: str) -> None:
    check_all([f"({a}) {op} ({b})" for a in ALL_VALUES for b in ALL_VALUES])


def test_unary_operators_every_type() -> None:
    check_all([f"{op}({v})" for op in UNARY_OPS for v in ALL_VALUES])


LITERALS = [
    # integers
    "0", "42", "-42", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
    "007", "0x1F", "1_000",
    # reals
    "1.5", "1e3", "1E3", "1.5e-3", ".5", "5.", "1e309", "-1e309", "-0.0", "0.1", "3.141592653589793",
    "1.0e+10", "123456789012345678901234567890",
    # strings and escapes
    '"plain"', '""', '"a\\"b"', '"tab\\there"', '"nl\\nhere"', '"back\\\\slash"', '"\\101\\102"',
    '"\\x41"', '"\\u00e9"', '"é unicode"', '"\\\'"', '"\\0"', '"\\7"', '"\\303\\251"',  # "\377" (not UTF-8): a documented deviation
    # booleans, specials (case-insensitive keywords)
    "true", "false", "TRUE", "False", "undefined", "UNDEFINED", "error", "ERROR",
    # lists and records
    "{}", "{1}", "{1, 2.5, \"x\", true, undefined, error}", "{{1, 2}, {}}",
    "[]", "[a = 1]", "[a = 1; b = a + 1]", "[a = [b = {1, [c = 2]}]]", "[a = 1;]",
    # times
    'absTime("2020-01-01T00:00:00Z")', 'absTime("2020-01-01T00:00:00+05:30")',
    'absTime("2020-01-01")', 'absTime(0)', 'relTime("1d02:03:04")', 'relTime("+01:00")',
    'relTime("-1:00:00")', "relTime(3600.5)", 'relTime("90")',
    # attribute references that resolve to nothing
    "x", "'quoted name'", "MY.x", "TARGET.x", "PARENT.x",
]  # fmt: skip


def test_literals() -> None:
    check_all(LITERALS)


BOOLISH = ["true", "false", "undefined", "error", "1", "0", "2.5", "0.0", '"s"', "{1}", "[a=1]"]


def test_and_or_truth_tables() -> None:
    check_all([f"({a}) {op} ({b})" for op in ("&&", "||") for a in BOOLISH for b in BOOLISH])


def test_conditional_and_elvis() -> None:
    cases = [f"({c}) ? 10 : 20" for c in BOOLISH]
    cases += [f"({c}) ? (1/0) : 20" for c in BOOLISH]  # untaken branch is not evaluated
    cases += [f"({a}) ?: ({b})" for a in BOOLISH for b in ("5", "undefined", "error")]
    cases += ["x ?: 5", "undefined ?: undefined", "(1 ? 2 : 3) ?: 4", "true ? false ? 1 : 2 : 3"]
    check_all(cases)


def test_short_circuit() -> None:
    check_all([
        "false && (1/0)", "true || (1/0)", "false && error", "true || error",
        "error && false", "error || true", "undefined && false", "undefined || true",
        "false && undefined", "true || undefined", "undefined && true", "undefined || false",
        "false && \"s\"", "true && \"s\"", "\"s\" && false",
    ])  # fmt: skip


def test_integer_overflow_wraps() -> None:
    mx, mn = "9223372036854775807", "(-9223372036854775807 - 1)"
    check_all([
        f"{mx} + 1", f"{mn} - 1", f"{mx} * 2", f"{mn} * -1", f"-{mn}", f"{mn} / -1", f"{mn} % -1",
        f"{mx} * {mx}", f"{mx} + {mx}", f"{mn} + {mn}", "4611686018427387904 * 2", "3037000500 * 3037000500",
        f"int({mx}.0)", "int(1e19)", "int(-1e19)", f"real({mx})",
    ])  # fmt: skip


def test_division_and_modulus() -> None:
    nums = ["7", "-7", "0", "7.5", "-7.5", "0.0", "2", "-2", "3", "-3"]
    cases = [f"{a} {op} {b}" for op in ("/", "%") for a in nums for b in nums]
    cases += ["1/0", "1%0", "0/0", "1.0/0", "-1.0/0", "0.0/0.0", "1/0.0", "1 % 0.0"]
    check_all(cases)


def test_string_comparison_case_rules() -> None:
    pairs = [("abc", "ABC"), ("abc", "abd"), ("ABC", "abd"), ("a", "B"), ("", "a"), ("é", "É"), ("a", "a ")]
    cases = [
        f'"{a}" {op} "{b}"'
        for a, b in pairs
        for op in ("==", "!=", "<", "<=", ">", ">=", "=?=", "=!=", "is", "isnt")
    ]
    check_all(cases)


def test_meta_equality_across_types() -> None:
    vals = ["1", "1.0", "true", '"1"', "undefined", "error", "{1}", "[a=1]", "x"]
    check_all([f"({a}) {op} ({b})" for op in ("=?=", "=!=") for a in vals for b in vals])


def test_shifts() -> None:
    lhs = ["1", "-8", "8", "9223372036854775807", "(-9223372036854775807 - 1)", "0"]
    counts = ["0", "1", "3", "62", "63", "64", "65", "127", "-1", "-64"]
    check_all([f"{a} {op} {n}" for op in ("<<", ">>", ">>>") for a in lhs for n in counts])


def test_bitwise() -> None:
    vals = ["12", "-1", "0", "true", "false", "5"]
    check_all([f"{a} {op} {b}" for op in ("&", "|", "^") for a in vals for b in vals] + [f"~{v}" for v in vals])


def test_precedence_and_associativity() -> None:
    check_all([
        "1 + 2 * 3", "(1 + 2) * 3", "10 - 4 - 3", "100 / 10 / 5", "2 * 3 % 4", "1 < 2 == true",
        "1 == 1 && 2 == 2 || false", "true || false && false", "!true || true", "-2 * -3",
        "1 << 2 + 1", "6 & 3 | 8", "6 ^ 3 & 1", "1 + 2 < 4 ? 5 : 6", "- - 3", "!!true", "~~5",
        "1 - -1", "2 + +2", "1 =?= 1 == true", "3 > 2 > 1", "1 is 1 && 2 isnt 3",
    ])  # fmt: skip


LISTS = ["{10, 20, 30}", "{}", "{[a = 1], [a = 2; b = 3]}", "{{1, 2}, 3}", "undefined", "error", '"str"', "[a = 5; b = {1, 2}]"]
INDEXES = ["0", "1", "2", "3", "-1", "1.0", '"a"', "true", "undefined", "error", "x",
           "2147483648", "4294967296", "4294967297", "-4294967295", "9223372036854775807"]  # C int casts


def test_subscript() -> None:
    cases = [f"({lst})[{i}]" for lst in LISTS for i in INDEXES]
    cases += ['[a = 1; B = 2]["b"]', '[a = 1]["A"]', "{1,2,3}[1 + 1]", "{{1, 2}, {3}}[0][1]"]
    check_all(cases)


def test_selection() -> None:
    check_all([
        "[a = 1; b = 2].a", "[a = 1].A", "[a = 1].c", "[a = [b = 3]].a.b", "[a = [b = 3]].a.c",
        "{[a = 1], [a = 2]}.a", "{[a = 1], [b = 2]}.a", "{[a = 1], 5}.a", "{}.a", "undefined.a",
        "error.a", "5.a", '"s".a', "[a = b; b = 7].a", "[a = 1; b = [c = a]].b.c",
        "[a = 1; b = [c = parent.a]].b.c", "[x = 2].x * 3", "{1, 2}.a",
    ])  # fmt: skip


def test_self_reference_cycles() -> None:
    check_all([
        ("a", "[a = a]", None), ("a", "[a = b; b = a]", None), ("a", "[a = a + 1]", None),
        ("a", "[a = b ?: 3; b = a]", None), ("a", "[a = isUndefined(a)]", None),
        ("a =?= error", "[a = a]", None), ("a", "[a = [b = a].b]", None),
        ("MY.a", "[a = TARGET.a]", "[a = MY.a]"),
    ])  # fmt: skip

