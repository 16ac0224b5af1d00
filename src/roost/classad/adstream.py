"""Reading several ClassAds from one text or file, as classad2's ``parseAds``,
``parseOne`` and ``parseNext`` do.

Formats (:class:`ParserType`):

- *old*: ``Name = expression`` one per line, ads separated by blank lines,
  ``#`` lines are comments (``condor_q -long``, ``condor_status -long``);
- *new*: ``[ a = 1; b = 2 ]`` ads one after another, blank lines optional;
- *JSON*: objects one after another, or a JSON array of them (``condor_q -json``).

``Auto`` (and ``FileAuto``) look at the first non-blank character: ``[`` or
``/`` means new, ``{`` or ``[{`` means JSON, ``<`` XML (refused: not
supported), anything else old. Deviations from classad2, where it is
unhelpful: its ``Auto`` finds no ads in JSON and its ``FileAuto`` fails on
old-format text; where it silently drops the rest of an old-format ad after a
bad line, this module raises :class:`ClassAdSyntaxError` naming the line (a
half-read machine ad that quietly matches nothing is worse than an error).
Errors are ``ClassAdSyntaxError``, a ``ValueError`` as classad2 raises.
"""

from __future__ import annotations

import enum
import io
from collections.abc import Iterable, Iterator
from typing import IO, Any

from roost.classad.ast import Node
from roost.classad.classad import ClassAd
from roost.classad.errors import ClassAdSyntaxError
from roost.classad.jsonparse import iter_json_ads
from roost.classad.parser import iter_ads as parse_stream


class ParserType(enum.IntEnum):
    """The serialization formats, numbered as classad2's ``ParserType``."""

    Auto = -1
    Old = 0
    XML = 1
    JSON = 2
    New = 3
    FileAuto = 4


Source = str | IO[str] | Iterable[str]


def detect(text: str, start: int = 0) -> ParserType:
    """The format of the ads in ``text`` from its first non-blank character."""
    n = len(text)
    p = start
    while p < n and text[p].isspace():
        p += 1
    if p >= n:
        return ParserType.New
    c = text[p]
    if c == "[":
        # "[{" can only be a JSON array of ads (condor_q -json); a new-format ad
        # starts with a name.
        q = p + 1
        while q < n and text[q].isspace():
            q += 1
        return ParserType.JSON if text[q : q + 1] == "{" else ParserType.New
    if c == "/":
        return ParserType.New
    if c == "{":
        return ParserType.JSON
    if c == "<":
        return ParserType.XML
    return ParserType.Old


def _make_ad(pairs: Iterable[tuple[str, Node]]) -> Any:
    """An ad from parsed pairs; ClassAd's own fill keeps a repeated name's first spelling and last value."""
    return ClassAd._from_pairs(pairs, None)


def _with_file(e: ClassAdSyntaxError, file: str | None) -> ClassAdSyntaxError:
    if file is None or e.file is not None:
        return e
    return ClassAdSyntaxError(e.message, text=e.text, line=e.line, column=e.column, file=file)


def _error(message: str, text: str, offset: int, file: str | None) -> ClassAdSyntaxError:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return ClassAdSyntaxError(message, text=text, line=line, column=column, file=file)


def _iter_text(text: str, kind: ParserType, file: str | None) -> Iterator[tuple[Any, int]]:
    """(ad, end offset) for each ad of one known format."""
    if kind is ParserType.JSON:
        yield from iter_json_ads(text, file)
        return
    if kind is ParserType.XML:
        raise _error("the XML ClassAd format is not supported", text, 0, file)
    stream = parse_stream(text, "old" if kind is ParserType.Old else "new")
    while True:
        try:
            pairs, end = next(stream)
        except StopIteration:
            return
        except ClassAdSyntaxError as e:
            raise _with_file(e, file) from None
        yield _make_ad(pairs), end


# ---------------------------------------------------------------------------
# Any format


def _resolve(text: str, parser: ParserType | int) -> ParserType:
    kind = ParserType(parser)
    return detect(text) if kind in (ParserType.Auto, ParserType.FileAuto) else kind


def _read(source: Source) -> tuple[str, str | None]:
    if isinstance(source, str):
        return source, None
    name = getattr(source, "name", None)
    if hasattr(source, "read"):
        data = source.read()
        if isinstance(data, bytes):
            data = data.decode("utf-8", "surrogateescape")
        return data, name if isinstance(name, str) else None
    return "".join(source), None


def iter_ads(
    text: str, parser: ParserType | int = ParserType.Auto, file: str | None = None
) -> Iterator[Any]:
    """Every ad in ``text``; the format is decided once, from the start of the text.

    ``file`` names the source in error messages.
    """
    for ad, _ in _iter_text(text, _resolve(text, parser), file):
        yield ad


def parseAds(input: Source, parser: ParserType | int = ParserType.Auto) -> Iterator[Any]:  # noqa: N802
    """Each ad in ``input`` (a string, a text file, or an iterable of lines), lazily."""
    text, file = _read(input)
    return iter_ads(text, parser, file)


def parseOne(input: Source, parser: ParserType | int = ParserType.Auto) -> Any:  # noqa: N802
    """All the ads in ``input`` merged into one, later attributes replacing earlier
    ones; an empty input gives an empty ad (as in classad2)."""
    result = ClassAd()
    for ad in parseAds(input, parser):
        result.update(ad)
    return result


def parseNext(input: str | IO[str], parser: ParserType | int = ParserType.Auto) -> Any:  # noqa: N802
    """The first ad in ``input``, or None if there is none.

    For a file, only that ad is consumed: the file is left positioned after it
    (it must be seekable), so repeated calls walk through the ads.
    """
    if isinstance(input, str):
        for ad, _ in _iter_text(input, _resolve(input, parser), None):
            return ad
        return None
    start = input.tell()
    text, file = _read(input)
    found = next(_iter_text(text, _resolve(text, parser), file), None)
    if found is None:
        input.seek(start)
        return None
    ad, end = found
    consumed = text[:end]
    if isinstance(input, io.TextIOWrapper):
        input.seek(start + len(consumed.encode(input.encoding or "utf-8", "surrogateescape")))
    else:
        input.seek(start + len(consumed))
    return ad
