"""The registry of ClassAd built-in functions.

``FUNCTIONS`` maps a lower-case function name (HTCondor looks names up
case-insensitively) to a callable taking the already-evaluated arguments
positionally and returning a value.  A callable never raises: a wrong
argument count or type gives ERROR, exactly as HTCondor answers.

Not here, because they need unevaluated arguments or the evaluation context,
and so belong to the evaluator: ``ifThenElse``, ``eval``, ``unparse``,
``unresolved``, ``evalInEachContext``, ``countMatches`` (see ``SPECIAL_FORMS``).
"""

from __future__ import annotations

from collections.abc import Callable

from roost.classad import func_environ, func_lists, func_math, func_regex, func_strings, func_time
from roost.classad.func_values import _trunc_time, double_to_int32, to_int32
from roost.classad.values import ERROR, RelTime

SPECIAL_FORMS: frozenset[str] = frozenset(
    {"ifthenelse", "eval", "unparse", "unresolved", "evalineachcontext", "countmatches"}
)

FUNCTIONS: dict[str, Callable[..., object]] = {
    # type predicates
    "isundefined": func_math.is_undefined,
    "iserror": func_math.is_error,
    "isstring": func_math.is_string,
    "isinteger": func_math.is_integer,
    "isreal": func_math.is_real,
    "islist": func_math.is_list,
    "isclassad": func_math.is_classad_value,
    "isboolean": func_math.is_boolean,
    "isabstime": func_math.is_abstime,
    "isreltime": func_math.is_reltime,
    # lists
    "member": func_lists.member,
    "identicalmember": func_lists.identical_member,
    "size": func_lists.size,
    "sum": func_lists.sum_,
    "avg": func_lists.avg,
    "min": func_lists.min_,
    "max": func_lists.max_,
    "anycompare": func_lists.any_compare,
    "allcompare": func_lists.all_compare,
    # time
    "time": func_time.time_,
    "currenttime": func_time.current_time,
    "timezoneoffset": func_time.time_zone_offset,
    "daytime": func_time.day_time,
    "getyear": func_time.get_year,
    "getmonth": func_time.get_month,
    "getdayofyear": func_time.get_day_of_year,
    "getdayofmonth": func_time.get_day_of_month,
    "getdayofweek": func_time.get_day_of_week,
    "getdays": func_time.get_days,
    "gethours": func_time.get_hours,
    "getminutes": func_time.get_minutes,
    "getseconds": func_time.get_seconds,
    "splittime": func_time.split_time,
    "formattime": func_time.format_time,
    "abstime": func_time.abs_time,
    "reltime": func_time.rel_time,
    "interval": func_time.interval,
    # strings
    "strcat": func_strings.strcat,
    "join": func_strings.join,
    "toupper": func_strings.to_upper,
    "tolower": func_strings.to_lower,
    "substr": func_strings.substr,
    "strcmp": func_strings.strcmp,
    "stricmp": func_strings.stricmp,
    "versioncmp": func_strings.versioncmp,
    "versionle": func_strings.version_le,
    "versionlt": func_strings.version_lt,
    "versionge": func_strings.version_ge,
    "versiongt": func_strings.version_gt,
    "versioneq": func_strings.version_eq,
    "version_in_range": func_strings.version_in_range,
    "split": func_strings.split,
    "splitusername": func_strings.splitusername,
    "splitslotname": func_strings.splitslotname,
    "stringlistsize": func_strings.string_list_size,
    "stringlistsum": func_strings.string_list_sum,
    "stringlistavg": func_strings.string_list_avg,
    "stringlistmin": func_strings.string_list_min,
    "stringlistmax": func_strings.string_list_max,
    "stringlistmember": func_strings.string_list_member,
    "stringlistimember": func_strings.string_list_imember,
    "stringlistsubsetmatch": func_strings.string_list_subset_match,
    "stringlistisubsetmatch": func_strings.string_list_isubset_match,
    "stringlistsintersect": func_strings.string_lists_intersect,
    # regular expressions
    "regexp": func_regex.regexp,
    "regexpmember": func_regex.regexp_member,
    "regexps": func_regex.regexps,
    "replace": func_regex.replace,
    "replaceall": func_regex.replaceall,
    "stringlist_regexpmember": func_regex.string_list_regexp_member,
    # conversions and arithmetic
    "int": func_math.int_,
    "real": func_math.real,
    "string": func_math.string,
    "bool": func_math.bool_,
    "floor": func_math.floor,
    "ceil": func_math.ceiling,
    "ceiling": func_math.ceiling,
    "round": func_math.round_,
    "pow": func_math.pow_,
    "quantize": func_math.quantize,
    "random": func_math.random,
    "debug": func_math.debug,
    # HTCondor job helpers
    "envv1tov2": func_environ.env_v1_to_v2,
    "mergeenvironment": func_environ.merge_environment,
    "listtoargs": func_environ.list_to_args,
    "argstolist": func_environ.args_to_list,
    "userhome": func_environ.user_home,
    "usermap": func_environ.user_map,
}


def fails_evaluation(name: str, args: tuple[object, ...]) -> bool:
    """Whether HTCondor reports an evaluation *failure* (not ERROR) for this call.

    A few built-ins make HTCondor's ``Evaluate()`` return false, which aborts
    the whole evaluation (``classad2`` raises): ``userHome`` with a wrong
    argument count, ``random`` with a non-positive limit, and ``absTime(n, -1)``.
    The registered callables answer ERROR there (they never raise); an evaluator
    that wants HTCondor's exact behaviour asks this, only when a call gave ERROR.
    """
    name = name.lower()
    if name == "userhome":
        return len(args) not in (1, 2)
    if name == "random":
        if len(args) != 1:
            return False
        v = args[0]
        if type(v) is int:
            return to_int32(v) <= 0
        return type(v) is float and v <= 0
    if name == "abstime" and len(args) == 2 and type(args[0]) is int:
        return func_time.abs_time(args[0], args[1]) is ERROR and _offset_is_minus_one(args[1])
    return False


def _offset_is_minus_one(o: object) -> bool:
    if type(o) is int:
        return to_int32(o) == -1
    if type(o) is float:
        return double_to_int32(o) == -1
    if type(o) is RelTime:
        return to_int32(_trunc_time(o.secs)) == -1
    return False


def lookup(name: str) -> Callable[..., object] | None:
    """The built-in called ``name`` (any case), or None; unknown functions evaluate to ERROR."""
    return FUNCTIONS.get(name.lower())
