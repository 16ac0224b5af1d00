"""``import htcondor2`` with this directory's parent on PYTHONPATH: roost's face.

The module object replaces this one in ``sys.modules``, so ``htcondor2`` *is*
:mod:`roost.htcondor2` (one set of classes, whichever name imported them).
``htcondor2.dags`` and its modules are entered under their htcondor2 names too:
``import htcondor2.dags`` would otherwise load a second copy of roost's
``dags`` package, with classes of its own, from roost.htcondor2's directory.
"""

import sys

import roost.htcondor2
import roost.htcondor2.dags

sys.modules[__name__] = roost.htcondor2
for _name, _module in list(sys.modules.items()):
    if _name == "roost.htcondor2.dags" or _name.startswith("roost.htcondor2.dags."):
        sys.modules["htcondor2" + _name[len("roost.htcondor2"):]] = _module
