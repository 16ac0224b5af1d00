"""The generated threshold checks and the fair share's slot weights read off the pool's views.

Both replace a plain computation in the negotiation's hot paths; each is compared here
with the computation it stands for.
"""

import math
import operator
import random

from roost.classad import ClassAd, ExprTree
from roost.core.fairshare import GroupConfig, Submitter, negotiate_fair, slot_weight
from roost.core.matchmaker import Request, Slot
from roost.core.thresholds import _never, passes_all

_CMPS = (operator.ge, operator.gt, operator.le, operator.lt, _never)
_NUMBERS = (0, 1, 2, 0.5, -1, 3.0, math.inf, -math.inf, math.nan)


def test_passes_all_says_what_the_loop_over_the_checks_says() -> None:
    rng = random.Random(5)
    attrs = ("Cpus", "Memory", "Disk", "GPUs")
    for _ in range(3000):
        checks = tuple((rng.choice(attrs), rng.choice(_CMPS), rng.choice(_NUMBERS))
                       for _ in range(rng.randrange(5)))
        passes = passes_all(checks)
        for _ in range(5):
            rem = {a: rng.choice(_NUMBERS) for a in attrs}
            want = all(cmp(rem[a], number) for a, cmp, number in checks)
            assert bool(passes(rem)) is want, (checks, rem)


def test_checks_of_one_shape_keep_their_own_numbers() -> None:
    two = passes_all((("Memory", operator.ge, 2048),))
    four = passes_all((("Memory", operator.ge, 4096),))
    assert two({"Memory": 3000}) and not four({"Memory": 3000})
    assert passes_all(())({})


def _slot(i: int, state: str, **attrs: object) -> Slot:
    ad = ClassAd({"Name": f"s{i}", "Cpus": 2, "Memory": 4096, "Disk": 100000, "State": state,
                  "PartitionableSlot": False, "Requirements": True, **attrs})
    return Slot(f"s{i}", ad, claim_id=f"c{i}")


def test_the_pool_a_cycle_shares_out_counts_each_slot_weight_as_slot_weight_says() -> None:
    # SlotWeight as a literal, a name, an expression, one that is no number (Cpus then),
    # a negative one (0), none; unclaimed, claimed and owner slots
    weights = [{"SlotWeight": 3}, {"SlotWeight": ExprTree("Cpus")}, {"SlotWeight": ExprTree("Cpus * 4")},
               {"SlotWeight": "x"}, {"SlotWeight": True}, {"SlotWeight": -3},
               {"SlotWeight": ExprTree("undefined")}, {"SlotWeight": ExprTree("Memory / 1024")}, {},
               {"SlotWeight": 1e400}, {"SlotWeight": ExprTree("Target")}]
    slots = [_slot(i, state, **w) for i, w in enumerate(weights)
             for state in ("Unclaimed", "Claimed", "Owner")]
    slots = [Slot(f"{s.name}-{i}", s.ad, s.claim_id) for i, s in enumerate(slots)]
    total = sum(slot_weight(s.ad) for s in slots if s.ad["State"] in ("Unclaimed", "Claimed"))
    job = ClassAd({"RequestCpus": 1, "RequestMemory": 1, "Requirements": False})
    plan = negotiate_fair(slots, {"a@h": [Request("a@h", 1, 1000, job)]},
                          [Submitter("a@h", 1.0, group="g")], 0.0, groups=[GroupConfig("g", dynamic=0.25)])
    # the group (which wants more) may hold a quarter of the pool's weight
    assert math.isclose(plan.group_quota["g"], total * 0.25)
