"""``classad2`` under roost's name: ``import roost.classad2 as classad2``.

roost's ClassAd library (:mod:`roost.classad`) already has classad2's API; this
module is that library under the name htcondor2 code imports it by, so
``isinstance(ad, classad2.ClassAd)`` holds for the ads roost.htcondor2 returns.
"""

from __future__ import annotations

import roost.classad as _classad
from roost.classad import __all__ as __all__  # noqa: PLE0605


def __getattr__(name: str) -> object:
    return getattr(_classad, name)


def __dir__() -> list[str]:
    return sorted(__all__)
