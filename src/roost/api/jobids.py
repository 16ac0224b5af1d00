"""Job ids as users write them: ``12`` (cluster 12) or ``12.3`` (cluster 12, proc 3)."""

from __future__ import annotations

from typing import Any


def is_job_id(text: str) -> bool:
    """True for ``C`` or ``C.P`` (non-negative integers)."""
    c, dot, p = text.partition(".")
    return c.isdigit() and (not dot or p.isdigit())


def parse_job_id(text: str) -> tuple[int, int | None]:
    """``"12.3"`` -> (12, 3); ``"12"`` -> (12, None); ValueError otherwise."""
    if not is_job_id(text):
        raise ValueError(f"{text!r} is not a job id (CLUSTER or CLUSTER.PROC)")
    c, _, p = text.partition(".")
    return int(c), (int(p) if p else None)


def _is_pair(value: object) -> bool:
    """A (cluster, proc) tuple: two whole numbers (ints or digit strings). Any other
    2-tuple, such as ("5.0", "6.0") or ((1, 0), (2, 0)), is two ids."""
    return (
        isinstance(value, tuple)
        and len(value) == 2
        and all(
            (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, str) and v.strip().isdigit())
            for v in value
        )
    )


def normalize_ids(ids: object) -> list[str]:
    """Accept one id or many, as str/int/(c, p) tuples; return ``"C"``/``"C.P"`` strings."""
    if ids is None:
        return []
    if isinstance(ids, (str, int)) or _is_pair(ids):
        ids = [ids]
    out: list[str] = []
    for i in ids:  # type: ignore[attr-defined]
        if isinstance(i, tuple):
            text = f"{int(i[0])}.{int(i[1])}"
        else:
            text = str(i).strip()
        parse_job_id(text)
        out.append(text)
    return out


def job_selection(ids: list[str], constraint: str | None, owner: str | None) -> dict[str, Any]:
    """The jobs a QUERY_JOBS, ACT or EDIT names, as its arguments: ``ids`` (already
    checked), ``constraint``, ``owner``; each only when given (none: every job)."""
    args: dict[str, Any] = {}
    if ids:
        args["ids"] = ids
    if constraint:
        args["constraint"] = constraint
    if owner:
        args["owner"] = owner
    return args
