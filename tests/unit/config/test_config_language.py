"""The configuration language as a user writes it: values, macros, conditionals, overrides."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roost.config import Config, ConfigError


def cfg(text: str, **kw) -> Config:
    return Config.from_text(text, **kw)


def test_names_are_case_insensitive_and_values_trimmed() -> None:
    c = cfg("Negotiator_Interval =   30   \n")
    assert c.get("NEGOTIATOR_INTERVAL") == "30"
    assert c.get("negotiator_interval") == "30"
    assert c.raw("NeGoTiAtOr_InTeRvAl") == "30"


def test_later_assignment_wins_and_records_its_line() -> None:
    c = cfg("A = 1\n\n# comment\nA = 2\n", file="site.conf")
    assert c.get("A") == "2"
    assert c.source("A") == ("site.conf", 4)


def test_undefined_knob_gives_default_argument() -> None:
    c = cfg("")
    assert c.get("NO_SUCH_KNOB") is None
    assert c.get("NO_SUCH_KNOB", "fallback") == "fallback"
    assert "NO_SUCH_KNOB" not in c


def test_expansion_is_lazy() -> None:
    c = cfg("LOGDIR = $(BASE)/log\nBASE = /first\nBASE = /second\n")
    assert c.get("LOGDIR") == "/second/log"
    assert c.raw("LOGDIR") == "$(BASE)/log"


def test_self_reference_means_previous_value() -> None:
    c = cfg("DAEMON_LIST = MASTER\nDAEMON_LIST = $(DAEMON_LIST) SCHEDD\n"
            "DAEMON_LIST = $(DAEMON_LIST), STARTD\n")
    assert c.get("DAEMON_LIST") == "MASTER SCHEDD, STARTD"


def test_self_reference_falls_back_to_builtin_default() -> None:
    # DAEMON_LIST defaults to MASTER, as in HTCondor.
    assert cfg("DAEMON_LIST = $(DAEMON_LIST) SCHEDD\n").get("DAEMON_LIST") == "MASTER SCHEDD"


def test_macro_default_and_nested_default() -> None:
    c = cfg("A = $(MISSING:plan-b)\nB = $(MISSING:$(C))\nC = see\n")
    assert c.get("A") == "plan-b"
    assert c.get("B") == "see"


def test_dollar_escape_is_not_rescanned() -> None:
    c = cfg("PRICE = $(DOLLAR)(NOT_A_MACRO)\nNOT_A_MACRO = oops\n")
    assert c.get("PRICE") == "$(NOT_A_MACRO)"


def test_match_time_double_dollar_is_left_alone() -> None:
    assert cfg("A = $$(Memory)\n").get("A") == "$$(Memory)"


def test_env_function_reads_given_environment() -> None:
    c = cfg("A = $ENV(MY_VAR)\nB = $ENV(UNSET_VAR:dflt)\nC = $ENV(UNSET_VAR)\n",
            env={"MY_VAR": "hello"})
    assert (c.get("A"), c.get("B"), c.get("C")) == ("hello", "dflt", "UNDEFINED")


def test_int_real_choice_substr() -> None:
    c = cfg(
        "SECS = 24*3600\nDAY = $INT(SECS)\nHALF = $REAL(SECS) \nHALFR = $REAL(HALFX,%.2f)\n"
        "HALFX = 1/4.0\nPICK = $CHOICE(1, red, green, blue)\nS = roost-pool\n"
        "HEAD = $SUBSTR(S, 0, 5)\nTAIL = $SUBSTR(S, -4)\n"
    )
    assert c.get("DAY") == "86400"
    assert c.get("HALF") == "86400"
    assert c.get("HALFR") == "0.25"
    assert c.get("PICK") == "green"
    assert (c.get("HEAD"), c.get("TAIL")) == ("roost", "pool")


def test_choice_out_of_range_is_an_error_at_lookup() -> None:
    c = cfg("X = 1\nPICK = $CHOICE(5, a, b)\n", file="f")
    with pytest.raises(ConfigError, match=r"f:2: \$CHOICE index 5 is out of range"):
        c.get("PICK")


def test_int_of_non_number_names_the_knob_location() -> None:
    c = cfg("WORD = banana\nN = $INT(WORD)\n", file="f")
    with pytest.raises(ConfigError, match=r"f:2: \$INT\(WORD\).*banana"):
        c.get("N")


def test_file_path_functions() -> None:
    c = cfg("P = /var/lib/roost/job.log\nA = $Fp(P)\nB = $Fn(P)\nC = $Fx(P)\nD = $Fd(P)\n"
            "E = $Fnx(P)\nF = $Fq(P)\nG = $Fdb(P)\n")
    assert [c.get(k) for k in "ABCDEFG"] == [
        "/var/lib/roost/", "job", ".log", "roost/", "job.log", '"/var/lib/roost/job.log"', "roost",
    ]


def test_random_functions_stay_in_range() -> None:
    c = cfg("R = $RANDOM_INTEGER(10, 20)\nC = $RANDOM_CHOICE(a, b)\n")
    for _ in range(20):
        assert 10 <= int(c.get("R")) <= 20
        assert c.get("C") in ("a", "b")


def test_recursion_is_reported_with_the_cycle() -> None:
    c = cfg("A = $(B)\nB = x $(C)\nC = $(A)\n", file="loop.conf")
    with pytest.raises(ConfigError) as err:
        c.get("A")
    assert "macro loop in A -> B -> C -> A" in str(err.value)
    assert err.value.file == "loop.conf"


def test_continuation_lines_join() -> None:
    c = cfg("START = KeyboardIdle > 60 && \\\n    LoadAvg < 0.3\nNEXT = 1\n")
    assert c.get("START") == "KeyboardIdle > 60 && LoadAvg < 0.3"
    assert c.source("NEXT") == ("<string>", 3)


def test_hash_only_starts_a_comment_at_line_start() -> None:
    assert cfg("A = x # y\n").get("A") == "x # y"


def test_multiline_value_block() -> None:
    c = cfg("JOB_ROUTER @=end\n  [ a = 1 ]\n  [ b = 2 ]\n@end\nNEXT = 1\n")
    assert c.get("JOB_ROUTER") == "[ a = 1 ]\n[ b = 2 ]"
    assert c.get("NEXT") == "1"


def test_if_elif_else_defined() -> None:
    text = """
    HAVE_GPU = true
    if defined HAVE_GPU
      A = gpu
    elif defined OTHER
      A = other
    else
      A = none
    endif
    if ! defined HAVE_GPU
      B = no
    else
      B = yes
    endif
    """
    c = cfg(text)
    assert (c.get("A"), c.get("B")) == ("gpu", "yes")


def test_if_is_decided_when_read_not_at_lookup() -> None:
    c = cfg("if defined LATER\nA = seen\nendif\nLATER = 1\n")
    assert c.get("A") is None


def test_if_boolean_forms_and_macros() -> None:
    c = cfg("ON = yes\nif $(ON)\nA = 1\nendif\nif $(UNSET)\nB = 1\nendif\nif 0\nC = 1\nendif\n"
            "if 1\nD = 1\nendif\nif False\nE = 1\nendif\n")
    assert [c.get(k) for k in "ABCDE"] == ["1", None, None, "1", None]


def test_if_version() -> None:
    c = cfg("if version >= 8.0\nA = 1\nendif\nif version < 8.0.0\nB = 1\nendif\n"
            "if version > 999.0\nC = 1\nendif\n")
    assert [c.get(k) for k in "ABC"] == ["1", None, None]


def test_nested_if_in_dead_branch_is_skipped_entirely() -> None:
    c = cfg("if false\n  if true\n    A = 1\n  endif\n  garbage line\n  include : /nope\nendif\nB = 2\n")
    assert c.get("A") is None and c.get("B") == "2"


def test_subsys_and_localname_overrides() -> None:
    text = "INTERVAL = 10\nSCHEDD.INTERVAL = 20\nSCHEDD2.INTERVAL = 30\nUSE_IT = $(INTERVAL)\n"
    base = cfg(text)
    assert base.get("INTERVAL") == "10"
    schedd = base.with_subsys("schedd")
    assert schedd.get("INTERVAL") == "20"
    assert schedd.get("USE_IT") == "20"  # references resolve as the daemon sees them
    assert base.with_subsys("SCHEDD", localname="schedd2").get("INTERVAL") == "30"
    assert base.with_subsys("STARTD").get("INTERVAL") == "10"
    assert schedd.get("SUBSYSTEM") == "SCHEDD"
    assert cfg(text, subsys="SCHEDD").get("INTERVAL") == "20"


def test_qualified_self_reference_uses_unqualified_value() -> None:
    c = cfg("FLAGS = a\nSTARTD.FLAGS = $(FLAGS) b\n", subsys="STARTD")
    assert c.get("FLAGS") == "a b"


def test_environment_overrides_beat_files() -> None:
    c = cfg("NEGOTIATOR_INTERVAL = 60\nUSES = $(NEGOTIATOR_INTERVAL)\n",
            env={"_ROOST_NEGOTIATOR_INTERVAL": "5", "_roost_NEW_KNOB": "x"})
    assert c.get("NEGOTIATOR_INTERVAL") == "5"
    assert c.get("USES") == "5"
    assert c.get("NEW_KNOB") == "x"
    assert c.source("NEGOTIATOR_INTERVAL") == ("environment (_ROOST_NEGOTIATOR_INTERVAL)", 0)


def test_error_statement_stops_reading() -> None:
    with pytest.raises(ConfigError, match=r"f:2: this pool is retired"):
        cfg("A = 1\nerror : this pool is $(WHY)\nWHY = x\n".replace("$(WHY)", "retired"), file="f")


def test_warning_statement_is_collected() -> None:
    c = cfg("warning : check $(WHAT)\nWHAT = me\n", file="f")
    assert c.warnings == ["f:1: check "]


def test_defaults_are_visible_and_overridable() -> None:
    c = cfg("LOCAL_DIR = /srv/roost\n")
    assert c.get("LOG") == "/srv/roost/log"
    assert c.get("SPOOL") == "/srv/roost/spool"
    assert c.source("LOG") == ("<default>", 0)
    assert c.get_int("NEGOTIATOR_INTERVAL") == 60
    assert c.get_int("PRIORITY_HALFLIFE") == 86400


def test_host_facts_feed_defaults() -> None:
    c = cfg("", facts={"DETECTED_CPUS": "8", "DETECTED_MEMORY": "16000", "ROOST_HOME": "/h"})
    assert c.get_int("NUM_CPUS") == 8
    assert c.get_int("MEMORY") == 16000
    assert c.get("EXECUTE") == "/h/execute"
    assert c.get("NUM_CPUS", None) == "8"


def test_typed_getters() -> None:
    c = cfg("I = 2*30\nF = 0.5\nB1 = True\nB2 = no\nB3 = 0\nEMPTY =\nL = a, b c\n")
    assert c.get_int("I") == 60
    assert c.get_float("F") == 0.5
    assert c.get_float("I") == 60.0
    assert (c.get_bool("B1"), c.get_bool("B2"), c.get_bool("B3")) == (True, False, False)
    assert c.get_int("EMPTY", 7) == 7
    assert c.get_int("MISSING", 3) == 3
    assert c.get_list("L") == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("getter", "value", "want"),
    [("get_int", "fast", "an integer"), ("get_int", "1.5", "an integer"),
     ("get_float", "x1", "a number"), ("get_bool", "maybe", "a boolean")],
)
def test_typed_getter_errors_name_knob_and_place(getter: str, value: str, want: str) -> None:
    c = cfg(f"\nUPDATE_INTERVAL = {value}\n", file="/etc/roost/roost_config")
    with pytest.raises(ConfigError) as err:
        getattr(c, getter)("update_interval")
    msg = str(err.value)
    assert msg.startswith("/etc/roost/roost_config:2: UPDATE_INTERVAL")
    assert want in msg and "\n" not in msg


def test_names_lists_file_and_default_knobs() -> None:
    c = cfg("my_knob = 1\n")
    assert "my_knob" in c.names(defaults=False)
    assert c.names(defaults=False) == ["my_knob"]
    assert "NEGOTIATOR_INTERVAL" in c.names()


def test_expand_arbitrary_text() -> None:
    assert cfg("A = 1\n").expand("[$(A)]") == "[1]"


_plain = st.text(
    alphabet=st.characters(blacklist_characters="$\\\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029",
                           blacklist_categories=("Cs",)),
    max_size=40,
)


@given(_plain)
def test_plain_values_read_back_trimmed(value: str) -> None:
    assert Config.from_text(f"KNOB = {value}\n").get("KNOB") == value.strip()


@given(st.lists(st.text(alphabet="abcxyz019", min_size=1, max_size=5), min_size=1, max_size=8))
def test_repeated_self_append_accumulates(parts: list[str]) -> None:
    text = f"L = {parts[0]}\n" + "".join(f"L = $(L) {p}\n" for p in parts[1:])
    assert Config.from_text(text).get("L") == " ".join(parts)
