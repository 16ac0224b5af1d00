"""A Requirements expression as condor_q -better-analyze numbers and reduces it.

HTCondor splits the expression into *steps*: every comparison, every ``!``,
``||`` and ``&&`` (and every clause a logic operator joins) gets an index in
evaluation order, an operator's label naming its operands (``[0] && [1]``).
Steps that read no slot attribute are constants ("always"/"never"), which
prune the operators above them; then each remaining step is counted against
every slot, and an ``&&`` whose count equals one operand's is reduced to that
operand, so the table keeps only the conditions that decide the match. This
module is that algorithm over roost's ClassAd trees, pure: ads in, rows out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from roost.classad import ClassAd, ExprTree
from roost.classad.ast import (
    AdExpr,
    AttrRef,
    BinaryOp,
    Conditional,
    FuncCall,
    ListExpr,
    Literal,
    Node,
    Paren,
    Subscript,
    UnaryOp,
)
from roost.classad.evaluate import evaluate
from roost.classad.unparse import unparse

_COMPARISONS = frozenset({"<", "<=", ">", ">=", "==", "!=", "=?=", "=!="})
_LOGIC = {"!": 1, "||": 2, "&&": 3}
#: the marks HTCondor puts after an operand it found constant: index hard + 1 + 6 * soft
_TRUTHY = ("?", "F", "T", "", "u", "e", "?", "f", "t", "s")


@dataclass
class Step:
    """One numbered sub-expression of the Requirements."""

    node: Node
    label: str
    depth: int
    logic_op: int = 0          # 1 !, 2 ||, 3 &&
    left: int = -1
    right: int = -1
    grip: int = -1
    variable: bool = False     # depends on the time
    constant: bool = False     # reads no slot attribute
    hard_value: bool = False   # its value when constant
    effective: int = -1        # the step it reduces to
    dont_care: bool = False    # pruned: cannot change the result
    matches: int = 0
    matched: list[bool] = field(default_factory=list)

    def make_label(self) -> str | None:
        if not self.logic_op:
            return None
        if self.logic_op == 1:
            return f" ! [{self.left}]" if self.left >= 0 else None
        return f"[{self.left}] {'||' if self.logic_op == 2 else '&&'} [{self.right}]"

    def text(self) -> str:
        if not self.label:
            made = self.make_label()
            if made is not None:
                self.label = made
            else:
                return unparse(self.node) or "empty"
        return self.label


def _split(node: Node, job: ClassAd, steps: list[Step], must_store: bool, depth: int) -> tuple[int, bool]:
    """Append ``node``'s steps; (its index or -1, whether it depends on the time)."""
    label = ""
    logic_op = 0
    push = must_store
    logical = False
    child_depth = depth
    variable = False
    kids: list[Node | None] = [None, None, None]
    t = type(node)
    if t is Literal:
        label = unparse(node)
    elif t is AttrRef:
        if node.base is None and node.name.lower() == "currenttime":  # type: ignore[attr-defined]
            variable = True
        if not node.absolute:  # type: ignore[attr-defined]
            kids[0] = node.base  # type: ignore[attr-defined]
    elif t is BinaryOp:
        op = node.op  # type: ignore[attr-defined]
        kids[0], kids[1] = node.left, node.right  # type: ignore[attr-defined]
        if op in _COMPARISONS:
            push = True
        elif op in _LOGIC:
            logical, logic_op, push = True, _LOGIC[op], True
    elif t is UnaryOp:
        kids[0] = node.operand  # type: ignore[attr-defined]
        if node.op == "!":  # type: ignore[attr-defined]
            logical, logic_op, push = True, 1, True
    elif t is Paren:
        kids[0] = node.expr  # type: ignore[attr-defined]
        push, logical, child_depth = False, True, depth + 1
    elif t is Conditional:
        if node.then is None:  # type: ignore[attr-defined]
            # elvis: a MY attribute defaulted to a literal is not worth a step of its own
            kids[0], kids[1] = node.cond, node.else_  # type: ignore[attr-defined]
            cond, other = node.cond, node.else_  # type: ignore[attr-defined]
            while type(other) is Paren:
                other = other.expr
            if _is_my_ref(cond, job) and type(other) is Literal:
                push = False
            if must_store:
                push = True
        else:
            kids = [node.cond, node.then, node.else_]  # type: ignore[attr-defined]
    elif t is FuncCall:
        label = unparse(node) if must_store else node.name + "()"  # type: ignore[attr-defined]
        if not node.args and node.lname == "time":  # type: ignore[attr-defined]
            variable = True
    elif t is Subscript:
        kids[0], kids[1] = node.base, node.index  # type: ignore[attr-defined]
    elif t in (ListExpr, AdExpr):
        pass
    idx = [-1, -1, -1]
    for i, kid in enumerate(kids):
        if kid is not None:
            idx[i], v = _split(kid, job, steps, logical, child_depth)
            variable = variable or v
    only_left = kids[0] is not None and kids[1] is None and kids[2] is None
    me = -1
    if push:
        if only_left and idx[0] >= 0:
            me = idx[0]
            if me == len(steps) - 1 and logic_op == 1:
                # ``!`` rewrites the step below it rather than adding one
                sub = steps[-1]
                sub.node, sub.logic_op, sub.depth = node, 1, depth
                if sub.label:
                    sub.label = "! " + sub.label
        else:
            me = len(steps)
            steps.append(Step(node, label, depth, logic_op, idx[0], idx[1], idx[2], variable=variable))
    elif only_left:
        me = idx[0]
    return me, variable


