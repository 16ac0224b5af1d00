"""Events of grid-universe jobs (issue 30): handed to another batch system or pool,
and that system lost or back. Bodies and attribute names follow HTCondor's
condor_event.cpp (see events.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from roost.eventlog.events import Attrs, Event, EventType, expect_line


@dataclass(eq=True, repr=True)
class GridSubmitEvent(Event):
    """027: the grid manager handed the job to its grid resource."""

    type: ClassVar[EventType] = EventType.GRID_SUBMIT
    my_type: ClassVar[str] = "GridSubmitEvent"

    grid_resource: str = ""
    grid_job_id: str = ""

    def body(self) -> str:
        return (f"Job submitted to grid resource\n    GridResource: {self.grid_resource}\n"
                f"    GridJobId: {self.grid_job_id}\n")

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        expect_line(lines, 0, "Job submitted to grid resource")
        resource = expect_line(lines, 1, "    GridResource: ")
        job_id = expect_line(lines, 2, "    GridJobId: ")
        return cls(**common, grid_resource=resource, grid_job_id=job_id)

    def _attrs(self) -> Attrs:
        return {"GridResource": self.grid_resource, "GridJobId": self.grid_job_id}


@dataclass(eq=True, repr=True)
class _GridResourceEvent(Event):
    """A grid resource's state, one line naming it: the two events differ in their
    first line only."""

    first_line: ClassVar[str]
    grid_resource: str = ""

    def body(self) -> str:
        return f"{self.first_line}\n    GridResource: {self.grid_resource}\n"

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        expect_line(lines, 0, cls.first_line)
        return cls(**common, grid_resource=expect_line(lines, 1, "    GridResource: "))

    def _attrs(self) -> Attrs:
        return {"GridResource": self.grid_resource}


@dataclass(eq=True, repr=True)
class GridResourceUpEvent(_GridResourceEvent):
    """025: the grid resource answers again."""

    type: ClassVar[EventType] = EventType.GRID_RESOURCE_UP
    my_type: ClassVar[str] = "GridResourceUpEvent"
    first_line: ClassVar[str] = "Grid Resource Back Up"


@dataclass(eq=True, repr=True)
class GridResourceDownEvent(_GridResourceEvent):
    """026: the grid resource stopped answering (its jobs are not lost: they are looked
    for again when it is back)."""

    type: ClassVar[EventType] = EventType.GRID_RESOURCE_DOWN
    my_type: ClassVar[str] = "GridResourceDownEvent"
    first_line: ClassVar[str] = "Detected Down Grid Resource"


__all__ = ["GridResourceDownEvent", "GridResourceUpEvent", "GridSubmitEvent"]
