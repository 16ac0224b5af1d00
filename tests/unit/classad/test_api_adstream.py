"""parseAds / parseOne / parseNext against classad2, and errors that name the line."""

from __future__ import annotations

import io

import htcondor2  # noqa: F401  -- must precede classad2 (non-strict mode, as HTCondor's tools)

# isort: split
import classad2
import pytest

from roost.classad import ClassAd, ClassAdSyntaxError
from roost.classad.adstream import ParserType, detect, iter_ads, parseAds, parseNext, parseOne

OLD = 'A = 1\nB = "x"\n\nA = 2\nC = A + 1\n\n\n# comment\nA = 3\n'
NEW = "[A = 1; B = 2] [A = 2]\n\n// between\n[ A = 3; s = \"]\" ]"
STREAMS = [
    (OLD, ParserType.Auto),
    (OLD, ParserType.Old),
    (NEW, ParserType.Auto),
    (NEW, ParserType.New),
    ("", ParserType.Auto),
    ("\n\n  \n", ParserType.Auto),
    ("A = 1\r\nB = 2\r\n\r\nC = 3\r\n", ParserType.Auto),
    ("  A = 1\n\tB = 2;\n   \nC = {1, 2}\n", ParserType.Auto),
    ("A = 1\na = 2\n", ParserType.Old),
    ("A = 1\nB = 1\n\na = 2\n", ParserType.Old),
    ('{"A": 1, "B": "\\/Expr(A + 1)\\/"} {"A": 2}', ParserType.JSON),
    ("[A=1]\n[B=[C=2]]", ParserType.New),
]


def _reprs(ads) -> list[str]:  # type: ignore[no-untyped-def]
    return [repr(a) for a in ads]


def _ref_reprs(ads) -> list[str]:  # type: ignore[no-untyped-def]
    # Re-read classad2's ads in roost so both print in one canonical spelling.
    return [repr(ClassAd(repr(a))) for a in ads]


@pytest.mark.parametrize("text, kind", STREAMS)
def test_parse_ads_matches_classad2(text: str, kind: ParserType) -> None:
    assert _reprs(parseAds(text, kind)) == _ref_reprs(classad2.parseAds(text, int(kind)))


@pytest.mark.parametrize("text, kind", STREAMS)
def test_parse_one_merges_like_classad2(text: str, kind: ParserType) -> None:
    assert repr(parseOne(text, kind)) == repr(ClassAd(repr(classad2.parseOne(text, int(kind)))))


@pytest.mark.parametrize("text, kind", STREAMS)
def test_parse_next_takes_the_first_ad(text: str, kind: ParserType) -> None:
    ours, ref = parseNext(text, kind), classad2.parseNext(text, int(kind))
    assert (None if ours is None else repr(ours)) == (None if ref is None else repr(ClassAd(repr(ref))))


def test_parser_type_matches_classad2() -> None:
    assert {m.name: int(m) for m in ParserType} == {m.name: int(m) for m in classad2.ParserType}


def test_detect() -> None:
    texts = ("  [a=1]", "/* c */[a=1]", "a = 1", '{"a":1}', '[\n {"a":1}]', "", "<?xml")
    assert [detect(t) for t in texts] == [
        ParserType.New, ParserType.New, ParserType.Old, ParserType.JSON, ParserType.JSON,
        ParserType.New, ParserType.XML,
    ]  # fmt: skip


def test_auto_reads_json_arrays_too() -> None:
    ads = list(parseAds('[\n{"a": 1}\n,\n{"b": 2}\n]\n'))
    assert _reprs(ads) == ["[ a = 1 ]", "[ b = 2 ]"]
    assert _reprs(parseAds('{"a": 1}\n{"b": 2}\n')) == ["[ a = 1 ]", "[ b = 2 ]"]


def test_file_objects_and_line_iterables() -> None:
    assert _reprs(parseAds(io.StringIO(OLD))) == _reprs(parseAds(OLD))
    assert _reprs(parseAds(OLD.splitlines(keepends=True))) == _reprs(parseAds(OLD))
    assert repr(parseOne(io.StringIO(NEW))) == "[ A = 3; B = 2; s = \"]\" ]"


def test_parse_next_walks_a_file() -> None:
    f = io.StringIO("A = 1\n\nB = 2\n\n\nC = 3\n")
    seen = []
    while (ad := parseNext(f)) is not None:
        seen.append(repr(ad))
    assert seen == ["[ A = 1 ]", "[ B = 2 ]", "[ C = 3 ]"]


def test_parse_next_on_a_real_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "ads"
    path.write_text('[a = "é"]\n[b = 2]\n', encoding="utf-8")
    with open(path, encoding="utf-8") as f:
        assert repr(parseNext(f)) == '[ a = "\\303\\251" ]'
        assert repr(parseNext(f)) == "[ b = 2 ]"
        assert parseNext(f) is None


@pytest.mark.parametrize(
    "text, kind, line, column",
    [
        ("A = 1\nB = (2 +\nC = 3\n", ParserType.Old, 2, 9),
        ("A = 1\n\nfoo bar\n", ParserType.Old, 3, 1),
        ("A = 1\nB = \n", ParserType.Old, 2, 5),
        ("[A = 1]\n[B = ]\n", ParserType.New, 2, 6),
        ("[A = 1]\n[B = 2", ParserType.New, 2, 7),
        ("[A = 1] junk", ParserType.New, 1, 9),
        ('{"A": 1}\n{"B": }', ParserType.JSON, 2, 7),
    ],
)
def test_errors_name_line_and_column(text: str, kind: ParserType, line: int, column: int) -> None:
    with pytest.raises(ClassAdSyntaxError) as info:
        list(parseAds(text, kind))
    assert (info.value.line, info.value.column) == (line, column)
    assert isinstance(info.value, ValueError)  # what classad2 raises for bad input


def test_errors_name_the_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "bad.ads"
    path.write_text("A = 1\nB = )\n")
    with open(path) as f, pytest.raises(ClassAdSyntaxError) as info:
        list(parseAds(f))
    assert info.value.file == str(path) and info.value.line == 2
    assert str(info.value).startswith(f"{path}:2:")


def test_xml_is_refused_clearly() -> None:
    with pytest.raises(ClassAdSyntaxError, match="XML"):
        list(iter_ads("<classads></classads>", ParserType.XML))
