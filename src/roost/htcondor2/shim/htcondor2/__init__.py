"""``import htcondor2`` with this directory's parent on PYTHONPATH: roost's face.

The module object replaces this one in ``sys.modules``, so ``htcondor2`` *is*
:mod:`roost.htcondor2` (one set of classes, whichever name imported them).
"""

import sys

import roost.htcondor2

sys.modules[__name__] = roost.htcondor2
