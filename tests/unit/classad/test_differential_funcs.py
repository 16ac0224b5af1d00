"""Built-in functions, roost.classad against classad2.

The function list is HTCondor's: src/classad/fnCall.cpp (the ClassAd library
proper) plus the functions src/condor_utils/compat_classad.cpp registers,
which every HTCondor tool has (classad2 has them once htcondor2 is imported).
Each function gets normal and edge arguments by hand, then a generic sweep of
every arity 0-3 over UNDEFINED, ERROR and wrong-typed arguments.
"""

from __future__ import annotations

import itertools

import pytest
from diff_harness import check_all

# name -> hand-written argument lists (each a string of comma-separated argument texts)
CASES: dict[str, list[str]] = {
    # type predicates
    "isUndefined": ["undefined", "x", "1", "error"],
    "isError": ["error", "1/0", "undefined", "1"],
    "isString": ['"a"', "1", "undefined"],
    "isInteger": ["1", "1.0", "true", '"1"'],
    "isReal": ["1.0", "1", "real(\"NaN\")"],
    "isList": ["{}", "{1}", "[a=1]", "undefined"],
    "isClassAd": ["[]", "[a=1]", "{}", "undefined"],
    "isBoolean": ["true", "1", "undefined"],
    "isAbstime": ['absTime(0)', "0", 'relTime(1)'],
    "isReltime": ['relTime(1)', "1.0", 'absTime(0)'],
    # lists
    "member": ["1, {1, 2}", "1.0, {1, 2}", '"A", {"a", "b"}', "3, {1, 2}", "1, {}", "undefined, {1}",
               "1, {undefined, 1}", "1, {2, undefined}", "{1}, {{1}}", "1, 2", "true, {1}", "1, {true}"],
    "identicalMember": ["1, {1, 2}", "1.0, {1, 2}", '"A", {"a", "b"}', '"a", {"a"}', "undefined, {undefined}"],
    "size": ["{}", "{1, 2, 3}", '"abc"', '""', "[a=1; b=2]", "[]", "undefined", "5", "error"],
    "sum": ["{}", "{1, 2, 3}", "{1, 2.5}", "{1, undefined}", '{1, "a"}', "{true, 1}", "5", "{9223372036854775807, 1}"],
    "avg": ["{}", "{1, 2}", "{1, 2.5}", "{1, undefined}", '{"a"}', "{2, 3}"],
    "min": ["{}", "{3, 1, 2}", "{1, 0.5}", "{1, undefined}", '{"a", "b"}', "{true}"],
    "max": ["{}", "{3, 1, 2}", "{1, 1.5}", "{undefined, 2}", '{"a"}', "{false, 2}"],
    "anyCompare": ['"<", {1, 2, 3}, 2', '"==", {}, 1', '">=", {1, 2}, 3', '"is", {1, undefined}, undefined',
                   '"foo", {1}, 1', '"==", {"a"}, "A"', '"!=", {1}, 1.0', '"<", 5, 1'],
    "allCompare": ['"<", {1, 2, 3}, 4', '"==", {}, 1', '">=", {1, 2}, 2', '"isnt", {1, 2}, undefined',
                   '"==", {1, undefined}, 1', '"<", {1}, "a"'],
    # time
    "timeZoneOffset": [""],
    "getYear": ['absTime("2020-03-04T05:06:07Z")', "0", '"x"'],
    "getMonth": ['absTime("2020-03-04T05:06:07Z")', "0"],
    "getDayOfYear": ['absTime("2020-03-04T05:06:07Z")', "0"],
    "getDayOfMonth": ['absTime("2020-03-04T05:06:07Z")', "0"],
    "getDayOfWeek": ['absTime("2020-03-04T05:06:07Z")', "0"],
    "getDays": ['relTime("3d04:05:06")', "100000", 'absTime(0)'],
    "getHours": ['relTime("3d04:05:06")', 'absTime("2020-03-04T05:06:07Z")', "7200"],
    "getMinutes": ['relTime("3d04:05:06")', 'absTime("2020-03-04T05:06:07Z")', "150"],
    "getSeconds": ['relTime("3d04:05:06")', 'absTime("2020-03-04T05:06:07Z")', "150.5"],
    "splitTime": ['absTime("2020-03-04T05:06:07Z")', 'relTime("3d04:05:06")', "0", '"x"', "-3600"],
    "formatTime": ['0, "%Y-%m-%d %H:%M:%S"', '1600000000, "%c"', '1600000000', '"x"',
                   'absTime("2020-03-04T05:06:07Z"), "%j %a %b"', '1600000000, 5', '1600000000, "%%"'],
    "interval": ["0", "59", "3600", "90061", "-5", "1.5", '"x"', "86400"],
    "absTime": ['"2020-03-04T05:06:07Z"', '"2020-03-04T05:06:07+01:00"', '"2020-03-04"', '"garbage"', "0",
                "1.5e9", '[a=1]', '"2020-03-04T05:06:07Z", 3600', "-1"],
    "relTime": ['"1:00"', '"1d"', '"-1d02:00:00"', '"garbage"', "3600", "1.5", '"+5"', '"00:00:61"'],
    # strings
    "strcat": ['{1 + 1}', '"a", {x}', '[a = b]', '"a", "b"', '', '1, 2.5, true, "x"', '"a", undefined', '"a", error', '{1}', '[a=1]',
               '1e10, -0.5, 1.0'],
    "join": ['",", {"a", "b"}', '{"a", "b"}', '",", "a", "b"', '",", {}', '",", {1, 2.5, true}',
             '1, {2, 3}', '",", undefined', '",", {"a", undefined}', '{}'],
    "toUpper": ['"aBc"', '""', "1", "undefined", '"é"'],
    "toLower": ['"aBc"', "1.5", "true", '"É"'],
    "substr": ['"hello", 1', '"hello", 1, 3', '"hello", -3', '"hello", -3, 2', '"hello", 10', '"hello", 1, -1',
               '"hello", 0, 100', '"hello", 2, 0', '123, 1', '"hello", 1.5', '"hello", "1"', '"hello", -10'],
    "strcmp": ['{x}, "{ x }"', '"a", {1 + 1}', '"a", "b"', '"b", "a"', '"a", "A"', '"a", "a"', '1, "1"', '"a", undefined', '1, 2'],
    "stricmp": ['"a", "A"', '"a", "B"', '"B", "a"', '1.5, "1.5"'],
    "versionCmp": ['"1.2", "1.10"', '"1.2.3", "1.2.3"', '"2", "1.9"', '"1a", "1b"', '1, "1"', '"a", "b"'],
    "versionLE": ['"1.2", "1.10"', '"1.10", "1.2"', '"1", "1"'],
    "versionLT": ['"1.2", "1.10"', '"1", "1"'],
    "versionGE": ['"1.2", "1.10"', '"1", "1"'],
    "versionGT": ['"1.2", "1.10"', '"1.10", "1.2"'],
    "versionEQ": ['"1.2", "1.2"', '"1.2", "1.02"', '"1.2", "1.10"'],
    "version_in_range": ['"1.5", "1.0", "2.0"', '"2.5", "1.0", "2.0"', '"1.0", "1.0", "1.0"'],
    # regular expressions
    "regexp": ['"a.c", "abc"', '"^b", "abc"', '"A", "abc", "i"', '"A", "abc"', '"(", "abc"', '"a", 1',
               '"^a.c$", "a\\nc", "s"', '"^c", "ab\\nc", "m"', '"a c", "abc", "x"', '".*", ""'],
    "regexpMember": ['"a.", {"ab", "cd"}', '"z", {"ab"}', '"a", {}', '"a", {1, "a"}', '"A", {"a"}, "i"'],
    "regexps": ['"(a)(b)", "xaby", "\\\\2\\\\1"', '"z", "abc", "q"', '"a", "abc", "\\\\0X"', '"A", "abc", "x", "i"'],
    "replace": ['"a", "banana", "o"', '"z", "abc", "q"', '"(an)", "banana", "<\\\\1>"'],
    "replaceAll": ['"a", "banana", "o"', '"z", "abc", "q"', '"(an)", "banana", "<\\\\1>"', '"", "ab", "-"'],
    # conversions
    "int": ["3.7", "-3.7", '"42"', '"4.5"', '" 7 "', '"x"', "true", "false", "undefined", "error",
            '"0x10"', "1e30", 'real("NaN")', 'absTime(5)', 'relTime(5.5)', "{1}", '"-12abc"'],
    "real": ["3", '"4.5"', '"1e3"', '"x"', "true", '"NaN"', '"-inf"', "undefined", '" 2.5"', 'relTime(5)', '"1.5x"'],
    "string": ["{-x}", "{(-1)}", "{1 + 1, x}", "[a = 1 + 1]", "{[a = x]}", "3", "2.5", "true", '"s"', "undefined", "error", "{1, 2}", "[a = 1]", 'absTime(0)',
               'relTime(61)', "1e100", "0.1", "-0.0", 'real("NaN")', "100000000000.0"],
    "bool": ["1", "0", "2.5", "0.0", '"true"', '"TRUE"', '"false"', '"yes"', '"1"', "undefined", "{}"],
    # introspection
    "unparse": ["x", "a + 1", "1", '"s"', "{1, 2}", "[a=1]", "undefined", "x.y", "MY.x + TARGET.y"],
    "unresolved": ["x", "1"],
    # math
    "floor": ["2.5", "-2.5", "3", '"2.5"', "true", '"x"', "1e300", 'real("NaN")'],
    "ceiling": ["2.5", "-2.5", "3", '"2.5"', "undefined"],
    "ceil": ["2.1", "-2.1"],
    "round": ["2.5", "3.5", "-2.5", "2.4999", "3", '"2.6"', "1e300"],
    "pow": ["2, 10", "2, -1", "2.0, 0.5", "-8, 1.0/3", "0, 0", "2, 63", "2, 64", "10, 18", "-2, 3",
            '"2", 2', "2, undefined", "0, -1", "1.5, 2"],
    "quantize": ["7, 3", "7.5, 3", "7, 2.5", "6, 3", "0, 3", "7, 0", "7, {2, 5, 10}", "12, {2, 5, 10}",
                 "-7, 3", '"7", 3', "7, {}", "7, {2.5, 10}"],
    # control
    "ifThenElse": ["true, 1, 2", "false, 1, 2", "undefined, 1, 2", "error, 1, 2", "1, 1, 2", "0.0, 1, 2",
                   '"s", 1, 2', "true, 1", "true, 1, 2, 3", "false, 1/0, 2"],
    "eval": ['"1 + 2"', '"x"', '"1 +"', "1", "undefined", '"[a=1].a"', '"{1,2}"'],
    # string lists (compat layer)
    "stringListSize": ['"a,b,c"', '""', '"a, b ,c"', '"a;b", ";"', "1", '"a b"'],
    "stringListSum": ['"1,2,3"', '"1,2.5"', '"1,x"', '""'],
    "stringListAvg": ['"1,2,3"', '"1,2"', '""', '"a"'],
    "stringListMin": ['"3,1,2"', '"1.5,2"', '""', '"a,1"'],
    "stringListMax": ['"3,1,2"', '"1.5,2"', '""'],
    "stringListMember": ['"a", "a,b"', '"A", "a,b"', '"c", "a,b"', '"a", ""', '"a", "b;a", ";"', '1, "1,2"'],
    "stringListIMember": ['"A", "a,b"', '"c", "a,b"'],
    "stringListSubsetMatch": ['"a,b", "a,b,c"', '"a,d", "a,b,c"', '"", "a"'],
    "stringListISubsetMatch": ['"A,B", "a,b,c"', '"a,d", "a,b"'],
    "stringList_regexpMember": ['"^a", "xa,ab"', '"^z", "a,b"', '"A", "a,b", ",", "i"'],
    "stringListsIntersect": ['"a,b", "b,c"', '"a,b", "c,d"', '"A", "a"', '"a b", "b", " "', '"", ""'],
    "split": ['"a b,c"', '"a;b;c", ";"', '""', '"  a  "', "1", '"a,,b", ","'],
    "splitUserName": ['"user@domain"', '"user"', '"@d"', '"a@b@c"', "1"],
    "splitSlotName": ['"slot1@host"', '"host"', '"slot1_2@host"'],
    "envV1ToV2": ['"A=1;B=2"', '""', '"A=1 2"', "1"],
    "mergeEnvironment": ['"A=1", "B=2"', '"A=1", "A=2"', '"A=1;B=2"', '', 'undefined, "A=1"'],
    "listToArgs": ['{"a", "b c"}', '{}', '{"it\'s"}', "1"],
    "argsToList": ['"a b c"', '"\\"a b\\" c"', '"\'a b\' c"', '""', "1"],
    # depend on the passwd database and the map files: only names that exist nowhere
    "userHome": ['"no-such-user-roost"', '"no-such-user-roost", "/default"', "undefined", "1"],
    "userMap": ['"no-such-map", "x"', '"no-such-map", "x", "dflt"', '"no-such-map", "x", {"a", "b"}'],
    "debug": ["1 + 1", '"s"', "undefined"],
    "countMatches": ["1, {1, 2, 1}", '"a", {"a", "A"}', "1, {}", "[a=1], {}"],
    "evalInEachContext": ["1, {}", "a, {[a=1], [a=2]}", "a + 1, {[a=1], [b=2]}"],
}

