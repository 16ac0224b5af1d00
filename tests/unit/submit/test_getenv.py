"""``getenv`` as condor_submit reads it (HTCondor 10+): booleans, name patterns, ``!``
exclusions. The expected environments are what htcondor 24's ``Submit.jobs()`` built
for the same descriptions and environment (golden case getenv.sub covers a whole file).
"""

from __future__ import annotations

import pytest

from roost.submit import parse_submit
from roost.submit.getenv import as_boolean, imported, wildcard_match

ENV = {"PATH": "/usr/bin:/bin", "HOME": "/h", "SECRET_X": "1", "yes": "Y1", "SEMI": "a;b", "PIPE": "a|b",
       "NL": "a\nb", "path_lower": "pl", "ABXAB": "1"}


def environment(text: str, env: dict[str, str] = ENV) -> str:
    desc = parse_submit("executable = /bin/true\n" + text + "\nqueue\n", file="g.sub", cwd="/tmp", env=env)
    return str(desc.expand()[0].proc_ad(0)["Environment"])


@pytest.mark.parametrize(("pattern", "name", "match"), [
    ("PATH", "path", True), ("PATH", "PATHX", False),
    ("*", "anything", True), ("S*", "SECRET_X", True), ("S*", "XS", False),
    ("*AB", "ABXAB", True), ("*AB", "ABX", False),
    ("A*B", "ABXAB", True), ("A*B", "A", False), ("A*B", "AB", True),
    ("*X*", "ABXAB", True), ("A*X*", "ABXAB", True), ("A*X*", "AB", False),
    ("A*B*C", "AB*C", True), ("A*B*C", "ABXC", False),  # a third star is a literal
])
def test_wildcards_are_htcondors(pattern: str, name: str, match: bool) -> None:
    assert wildcard_match(pattern, name) is match


@pytest.mark.parametrize(("value", "result"), [
    ("true", True), ("TRUE ", True), ("1", True), ("false", False), ("0", False), ("2 > 1", True),
    ("yes", None), ("no", None), ("PATH, HOME", None), ("*", None), ("!SECRET*", None),
])
def test_boolean_or_pattern_list(value: str, result: bool | None) -> None:
    assert as_boolean(value) is result


def test_exclusions_leave_the_rest() -> None:
    assert environment("getenv = *, !SECRET*, !NL") == \
        "ABXAB=1 HOME=/h PATH=/usr/bin:/bin PIPE=a|b SEMI=a;b path_lower=pl yes=Y1"
    assert environment("getenv = !S*, !P*, !yes, !ABXAB") == "HOME=/h"


def test_patterns_are_case_insensitive_and_split_on_semicolons() -> None:
    assert environment("getenv = PATH*;home") == "HOME=/h PATH=/usr/bin:/bin path_lower=pl"


def test_yes_and_no_are_names_not_booleans() -> None:
    assert environment("getenv = yes") == "yes=Y1"
    assert environment("getenv = no") == ""


def test_description_wins_and_environment_keeps_values_v1_can_say() -> None:
    # `environment` (even written in the new syntax) keeps imports expressible with ';'
    assert environment('getenv = S*, *AB\nenvironment = "SECRET_X=mine"') == "ABXAB=1 SECRET_X=mine"
    assert environment('getenv = S*, *AB\nenvironment2 = "A=1"') == "A=1 ABXAB=1 SECRET_X=1 SEMI=a;b"


def test_newlines_are_never_imported() -> None:
    assert "NL" not in {k for k, _ in imported(ENV, "true", v1_safe=False)}