def _is_my_ref(node: Node, job: ClassAd) -> bool:
    while type(node) is Paren:
        node = node.expr  # type: ignore[attr-defined]
    if type(node) is not AttrRef:
        return False
    base = node.base  # type: ignore[attr-defined]
    if base is None:
        return node.name in job  # type: ignore[attr-defined]
    return type(base) is AttrRef and base.name.lower() == "my"


def split(job: ClassAd, node: Node) -> list[Step]:
    """The steps of ``node`` (a job's Requirements), in HTCondor's numbering."""
    steps: list[Step] = []
    _split(node, job, steps, True, 0)
    return steps


def numbered_clauses(job: ClassAd, node: Node) -> list[str]:
    """The ``[N] : clause`` lines printed under the expression."""
    out = []
    for i, s in enumerate(split(job, node)):
        made = s.make_label()
        if made is not None:
            clause = made
        elif s.left < 0:
            clause = unparse(s.node)
        else:
            clause = f"[{s.left}] " + unparse(s.node)
        out.append(f"    {f'[{i}]':<6} : {clause}")
    return out


def _slot_refs(job: ClassAd, node: Node) -> bool:
    """Whether ``node`` reads anything the job does not define (a slot attribute)."""
    # classad2's lists say "no names" as [''], as roost's do
    return any(r and not r.lower().startswith("my.") for r in job.externalRefs(ExprTree._wrap(node)))


def _true(v: Any) -> bool:
    return v is True or (type(v) in (int, float) and v != 0)


def _mark_irrelevant(steps: list[Step], i: int) -> None:
    if i >= 0:
        steps[i].dont_care = True
        for k in (steps[i].left, steps[i].right, steps[i].grip):
            _mark_irrelevant(steps, k)


def _propagate_constants(steps: list[Step]) -> None:
    for s in steps:
        eff = irrelevant = -1
        soft_irr = False
        if s.logic_op:
            hard = []
            soft = []
            for k in (s.left, s.right, s.grip):
                if k >= 0 and steps[k].constant:
                    hard.append(int(steps[k].hard_value))
                    soft.append(steps[k].variable)
                else:
                    hard.append(2)
                    soft.append(False)
            hl, hr, _hg = hard
            sl, sr, _sg = soft
            mark = lambda h, v: _TRUTHY[h + 1 + (6 if v else 0)]  # noqa: E731
            if s.logic_op == 1:
                if not s.label and s.left >= 0:
                    s.label = f" ! [{s.left}]{mark(hl, sl)}"
            elif s.logic_op == 2:
                if hl == 1 or hr == 1:
                    s.constant, s.hard_value, s.variable = True, True, sl and sr
                    if hl == 1:
                        s.effective = eff = s.left
                        irrelevant, soft_irr = s.right, sl and bool(hr or sr)
                    else:
                        s.effective = eff = s.right
                        irrelevant, soft_irr = s.left, sr and bool(hl or sl)
                elif hl == 0 and hr == 0:
                    s.constant, s.variable, s.hard_value = True, sl or sr, False
                elif hl == 0:
                    s.effective = eff = s.right
                    irrelevant, soft_irr = s.left, sl
                elif hr == 0:
                    s.effective = eff = s.left
                    irrelevant, soft_irr = s.right, sr
                s.label = f"[{s.left}]{mark(hl, sl)} || [{s.right}]{mark(hr, sr)}"
            elif s.logic_op == 3:
                if hl == 0 or hr == 0:
                    s.constant, s.variable, s.hard_value = True, sl or sr, False
                    if hl == 0:
                        s.effective = eff = s.left
                        irrelevant, soft_irr = s.right, sl
                    else:
                        s.effective = eff = s.right
                        irrelevant, soft_irr = s.left, sr
                elif hl == 1 and hr == 1:
                    s.constant, s.variable, s.hard_value = True, sl or sr, True
                elif hl == 1:
                    s.effective = eff = s.right
                elif hr == 1:
                    s.effective = eff = s.left
                s.label = f"[{s.left}]{mark(hl, sl)} && [{s.right}]{mark(hr, sr)}"
        if eff >= 0:
            if irrelevant < 0:
                if eff == s.left:
                    irrelevant = s.right
                if eff == s.right:
                    irrelevant = s.left
                if s.variable:
                    soft_irr = True
            while steps[eff].effective >= 0:
                eff = steps[eff].effective
                s.effective = eff
        if irrelevant >= 0 and not soft_irr:
            _mark_irrelevant(steps, irrelevant)


