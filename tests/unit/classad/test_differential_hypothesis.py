"""Random expressions and ads, roost.classad against classad2 (hypothesis).

Derandomised, so CI sees the same examples every run; a failure prints the
smallest expression both libraries disagree on.
"""

from __future__ import annotations

import os

import pytest
from diff_harness import (
    assert_same,
    canon_json,
    canon_order,
    check_eval,
    check_match,
    check_unparse,
)
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from strategies import SCOPE_ADS, expressions, job_ads, machine_ads

# the recursive strategy's repr is large; hypothesis warns when it builds it for a report
pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")

# Shrinking a failure can take minutes; the suite must stay fast even while roost is wrong.
# ROOST_DIFF_SHRINK=1 turns it on to get the smallest failing expression.
_PHASES = [Phase.explicit, Phase.reuse, Phase.generate]
if os.environ.get("ROOST_DIFF_SHRINK") == "1":
    _PHASES.append(Phase.shrink)

FAST = settings(
    # ROOST_DIFF_EXAMPLES=5000 for a deeper (slower) search
    max_examples=int(os.environ.get("ROOST_DIFF_EXAMPLES", "300")),
    phases=_PHASES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


@FAST
@given(expressions)
def test_random_expression(expr: str) -> None:
    check_eval(expr)


@FAST
@given(expressions, SCOPE_ADS, job_ads())
def test_random_expression_in_ads(expr: str, my: str, target: str) -> None:
    check_eval(expr, my, target)


@FAST
@given(expressions)
def test_random_unparse(expr: str) -> None:
    check_unparse(expr)


@FAST
@given(expressions)
def test_unparse_reparse_evaluates_the_same(expr: str) -> None:
    # roost's own round trip: text -> tree -> text -> tree must not change the value
    assert_same(
        f"eval(ExprTree(str(ExprTree({expr!r}))))",
        lambda lib: lib.ExprTree(str(lib.ExprTree(expr))).eval(),
    )


@FAST
@given(job_ads(), machine_ads())
def test_random_symmetric_match(job: str, machine: str) -> None:
    check_match(job, machine)


@FAST
@given(job_ads(), machine_ads(), st.sampled_from(["Requirements", "Rank", "Start"]))
def test_random_requirements_and_rank(job: str, machine: str, attr: str) -> None:
    check_eval(f"MY.{attr}", machine, job)
    check_eval(f"TARGET.{attr}", job, machine)


@FAST
@given(SCOPE_ADS)
def test_random_ad_printing(ad: str) -> None:
    # attribute order is a documented deviation: lines sorted, JSON compared as data
    assert_same(f"printOld({ad!r})", lambda lib: sorted(map(canon_order, lib.ClassAd(ad).printOld().splitlines())))
    assert_same(f"printJson({ad!r})", lambda lib: canon_json(lib.ClassAd(ad).printJson()))
    assert_same(f"str(ClassAd({ad!r}))", lambda lib: canon_order(str(lib.ClassAd(ad))))
