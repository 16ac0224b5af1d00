"""The sweep's job: reads its parameter row on stdin, writes one JSON result."""

import argparse
import json
import sys

p = argparse.ArgumentParser()
p.add_argument("--alpha", type=float)
p.add_argument("--beta", type=float)
p.add_argument("--out")
a = p.parse_args()
row = sys.stdin.read().strip()
with open(a.out, "w") as f:
    json.dump({"row": row, "alpha": a.alpha, "beta": a.beta, "value": a.alpha * a.beta}, f)
