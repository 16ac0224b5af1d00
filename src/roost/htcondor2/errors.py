"""``HTCondorException``: the one error class htcondor2 code catches.

roost's own errors (no pool, a refused request, a bad submit description) reach
htcondor2 code as this class, with roost's message; the original is its ``__cause__``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from roost.api.errors import PoolError
from roost.submit.errors import SubmitError


class HTCondorException(Exception):
    """A request to the pool failed (htcondor2's name for it)."""


@contextlib.contextmanager
def as_htcondor() -> Iterator[None]:
    """Turn roost's errors into HTCondorException for the code in the block."""
    try:
        yield
    except (PoolError, SubmitError) as e:
        raise HTCondorException(str(e)) from e
