"""Shared argument handling of the job commands: ``-af:flags``, and positional
restrictions (job ids and user names) turned into a query, as condor_q reads them."""

from __future__ import annotations

from roost.api.jobids import is_job_id


def split_af(argv: list[str]) -> tuple[list[str], str]:
    """Rewrite ``-af:jh``/``-autoformat:lh`` to ``-af``; return argv and the flags."""
    out, flags = [], ""
    for a in argv:
        head, colon, tail = a.partition(":")
        if colon and head in ("-af", "-autoformat", "--af", "--autoformat"):
            flags = tail
            out.append("-af")
        else:
            out.append(a)
    return out, flags


def split_format(argv: list[str], shortest: int = 1) -> tuple[list[str], list[tuple[str, str]]]:
    """Take every ``-format FMT EXPR`` out of argv (``-f``, ``-fo`` ... as condor_q allows;
    ``shortest``: the fewest letters of "format" that name it): (the rest, the pairs).
    ValueError when one lacks its two arguments. The columns are built by
    ``roost.cli.printf`` only when there are some."""
    rest: list[str] = []
    pairs: list[tuple[str, str]] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        word = a.lstrip("-")
        if a.startswith("-") and len(word) >= shortest and "format".startswith(word):
            if i + 2 >= len(argv):
                raise ValueError(f"{a} needs a format and an attribute (-format FMT ATTR)")
            pairs.append((argv[i + 1], argv[i + 2]))
            i += 3
            continue
        rest.append(a)
        i += 1
    return rest, pairs


def check_exprs(exprs: list[str], option: str) -> None:
    """UsageError-style ValueError naming the first of ``exprs`` that is not a ClassAd
    expression (condor_q would drop it and everything after it without a word)."""
    if all(e.isidentifier() for e in exprs):
        return  # plain attribute names: no parser needed (the table views stay light)
    # lazy: only expressions need the ClassAd parser
    from roost.classad import ExprTree

    for e in exprs:
        try:
            ExprTree(e)
        except Exception as err:  # ClassAdParseError: its first line says where and what
            first = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise ValueError(f"{option} {e!r} is not a ClassAd expression: {first}") from None


class Restriction:
    """Job ids and user names from the command line (no dataclass: it imports too much)."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.users: list[str] = []

    @classmethod
    def parse(cls, args: list[str]) -> Restriction:
        r = cls()
        for a in args:
            (r.ids if is_job_id(a) else r.users).append(a)
        return r

    def owner(self) -> str | None:
        """The single owner the schedd can filter on itself."""
        return self.users[0] if len(self.users) == 1 else None

    def constraint(self, extra: str | None) -> str | None:
        """-constraint plus, for several users, an ``Owner == ...`` alternative."""
        parts = []
        if len(self.users) > 1:
            # lazy: only several users need ClassAd string quoting (roost.classad, ~4 ms)
            from roost.classad.unparse import quote

            parts.append("(" + " || ".join(f"Owner == {quote(u)}" for u in self.users) + ")")
        if extra:
            parts.append(f"({extra})" if parts else extra)
        return " && ".join(parts) or None


def error_line(prog: str, err: Exception) -> str:
    """``roost q: <first line of the error>``: one line, whatever the daemon sent."""
    lines = str(err).strip().splitlines() or [type(err).__name__]
    return f"{prog}: {lines[0]}"
