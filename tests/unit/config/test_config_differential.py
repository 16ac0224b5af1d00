"""roost.config against HTCondor's own reader (htcondor2.param) on a table of configs.

Knob names start with T_ so HTCondor's built-in defaults cannot interfere,
except where a case is about templates, which set HTCondor's own knobs.
"""

from __future__ import annotations

import re

import pytest

from roost.config import Config

from .htcondor_oracle import BOOL_MARK, Case, available, htcondor_values

pytestmark = pytest.mark.skipif(not available(), reason="htcondor2 not installed")

CASES = [
    Case("assign", "T_A = 1\nT_B =   spaced value  \nT_C =\n", ["T_A", "T_B", "T_C"]),
    Case("case-insensitive", "t_lower = x\nT_MIXED = $(t_mixed_ref)\nt_mixed_REF = y\n",
         ["T_LOWER", "t_lower", "T_MIXED"]),
    Case("lazy", "T_A = $(T_B) a\nT_B = 1\nT_B = 2\n", ["T_A", "T_B"]),
    Case("self-append", "T_A = 1\nT_A = $(T_A) 2\nT_A = $(T_A) 3\n", ["T_A"]),
    Case("self-undefined", "T_A = $(T_A) x\n", ["T_A"]),
    Case("self-keeps-other-refs-lazy", "T_A = $(T_B)\nT_A = $(T_A) tail\nT_B = late\n", ["T_A"]),
    Case("self-with-default", "T_A = [$(T_A:none)]\n", ["T_A"]),
    Case("default", "T_A = $(T_NOPE:dflt)\nT_B = $(T_NOPE:)\nT_C = $(T_NOPE:$(T_D))\nT_D = d\n",
         ["T_A", "T_B", "T_C"]),
    Case("default-unused", "T_X = 1\nT_A = $(T_X:other)\n", ["T_A"]),
    Case("undefined-is-empty", "T_A = <$(T_NOPE)>\n", ["T_A"]),
    Case("dollar", "T_A = $(DOLLAR)(T_B)\nT_B = 1\nT_C = cost $(DOLLAR)5\n", ["T_A", "T_C"]),
    Case("double-dollar", "T_B = 1\nT_A = $$(T_B) $(T_B)\n", ["T_A"]),
    Case("lone-dollar", "T_A = a $ b $x\n", ["T_A"]),
    Case("nested-ref", "T_N = B\nT_B = bee\nT_A = $(T_$(T_N))\n", ["T_A"]),
    Case("env", "T_A = $ENV(T_ENVVAR)\nT_B = $ENV(T_NOPE_ENV:fallback)\nT_C = $ENV(T_NOPE_ENV)\n",
         ["T_A", "T_B", "T_C"], env={"T_ENVVAR": "from-env"}),
    Case("int", "T_X = 6*7\nT_A = $INT(T_X)\nT_B = $INT(T_Y)\nT_Y = (8)*60 - 29.5\nT_C = $INT(T_X,%05d)\n",
         ["T_A", "T_B", "T_C"]),
    Case("int-literal", "T_A = $INT(12)\n", ["T_A"]),
    Case("real", "T_X = 1.5\nT_A = $REAL(T_X)\nT_B = $REAL(T_X,%.3f)\nT_Y = 3\nT_C = $REAL(T_Y)\n",
         ["T_A", "T_B", "T_C"]),
    Case("choice", "T_I = 2\nT_A = $CHOICE(T_I, a, b, c)\nT_B = $CHOICE(0, x, y)\n", ["T_A", "T_B"]),
    Case("substr", "T_S = abcdefgh\nT_A = $SUBSTR(T_S, 2)\nT_B = $SUBSTR(T_S, 1, 3)\nT_C = $SUBSTR(T_S, -3)\n"
         "T_D = $SUBSTR(T_S, 1, -2)\n", ["T_A", "T_B", "T_C", "T_D"]),
    Case("file-parts", "T_P = /usr/local/lib/libz.so.1\nT_A = $Fp(T_P)\nT_B = $Fn(T_P)\nT_C = $Fx(T_P)\n"
         "T_D = $Fd(T_P)\nT_E = $Fnx(T_P)\nT_F = $Fq(T_P)\nT_G = $Fdb(T_P)\nT_H = $Fpn(T_P)\n",
         ["T_A", "T_B", "T_C", "T_D", "T_E", "T_F", "T_G", "T_H"]),
    Case("file-parts-bare", "T_P = file.txt\nT_A = [$Fp(T_P)]\nT_B = $Fn(T_P)\nT_C = $Fx(T_P)\n",
         ["T_A", "T_B", "T_C"]),
    Case("continuation", "T_A = one \\\n    two \\\n    three\nT_B = x\n", ["T_A", "T_B"]),
    Case("comments", "# a comment\n   # indented comment\nT_A = value # not a comment\n\nT_B = 2\n",
         ["T_A", "T_B"]),
    Case("multiline", "T_A @=end\n  first\n  second\n@end\nT_B = after\n", ["T_A", "T_B"]),
    Case("if-defined", "T_X = 1\nif defined T_X\nT_A = yes\nelse\nT_A = no\nendif\n"
         "if defined T_NOPE\nT_B = yes\nelse\nT_B = no\nendif\n", ["T_A", "T_B"]),
    Case("if-not-defined", "if ! defined T_NOPE\nT_A = yes\nendif\n", ["T_A"]),
    Case("if-empty-is-undefined", "T_E =\nif defined T_E\nT_A = yes\nelse\nT_A = no\nendif\n", ["T_A"]),
    Case("if-elif", "if false\nT_A = 1\nelif true\nT_A = 2\nelif true\nT_A = 3\nelse\nT_A = 4\nendif\n",
         ["T_A"]),
    Case("if-constants", "if yes\nT_A = y\nendif\nif no\nT_B = n\nendif\nif 0\nT_C = z\nendif\n"
         "if 2\nT_D = two\nendif\nif True\nT_E = T\nendif\n", ["T_A", "T_B", "T_C", "T_D", "T_E"]),
    Case("if-macro", "T_ON = true\nif $(T_ON)\nT_A = on\nendif\nif $(T_NOPE)\nT_B = never\nendif\n",
         ["T_A", "T_B"]),
    Case("if-version", "if version >= 8.0.0\nT_A = new\nendif\nif version < 8.0\nT_B = old\nendif\n"
         "if version > 100.0\nT_C = future\nendif\nif version != 8.0.0\nT_D = ne\nendif\n",
         ["T_A", "T_B", "T_C", "T_D"]),
    Case("if-nested", "if true\n  if false\n    T_A = 1\n  else\n    T_A = 2\n  endif\nelse\n"
         "  if true\n    T_A = 3\n  endif\nendif\n", ["T_A"]),
    Case("if-skips-bad-lines", "if false\nthis is not config\nendif\nT_A = ok\n", ["T_A"]),
    Case("if-parse-time", "T_X = 1\nif defined T_Y\nT_A = saw-y\nendif\nT_Y = 2\n", ["T_A"]),
    Case("subsys", "T_K = plain\nSCHEDD.T_K = sched\nT_R = $(T_K)\n", ["T_K", "T_R"], subsys="SCHEDD"),
    Case("subsys-other", "T_K = plain\nSCHEDD.T_K = sched\n", ["T_K"], subsys="STARTD"),
    Case("subsys-self-ref", "T_Y = b\nSCHEDD.T_Y = $(T_Y) c\n", ["T_Y"], subsys="SCHEDD"),
    Case("qualified-name", "FOO.T_BAR = dotted\nT_A = $(FOO.T_BAR)\n", ["T_A", "FOO.T_BAR"]),
    Case("env-override", "T_A = file\nT_B = $(T_A)\n", ["T_A", "T_B"], env={"_ROOST_T_A": "env"}),
    Case("env-override-new", "T_B = x\n", ["T_NEW"], env={"_ROOST_T_NEW": "fresh"}),
    Case("use-list", "use ROLE : Submit, Execute\n", ["DAEMON_LIST"]),
    Case("role-cm", "use ROLE : CentralManager\nuse role : submit\n", ["DAEMON_LIST"]),
    Case("policy-limit-runtime", "use POLICY : Limit_Job_Runtimes(3600)\n",
         ["MAX_JOB_RUNTIME", "MaxJobRetirementTime", "PREEMPT"], squash_spaces=True),
    Case("policy-limit-runtime-default", "use POLICY : Limit_Job_Runtimes\n",
         ["MAX_JOB_RUNTIME", "PREEMPT"], squash_spaces=True),
    Case("policy-always-run", "use POLICY : Always_Run_Jobs\n",
         ["START", "SUSPEND", "CONTINUE", "PREEMPT", "KILL", "WANT_SUSPEND", "WANT_VACATE",
          "PREEMPTION_REQUIREMENTS", "MaxJobRetirementTime", "CLAIM_WORKLIFE"], squash_spaces=True),
    Case("policy-desktop", "use POLICY : Desktop\n",
         ["START", "SUSPEND", "CONTINUE", "PREEMPT", "KILL", "WANT_SUSPEND", "WANT_VACATE",
          "IS_OWNER", "STARTD_LATCH_EXPRS", "CpuBusy", "KeyboardBusy", "MaxJobRetirementTime"],
         squash_spaces=True),
    Case("policy-hold-memory", "use POLICY : Hold_If_Memory_Exceeded\n",
         ["MEMORY_EXCEEDED", "PREEMPT", "WANT_HOLD", "WANT_HOLD_SUBCODE", "WANT_HOLD_REASON",
          "WANT_SUSPEND", "MAXJOBRETIREMENTTIME"], squash_spaces=True),
    Case("policy-preempt-memory", "use POLICY : Preempt_If_Memory_Exceeded\n",
         ["MEMORY_EXCEEDED", "PREEMPT", "WANT_SUSPEND", "MAXJOBRETIREMENTTIME"], squash_spaces=True),
    Case("policy-stacked", "use POLICY : Limit_Job_Runtimes(100)\nuse POLICY : Preempt_If_Memory_Exceeded\n"
         "use POLICY : Hold_If_Memory_Exceeded\n",
         ["PREEMPT", "WANT_HOLD", "WANT_SUSPEND", "MAXJOBRETIREMENTTIME"], squash_spaces=True),
    Case("policy-runtime-hold", "use POLICY : Hold_If_Runtime_Exceeds(60)\n",
         ["PREEMPT", "WANT_HOLD", "WANT_HOLD_REASON"], squash_spaces=True),
]


