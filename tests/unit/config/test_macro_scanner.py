"""The ``$(...)`` scanner shared by the configuration and submit languages."""

from __future__ import annotations

from roost.config.macros import (
    CONFIG_SYNTAX,
    MacroRef,
    Syntax,
    expand,
    matching_paren,
    references,
)

# the submit language's rules (roost.submit.macros.SUBMIT_SYNTAX)
SUBMIT = Syntax(is_function=None, dollar_pair=False, stop_at_unclosed=True)


def test_references_have_spans_and_unexpanded_bodies() -> None:
    text = "a $(X) b $INT(1+(2)) $(Y:$(Z))"
    refs = list(references(text, SUBMIT))
    assert refs == [
        MacroRef(2, 6, "", "X"),
        MacroRef(9, 20, "INT", "1+(2)"),
        MacroRef(21, 30, "", "Y:$(Z)"),
    ]
    assert [text[r.start : r.end] for r in refs] == ["$(X)", "$INT(1+(2))", "$(Y:$(Z))"]


def test_expand_replaces_and_none_keeps_the_reference() -> None:
    values = {"A": "1"}
    assert expand("$(A)-$(B)-$(A)", lambda func, body: values.get(body), SUBMIT) == "1-$(B)-1"
    assert expand("no macros", lambda func, body: "x", SUBMIT) == "no macros"


def test_double_dollar_config_is_a_pair_submit_keeps_the_whole_reference() -> None:
    text = "$$$(A) $$(B$(C))"
    assert [r.body for r in references(text, CONFIG_SYNTAX)] == ["A", "C"]
    assert [r.body for r in references(text, SUBMIT)] == []


def test_unclosed_config_goes_on_submit_stops() -> None:
    text = "$(A $(B)"
    assert [r.body for r in references(text, CONFIG_SYNTAX)] == ["B"]
    assert list(references(text, SUBMIT)) == []


def test_unknown_function_is_text_in_config_a_reference_in_submit() -> None:
    text = "$NOPE($(A))"
    assert [r.body for r in references(text, CONFIG_SYNTAX)] == ["A"]
    assert [(r.func, r.body) for r in references(text, SUBMIT)] == [("NOPE", "$(A)")]


def test_matching_paren() -> None:
    assert matching_paren("(a(b)c)d", 0) == 6
    assert matching_paren("x(a(b)", 1) == -1
    assert matching_paren("(()", 1) == 2
