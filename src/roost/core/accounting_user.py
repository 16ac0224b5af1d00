"""Whom a job's usage is charged to: its owner, unless the schedd's policy says otherwise.

HTCondor takes ``accounting_group_user`` (``AcctGroupUser``) and a hand-written
``+AccountingGroup`` as given: bob can set ``accounting_group_user = alice`` and the
accountant charges alice for bob's jobs (sites close that with SUBMIT_REQUIREMENTS or
a job transform). roost refuses by default: the user part of a job's accounting name
(``AcctGroupUser``, and the last dot-separated part of ``AccountingGroup``, which is
what the negotiator charges, ``group.user@UID_DOMAIN``) must be the job's owner, unless
whoever submits or edits is a queue super user (``QUEUE_SUPER_USERS``) or the
administrator set ``SCHEDD_ALLOW_OTHER_ACCOUNTING_USER = True`` (HTCondor's behaviour).

Pure: the job's attributes in their wire form in (an expression is ``"/Expr(...)/"``),
the one-line refusal out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: the administrator's knob: True lets any submitter charge any accounting user
ALLOW_OTHER_KNOB = "SCHEDD_ALLOW_OTHER_ACCOUNTING_USER"
#: the attributes that name the accounting user, as a job ad spells them
ATTRS = ("AcctGroupUser", "AccountingGroup")
#: the same, as ClassAd names compare (case-insensitively)
ATTRS_LOWER = frozenset(a.lower() for a in ATTRS)
RULE = (f"the accounting user must be the job's owner unless the submitter is a queue super user "
        f"or {ALLOW_OTHER_KNOB} is true")


def _user_part(attr: str, value: Any) -> str | None:
    """The user a value of ``attr`` charges; None when it is no plain string (an
    expression could name anyone at any time)."""
    if not isinstance(value, str) or value.startswith("/Expr("):
        return None
    return value.rsplit(".", 1)[-1] if attr == "AccountingGroup" else value


def accounting_user_problem(owner: str, get: Callable[[str], Any]) -> str | None:
    """What is wrong with the accounting user of a job owned by ``owner`` (``get``
    reads its attributes, case-insensitively), as one line naming the attribute, its
    value and the rule; None when it charges its owner or sets no accounting user."""
    for attr in ATTRS:
        value = get(attr)
        if value is None:
            continue
        user = _user_part(attr, value)
        if user == owner:
            continue
        shown = f'"{value}"' if isinstance(value, str) and not value.startswith("/Expr(") else str(value)
        whom = f"user {user!r}" if user is not None else "an expression"
        return f"{attr} = {shown}: {owner} may not charge jobs to {whom}: {RULE}"
    return None


def with_edits(values: dict[str, Any], get: Callable[[str], Any]) -> Callable[[str], Any]:
    """``get`` with an edit's ``values`` over it (EDIT, Chirp's set_job_attr), the edit's
    names compared case-insensitively, as ClassAd names are."""
    lower = {k.lower(): v for k, v in values.items()}
    return lambda name: lower[name.lower()] if name.lower() in lower else get(name)


def lookup(ad: dict[str, Any]) -> Callable[[str], Any]:
    """A case-insensitive ``get`` over a wire-form ad (ClassAd names ignore case)."""
    return with_edits(ad, lambda name: None)
