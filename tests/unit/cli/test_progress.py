"""Progress output: plain lines when not on a terminal, only when something changed."""

import io

from roost.cli.progress import Progress


def test_plain_lines_only_on_change():
    out = io.StringIO()
    p = Progress(out, min_interval=0.0)
    p.update(0, 10, {"Idle": 10})
    p.update(0, 10, {"Idle": 10})
    p.update(4, 10, {"Running": 2, "Idle": 4})
    p.update(10, 10, {}, final=True)
    assert out.getvalue().splitlines() == [
        "0/10 done (0 running, 10 idle)",
        "4/10 done (2 running, 4 idle)",
        "10/10 done (0 running, 0 idle)",
    ]


def test_bar_on_a_terminal():
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    p = Progress(out, width=10)
    p.update(5, 10, {"Running": 5}, final=True)
    text = out.getvalue()
    assert text.startswith("\r[#####-----]  50.0% 5/10 done (5 running, 0 idle)") and text.endswith("\n")
