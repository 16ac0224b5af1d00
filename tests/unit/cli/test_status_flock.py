"""``roost status -flock``'s table: one line per connected pool, the refusals under it."""

from __future__ import annotations

from roost.cli.status_flock import flock_table


def test_the_flock_table_lines_up_pools_and_says_why_one_was_not_served() -> None:
    text = flock_table([
        {"pool": "b", "direction": "both", "domain": "b.example", "lent": 3, "borrowed": 0,
         "given_hours": 12.5, "received_hours": 0.00125, "reciprocity": 0.0001, "refused": []},
        {"pool": "chem", "direction": "take", "domain": "chem.example", "lent": 0, "borrowed": 0,
         "given_hours": 0.0, "received_hours": 0.0, "reciprocity": 1.0,
         "refused": ["agreement chem lends only at hours 20-7 (now 14)"]},
    ])
    lines = text.splitlines()
    assert lines[0].split() == ["Pool", "Direction", "Domain", "Lent", "Borrowed", "GivenHours", "ReceivedHours",
                                "Reciprocity"]
    assert lines[1].split() == ["b", "both", "b.example", "3", "0", "12.5", "0.00125", "0.0001"]
    assert lines[0].index("Lent") == lines[1].index("3")  # columns line up
    assert lines[3] == "  chem: not served: agreement chem lends only at hours 20-7 (now 14)"
    assert "no connected pools" in flock_table([])
