"""The accounting-user rule (issue 25): a job's usage is charged to its owner unless
the schedd's policy lets the submitter name another user."""

from __future__ import annotations

import pytest

from roost.core.accounting_user import ALLOW_OTHER_KNOB, accounting_user_problem, lookup


@pytest.mark.parametrize("ad", [
    {},
    {"AcctGroupUser": "bob", "AccountingGroup": "bob"},
    {"AcctGroupUser": "bob", "AcctGroup": "group_x", "AccountingGroup": "group_x.bob"},
    {"AccountingGroup": "group_a.group_b.bob"},
    {"AccountingGroup": "nice-user.bob"},
    {"acctgroupuser": "bob"},  # ClassAd names ignore case
])
def test_charging_the_owner_is_always_fine(ad):
    assert accounting_user_problem("bob", lookup(ad)) is None


@pytest.mark.parametrize(("ad", "attr", "whom"), [
    ({"AcctGroupUser": "alice", "AccountingGroup": "alice"}, "AcctGroupUser", "user 'alice'"),
    ({"AcctGroupUser": "bob", "AccountingGroup": "group_x.alice"}, "AccountingGroup", "user 'alice'"),
    ({"AccountingGroup": "group_x.alice"}, "AccountingGroup", "user 'alice'"),  # +AccountingGroup by hand
    ({"AccountingGroup": "alice"}, "AccountingGroup", "user 'alice'"),
    ({"accountinggroup": "group_x"}, "AccountingGroup", "user 'group_x'"),  # a group with no user part
    ({"AccountingGroup": "group_x.bob@elsewhere"}, "AccountingGroup", "user 'bob@elsewhere'"),
    ({"AcctGroupUser": "/Expr(Owner)/"}, "AcctGroupUser", "an expression"),
    ({"AccountingGroup": "/Expr(strcat(\"g.\", \"alice\"))/"}, "AccountingGroup", "an expression"),
    ({"AcctGroupUser": 7}, "AcctGroupUser", "an expression"),
])
def test_another_user_is_refused_in_one_line_naming_attribute_and_rule(ad, attr, whom):
    problem = accounting_user_problem("bob", lookup(ad))
    assert problem is not None and "\n" not in problem
    assert problem.startswith(f"{attr} = ") and f"bob may not charge jobs to {whom}" in problem
    assert "queue super user" in problem and ALLOW_OTHER_KNOB in problem