@pytest.fixture(scope="module")
def oracle() -> dict[str, dict[str, str | None]]:
    return dict(zip([c.id for c in CASES], htcondor_values(CASES)))


def _norm(value: str | None, squash: bool, boolean: bool) -> str | None:
    """htcondor2 reports empty values as None and some knobs as bools; level that."""
    if value is None or value.strip() == "":
        return None
    if boolean:
        return {"true": "true", "1": "true", "false": "false", "0": "false"}.get(
            value.strip().lower(), value
        )
    return re.sub(r"\s+", "", value) if squash else value


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_matches_htcondor(case: Case, oracle: dict[str, dict[str, str | None]]) -> None:
    theirs = oracle[case.id]
    assert "__error__" not in theirs, theirs
    cfg = Config.from_text(case.text, env=case.env, subsys=case.subsys)
    ours, expected = {}, {}
    for name in case.names:
        value = theirs[name]
        boolean = value is not None and value.startswith(BOOL_MARK)
        if boolean:
            value = value[len(BOOL_MARK) :]
        expected[name] = _norm(value, case.squash_spaces, boolean)
        ours[name] = _norm(cfg.get(name), case.squash_spaces, boolean)
    assert ours == expected


# Texts both readers must refuse.  (HTCondor's messages differ; each of
# ours is checked in test_config_errors.py.)
REJECTED = [
    "T_A = 1\nno equals sign here\n",
    "use POLICY : T_No_Such_Policy\n",
    "if true\nT_A = 1\n",
    "else\nT_A = 1\n",
    "T_A = 1\nendif\n",
    "if $(T_A) > 3\nendif\n",
    "if version >= 8\nendif\n",
    "if version 8.0\nendif\n",
    "use POLICY : Want_Hold_If(T_X)\n",
    "error : stop here\n",
    "T_M @=end\nnever closed\n",
]
ACCEPTED_CONTROL = ["T_A = 1\nif true\nT_B = 2\nendif\n"]


def test_rejects_what_htcondor_rejects() -> None:
    from roost.config import ConfigError

    from .htcondor_oracle import htcondor_rejects

    theirs = htcondor_rejects(REJECTED + ACCEPTED_CONTROL)
    ours = []
    for text in REJECTED + ACCEPTED_CONTROL:
        try:
            Config.from_text(text)
            ours.append(False)
        except ConfigError:
            ours.append(True)
    assert ours == theirs
    assert theirs == [True] * len(REJECTED) + [False]