def _follow(steps: list[Step], k: int) -> int:
    while steps[k].effective >= 0:
        k = steps[k].effective
    return k


def reduce(job: ClassAd, node: Node, slots: Sequence[ClassAd]) -> list[Step]:
    """The steps with constants found, pruned, and each live one counted over ``slots``."""
    steps = split(job, node)
    for s in steps:
        s.constant = not _slot_refs(job, s.node)
        if s.constant:
            s.hard_value = _true(evaluate(s.node, job, None))
    _propagate_constants(steps)
    for s in steps:  # operands that reduce to another step name that step
        changed = False
        for attr in ("left", "right", "grip"):
            k = getattr(s, attr)
            if k >= 0 and steps[k].effective >= 0:
                setattr(s, attr, steps[k].effective)
                changed = True
        if changed:
            s.label = ""
    n = len(slots)
    for s in steps:
        if s.effective >= 0 or s.dont_care or s.constant:
            continue
        left, right = s.left, s.right
        if left >= 0 and right >= 0 and s.logic_op:
            eff = prune = -1
            cl, cr = steps[left].matches, steps[right].matches
            if s.logic_op == 3:
                if cl == 0:
                    eff = left
                elif cr == 0:
                    eff = right
            elif s.logic_op == 2:
                if cl == n:
                    eff, prune = left, right
                elif cr == n:
                    eff, prune = right, left
                elif cl == 0 and cr != 0:
                    eff, prune = right, left
                elif cl != 0 and cr == 0:
                    eff, prune = left, right
            if prune >= 0:
                _mark_irrelevant(steps, prune)
            if eff >= 0:
                s.effective = _follow(steps, eff)
            else:
                _relabel(steps, s)
        s.matched = [_true(evaluate(s.node, job, slot)) for slot in slots]
        s.matches = sum(s.matched)
        if left >= 0 and right >= 0 and s.logic_op:
            eff = -1
            if s.logic_op == 3:
                if steps[left].matches == s.matches:
                    eff = left
                    if steps[right].matches > s.matches:
                        steps[right].dont_care = True
                elif steps[right].matches == s.matches:
                    eff = right
                    if steps[left].matches > s.matches:
                        steps[left].dont_care = True
            if eff >= 0:
                s.effective = _follow(steps, eff)
                s.label = ""
            else:
                _relabel(steps, s)
    return steps


def _relabel(steps: list[Step], s: Step) -> None:
    if s.left >= 0 and steps[s.left].effective >= 0:
        s.left = steps[s.left].effective
        s.label = ""
    if s.right >= 0 and steps[s.right].effective >= 0:
        s.right = steps[s.right].effective
        s.label = ""


def table(steps: list[Step], target: str = "Slot") -> list[str]:
    """The ``Step  Matched  Condition`` table of the steps that decide the match."""
    lines = [" " * 7 + f"{target + 's':>6}", "Step   Matched  Condition", "----- --------- ---------"]
    for ix, s in enumerate(steps):
        if s.effective >= 0 or s.dont_care:
            continue
        step = f"[{ix}]      "[:5]
        if s.constant:
            lines.append(f"{step} {'always' if s.hard_value else 'never':>9}  {s.text()}")
        else:
            lines.append(f"{step} {s.matches:>9}  {s.text()}")
    return lines


def pretty(text: str, indent: int, width: int) -> str:
    """``text`` broken after ``&&``/``||`` so lines stay within ``width`` (HTCondor's wrap)."""
    if indent > width:
        indent = width * 2 // 3
    buf = list(text)
    i = last_and = line_start = 0
    indent_at_last_and = indent
    pos = indent
    was_and = False
    prev = ""
    while i < len(buf):
        ch = buf[i]
        is_and = False
        if ch in "&|" and prev == ch:
            is_and = True
        elif ch == "(":
            indent += 2
        elif ch == ")":
            indent -= 2
        if pos >= width and last_and != line_start:
            buf[last_and] = "\n"
            line_start = last_and + 1
            pad = max(indent_at_last_and, 0)
            buf[line_start:line_start] = [" "] * pad
            i += pad
            last_and = line_start
            pos = i - line_start if pad else 0
            indent_at_last_and = indent
        if was_and:
            last_and = i
            indent_at_last_and = indent
        prev = ch
        i += 1
        pos += 1
        was_and = is_and
    return "".join(buf)
