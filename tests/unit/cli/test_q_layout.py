"""condor_q 25's table sizing (queue.cpp), as roost q's layout helpers do it."""

from roost.cli import q_layout


def test_schedd_address_shortened_as_condor_q_heads_a_section() -> None:
    full = q_layout.sinful("127.0.0.1:9618", "host.example.org")
    assert full == "<127.0.0.1:9618?addrs=127.0.0.1-9618&alias=host.example.org>"
    assert q_layout.summarize_sinful(full) == "<127.0.0.1:9618?..."
    assert q_layout.summarize_sinful("<10.0.0.1:9618>") == "<10.0.0.1:9618>"


def test_title_has_two_blank_lines_before_it() -> None:
    assert q_layout.title("Schedd: s@h : <1.2.3.4:5?...", "12/01/26 10:00:00") == \
        "\n\n-- Schedd: s@h : <1.2.3.4:5?... @ 12/01/26 10:00:00\n"


def test_job_id_keeps_its_dot_in_one_column_and_grows_with_big_numbers() -> None:
    w = q_layout.id_widths(12, 3)
    assert w == (4, 3)
    assert q_layout.id_cell(12, 0, w) == "  12.0  "
    assert q_layout.id_heading(w) + " " + "OWNER" == " ID      OWNER"
    big = q_layout.id_widths(123456, 1234)
    assert big == (6, 4)
    assert q_layout.id_cell(7, 5, big) == "     7.5   "
    assert len(q_layout.id_heading(big)) == len(q_layout.id_cell(7, 5, big))


def test_owner_width_in_per_job_views() -> None:
    # into a pipe (no display) OWNER stays 14 and longer names are cut
    assert q_layout.owner_width(5) == 14
    assert q_layout.owner_width(20) == 14
    assert q_layout.fit("averyveryverylongname", 14) == "averyveryveryl"
    # on a terminal it grows as far as the display leaves room
    assert q_layout.owner_width(20, display=80) == 14
    assert q_layout.owner_width(20, display=100) == 20
    assert q_layout.owner_width(5, dag=True) == 17
    assert q_layout.owner_width(20, dag=True, display=80) == 17


def test_dag_node_names_are_cut_to_14_into_a_pipe_unless_columns_were_adjusted() -> None:
    assert not q_layout.widths_fixed(12, 0, 14)
    assert q_layout.dag_name_width(False, 17, None) == 14
    assert q_layout.widths_fixed(12, 0, 15) and q_layout.widths_fixed(9999, 0, 3)
    assert q_layout.dag_name_width(True, 17, None) == 17
    assert q_layout.dag_name_width(False, 17, 80) == 17


def test_batch_view_sizes_owner_and_batch_name_to_the_data() -> None:
    rows = [("alice", "ID: 12", "12/1  10:00", [0, 1, 2, 0, 3], "12.0-2")]
    head, row = list(q_layout.batch_table(rows, any_held=False))
    assert head == "OWNER BATCH_NAME    SUBMITTED   DONE   RUN    IDLE  TOTAL JOB_IDS"
    assert row == "alice ID: 12      12/1  10:00      _      1      2      3 12.0-2"


def test_batch_view_shows_hold_only_when_some_job_is_held() -> None:
    rows = [("bob", "ID: 3", "12/1  10:00", [0, 0, 0, 2, 2], "3.0-1")]
    head, row = list(q_layout.batch_table(rows, any_held=True))
    assert head.split()[3:9] == ["DONE", "RUN", "IDLE", "HOLD", "TOTAL", "JOB_IDS"]
    # an owner shorter than its heading: OWNER becomes 8 wide
    assert head.startswith("OWNER    BATCH_NAME ")
    assert row.startswith("bob      ID: 3      ")


def test_batch_view_shrinks_into_an_80_column_terminal() -> None:
    # OWNER + BATCH_NAME + JOB_IDS over 30 columns: the batch name gives way first
    assert q_layout.batch_widths(6, 29, 5, 80) == (6, 22, False)
    assert q_layout.batch_widths(4, 29, 5, 80) == (8, 24, True)
    owner, batch, cut = q_layout.batch_widths(20, 20, 15, 80)
    assert (owner, batch, cut) == (10, 13, True)  # JOB_IDS given half, OWNER cut to 10
    # into a pipe (or -wide) nothing shrinks
    assert q_layout.batch_widths(20, 20, 15) == (20, 20, False)


def test_counts_widen_for_big_numbers() -> None:
    rows = [("alice", "ID: 1", "12/1  10:00", [0, 0, 1234567, 0, 1234567], "1.0 ... 2.0")]
    head, row = list(q_layout.batch_table(rows, any_held=False))
    assert head.endswith("    IDLE   TOTAL  JOB_IDS")  # a heading padded to its column's width
    assert " 1234567 1234567 1.0 ... 2.0" in row


def test_rows_cut_to_fit_a_terminal_only() -> None:
    line = "x" * 100
    assert q_layout.cut([line], 80) == ["x" * 79]
    assert q_layout.cut([line]) == [line]
