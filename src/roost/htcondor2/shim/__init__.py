"""A directory to put on PYTHONPATH so that unchanged code's ``import htcondor2`` and
``import classad2`` load roost's face (:mod:`roost.htcondor2`, :mod:`roost.classad2`)
instead of HTCondor's bindings:

    export PYTHONPATH="$(python -m roost.htcondor2.shim)${PYTHONPATH:+:$PYTHONPATH}"

PYTHONPATH comes before site-packages, so this wins over an installed ``htcondor``
package. Nothing else changes: no sitecustomize, no import hooks.
"""

from __future__ import annotations

import os

#: the directory holding the ``htcondor2`` and ``classad2`` shim packages
SHIM_DIR = os.path.dirname(os.path.abspath(__file__))
