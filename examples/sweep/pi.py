#!/usr/bin/env python3
"""One job of the sweep: a Monte Carlo estimate of pi from its own seed.

Reads ``seed samples`` from the input file, throws that many random points
into the unit square, and writes ``seed samples hits`` to the output file:
hits / samples estimates pi / 4. The aggregation step combines every job's
counts into one estimate with its standard error.
"""

import random
import sys


def main() -> int:
    src, dst = sys.argv[1], sys.argv[2]
    with open(src) as f:
        seed, samples = (int(x) for x in f.read().split())
    rng = random.Random(seed)
    rand = rng.random
    hits = 0
    for _ in range(samples):
        x = rand()
        y = rand()
        if x * x + y * y <= 1.0:
            hits += 1
    with open(dst, "w") as f:
        f.write(f"{seed} {samples} {hits}\n")
    print(f"seed {seed}: {hits}/{samples} -> pi ~ {4.0 * hits / samples:.5f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
