"""The order in which a DAG's walks visit nodes."""

from __future__ import annotations

import enum


class WalkOrder(str, enum.Enum):  # noqa: UP042 -- str() as htcondor2.dags gives it
    """Depth-first visits a node's children (or parents) before its siblings;
    breadth-first visits all of one generation before the next."""

    DEPTH_FIRST = "DEPTH"
    BREADTH_FIRST = "BREADTH"

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"
