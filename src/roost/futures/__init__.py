"""``roost.futures``: ``concurrent.futures`` over a roost pool.

``Executor().submit(fn, *args)`` runs ``fn`` in a job and returns a future; ``map``
runs many calls as one cluster (``chunksize`` calls a job). Functions, arguments,
results and exceptions travel with ``cloudpickle`` (``pip install 'roost[futures]'``).
See docs/futures.md.
"""

try:
    import cloudpickle  # noqa: F401
except ImportError as e:  # an optional dependency: say which
    raise ImportError("roost.futures needs the cloudpickle package: pip install 'roost[futures]'") from e

from roost.futures.executor import Executor, JobFuture
from roost.futures.outcomes import (
    JobError,
    JobHeldError,
    JobRemovedError,
    RemoteError,
    RemoteTraceback,
)

__all__ = [
    "Executor",
    "JobError",
    "JobFuture",
    "JobHeldError",
    "JobRemovedError",
    "RemoteError",
    "RemoteTraceback",
]