# Deterministic functions only: time(), currentTime(), dayTime(), random() change between the two
# evaluations; debug() writes to the log; userHome()/userMap() read the local configuration.
NONDETERMINISTIC = ["time", "currentTime", "dayTime", "random"]

# Every function HTCondor registers (src/classad/fnCall.cpp and
# src/condor_utils/compat_classad.cpp at htcondor/htcondor 7491a145f64a, August 2026).
HTCONDOR_FUNCTIONS = """
isUndefined isError isString isInteger isReal isList isClassAd isBoolean isAbstime isReltime
member identicalMember size sum avg min max anyCompare allCompare time currentTime timeZoneOffset
dayTime getYear getMonth getDayOfYear getDayOfMonth getDayOfWeek getDays getHours getMinutes
getSeconds splitTime formatTime strcat join toUpper toLower substr strcmp stricmp versionCmp
versionLE versionLT versionGE versionGT versionEQ version_in_range regexp regexpMember regexps
replace replaceAll int real string bool absTime relTime unparse unresolved floor ceil ceiling
round pow quantize random ifThenElse interval eval stringListsIntersect debug envV1ToV2
mergeEnvironment listToArgs argsToList stringListSize stringListSum stringListAvg stringListMin
stringListMax stringListMember stringListIMember stringListSubsetMatch stringListISubsetMatch
stringList_regexpMember userHome userMap splitUserName splitSlotName split evalInEachContext
countMatches
""".split()


