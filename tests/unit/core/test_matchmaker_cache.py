"""What SlotPool remembers between calls (answers by class, classes not worth offering,
requests too heavy for a limit, the free-slot count) never changes a plan."""

import random

from roost.core.matchmaker import SlotPool, negotiate

from .test_matchmaker import _random_case


class Forgetful(SlotPool):
    """A pool that forgets everything it learnt about requests before each one."""

    def match_request(self, request, limit=None, **kw):
        self._results.clear()
        self._jobs.clear()
        return super().match_request(request, limit, **kw)


def _free(pool):
    n = 0
    for v in pool.views:
        if v.used or v.claimed:
            continue
        if v.partitionable and v.remaining["Cpus"] <= 0 and v.remaining["Memory"] <= 0:
            continue
        n += 1
    return n


def _spin(pool, slots, requests, subs, rng_state):
    rng = random.Random(rng_state)
    out = []
    for _ in range(6):
        limits = {s: rng.choice([0, 0.5, 1, 1.5, 2, 3]) for s in subs} if rng.random() < 0.8 else None
        order = list(subs)
        rng.shuffle(order)
        plan = negotiate(slots, requests, order, 0.0, limits=limits, pool=pool)
        out.append([(m.request.autocluster, m.slot.name, m.rank, dict(m.resources), m.weight)
                    for m in plan.matches])
        out.append(sorted(plan.unmatched.items()))
        assert pool.free_slots() == _free(pool)
    return out


def test_many_small_passes_equal_a_pool_that_remembers_nothing():
    for seed in range(120):
        slots, requests, subs, _, pre, post = _random_case(random.Random(5000 + seed))
        want = _spin(Forgetful(slots, pre_job_rank=pre, post_job_rank=post), slots, requests,
                     subs, seed)
        got = _spin(SlotPool(slots, pre_job_rank=pre, post_job_rank=post), slots, requests,
                    subs, seed)
        assert got == want, seed
