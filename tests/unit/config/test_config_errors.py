"""Bad configuration gives one ConfigError line naming file, line and problem."""

from __future__ import annotations

import pytest

from roost.config import Config, ConfigError


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("A = 1\nthis line has no equals\n", 2, "missing '='"),
        ("use POLICY : No_Such_Policy\n", 1, "unknown template POLICY:No_Such_Policy"),
        ("use NOPE : Desktop\n", 1, "unknown 'use' category 'NOPE'"),
        ("use ROLE :\n", 1, "names no template"),
        ("use ROLE Personal\n", 1, "needs a ':'"),
        ("A = 1\nif true\nB = 2\n", 2, "'if' is never closed"),
        ("else\n", 1, "'else' without a matching 'if'"),
        ("endif\n", 1, "'endif' without a matching 'if'"),
        ("if true\nelse\nelif true\nendif\n", 3, "'elif' after 'else'"),
        ("if true\nelse\nelse\nendif\n", 3, "'else' after 'else'"),
        ("if $(A) > 3\nendif\n", 1, "complex conditionals are not supported"),
        ("if version >= 8\nendif\n", 1, "major.minor"),
        ("if defined\nendif\n", 1, "'defined' needs a knob name"),
        ("X @=end\nstuff\n", 1, "no closing @end"),
        ("include : $(NOPE)\n", 1, "include names nothing"),
        ("include : other.conf\n", 1, "given as text"),
        ("include : echo A=1 |\n", 1, "refusing to run include command 'echo A=1'"),
        ("include command : echo A=1\n", 1, "refusing to run include command"),
        ("include sometimes : x\n", 1, "unknown include mode"),
        ("use POLICY : Preempt_If\n", 1, "needs the name of a knob"),
        ("use POLICY : Want_Hold_If(X, 1)\n", 1, "needs 3 arguments"),
        ("use POLICY : Limit_Job_Runtimes(\n", 1, "unclosed '('"),
    ],
)
def test_bad_config_is_located(text: str, line: int, fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        Config.from_text(text, file="pool.conf")
    e = err.value
    assert (e.file, e.line) == ("pool.conf", line)
    assert fragment in e.message
    assert str(e).startswith(f"pool.conf:{line}: ") and "\n" not in str(e)


def test_error_inside_template_points_at_use_line_and_names_template() -> None:
    with pytest.raises(ConfigError) as err:
        Config.from_text("A = 1\nuse POLICY : Want_Hold_If(X)\n", file="p")
    assert err.value.line == 2
    assert "use POLICY:Want_Hold_If" in err.value.message


def test_loop_through_default_is_detected() -> None:
    c = Config.from_text("LOCAL_DIR = $(LOG)\n", file="p")  # LOG defaults to $(LOCAL_DIR)/log
    with pytest.raises(ConfigError, match="macro loop in LOCAL_DIR -> LOG -> LOCAL_DIR"):
        c.get("SPOOL")


def test_self_loop_via_two_names_reported_at_the_reentered_knob() -> None:
    c = Config.from_text("\nZ = $(ZA) z\nZA = $(Z)\n", file="p")
    with pytest.raises(ConfigError) as err:
        c.get("Z")
    assert (err.value.file, err.value.line) == ("p", 2)