def test_every_htcondor_function_is_covered() -> None:
    covered = {n.lower() for n in [*CASES, *NONDETERMINISTIC]}
    assert [n for n in HTCONDOR_FUNCTIONS if n.lower() not in covered] == []


# functions that read the clock when called without arguments: compared by type
NOW_WITHOUT_ARGS = {"absTime": "isAbstime", "formatTime": "isString"}

GENERIC_ARGS = ["undefined", "error", "1", "2.5", '"a"', "true", "{1}", "[a = 1]", 'relTime(5)', "absTime(10)"]
GENERIC_ARGS_SMALL = ["undefined", "error", "1", '"a"']


@pytest.mark.parametrize("name", sorted(CASES, key=str.lower))
def test_function_hand_cases(name: str) -> None:
    check_all([f"{name}({args})" for args in CASES[name]])


@pytest.mark.parametrize("name", sorted(CASES, key=str.lower))
def test_function_generic_sweep(name: str) -> None:
    # absTime() and formatTime() read the clock: the two evaluations may fall in different seconds
    cases = [f"{name}()" if name not in NOW_WITHOUT_ARGS else f"{NOW_WITHOUT_ARGS[name]}({name}())"]
    cases += [f"{name}({a})" for a in GENERIC_ARGS]
    cases += [f"{name}({a}, {b})" for a, b in itertools.product(GENERIC_ARGS, GENERIC_ARGS_SMALL + ["{1, 2}", '"b"'])]
    cases += [f"{name}({a}, {b}, {c})" for a, b, c in itertools.product(GENERIC_ARGS_SMALL, repeat=3)]
    cases += [f"{name}(1, 2, 3, 4, 5)"]
    check_all(cases)


