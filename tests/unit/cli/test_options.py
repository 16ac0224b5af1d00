"""The fast command-line parser: HTCondor-style options, prefixes, multi-value -af."""

import pytest

from roost.cli.options import Parser, UsageError

SPEC = {
    "constraint": ("value", ""),
    "nobatch": ("flag", ""),
    "totals": ("flag", ""),
    "af": ("values", ""),
    "long": ("flag", ""),
}


def parse(*argv: str):  # type: ignore[no-untyped-def]
    return Parser("roost q", "", SPEC, {"autoformat": "af", "l": "long"}).parse(list(argv))


def test_flags_values_and_positionals():
    o = parse("12", "-const", "JobPrio > 0", "--nobatch", "alice")
    assert o.positional == ["12", "alice"]
    assert o.constraint == "JobPrio > 0" and o.nobatch is True and o.totals is False and o.af == []


def test_af_takes_arguments_up_to_the_next_option():
    o = parse("-af", "Owner", "JobStatus", "-l")
    assert o.af == ["Owner", "JobStatus"] and o.long is True
    assert parse("-autoformat", "A").af == ["A"]


def test_errors_say_what_is_wrong():
    with pytest.raises(UsageError, match="unknown option -bogus"):
        parse("-bogus")
    with pytest.raises(UsageError, match="needs a value"):
        parse("-constraint")
    with pytest.raises(UsageError, match="at least one"):
        parse("-af", "-nobatch")


def test_help_exits_zero(capsys):  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as e:
        parse("-help")
    assert e.value.code == 0
    assert "-constraint VALUE" in capsys.readouterr().out


def test_pool_and_name_options_are_shared() -> None:
    from roost.api.locate import pool_address
    from roost.cli.options import pool_spec

    opts = Parser("roost q", "", {**SPEC, **pool_spec()}).parse(["-pool", "cm.example", "-name", "s@h", "7"])
    assert (opts.pool, opts.name, opts.positional) == ("cm.example", "s@h", ["7"])
    assert "name" not in pool_spec(None)
    assert pool_address("cm.example") == "cm.example:9618"
    assert pool_address("10.0.0.1:9700") == "10.0.0.1:9700"
    assert pool_address("<10.0.0.1:9700?x=y>") == "10.0.0.1:9700"
    with pytest.raises(ValueError):
        pool_address(" ")
