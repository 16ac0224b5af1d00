"""``import classad2`` with this directory's parent on PYTHONPATH: roost's ClassAds
(:mod:`roost.classad`, the module object itself, so the classes are the same)."""

import sys

import roost.classad

sys.modules[__name__] = roost.classad