def test_function_names_are_case_insensitive() -> None:
    check_all(["STRCAT(\"a\", \"b\")", "StrCat(1)", "ISUNDEFINED(x)", "ifthenelse(true, 1, 2)",
               "SIZE({1})", "Member(1, {1})", "ToUpper(\"a\")", "STRINGLISTMEMBER(\"a\", \"a\")"])


def test_unknown_function() -> None:
    check_all(["noSuchFunction()", "noSuchFunction(1)", "isUndefined(noSuchFunction())", "noSuchFunction(1) ?: 5"])


def test_nondeterministic_functions_by_type() -> None:
    cases = []
    for name in NONDETERMINISTIC:
        for args in ("", "1", "10.0", '"x"', "undefined"):
            call = f"{name}({args})"
            cases += [f"isInteger({call})", f"isReal({call})", f"isAbstime({call})",
                      f"isReltime({call})", f"isError({call})", f"isUndefined({call})"]
    cases += ["time() > 1700000000", "random(10) < 10", "random(10) >= 0", "random(1) == 0", "random(0)"]
    check_all(cases)


def test_functions_in_ad_context() -> None:
    ad = '[a = 3; s = "Hello"; l = {1, 2, 3}; r = [x = 1]]'
    check_all([(e, ad, None) for e in (
        "strcat(s, a)", "size(l)", "sum(l) + a", "member(a, l)", "toUpper(s)", "substr(s, a)",
        "eval(\"a * 2\")", "unparse(l)", "unparse(r)", "unresolved(a + q)", "isClassAd(r)", "size(r)",
        "ifThenElse(a > 2, s, l)", "debug(a)",
    )])
