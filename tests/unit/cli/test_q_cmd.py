"""``roost q``'s option spellings: condor_q's abbreviations keep working next to -better-analyze."""

import pytest

from roost.cli.options import Parser, UsageError
from roost.cli.q_cmd import ALIASES, SPEC


def parse(*argv: str):  # type: ignore[no-untyped-def]
    return Parser("roost q", "", SPEC, ALIASES).parse(list(argv))


@pytest.mark.parametrize("flag", ["-ba", "-bat", "-batch", "--batch"])
def test_batch_abbreviations_stay_batch(flag: str) -> None:
    o = parse(flag)
    assert o.batch is True and o.values["better-analyze"] is False


@pytest.mark.parametrize("flag", ["-be", "-better", "-better-analyze", "-better-analyse"])
def test_better_analyze_spellings(flag: str) -> None:
    o = parse(flag, "12.0")
    assert o.values["better-analyze"] is True and o.batch is False and o.positional == ["12.0"]


@pytest.mark.parametrize("flag", ["-an", "-analyze", "-analyse"])
def test_analyze_spellings(flag: str) -> None:
    assert parse(flag).analyze is True


def test_bare_b_is_ambiguous_and_says_between_what() -> None:
    with pytest.raises(UsageError, match=r"-b is ambiguous \(-batch, -better-analyze\)"):
        parse("-b")
