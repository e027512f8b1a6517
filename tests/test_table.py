"""format_table: numeric columns (signed, with units) right-aligned, text left-aligned."""
from beastgen.support.table import format_table


def test_signed_numbers_align_on_their_last_digit():
    table = format_table(["name", "excess", "time"],
                         [["a", "-5", "1.5e-05"], ["bbb", "+3", "-7.24 ms"], ["cc", "1,234", "-"],
                          ["d", "-1,234.5", "43.9%"]])
    assert table.splitlines() == [
        "name    excess      time",
        "----  --------  --------",
        "a           -5   1.5e-05",
        "bbb         +3  -7.24 ms",
        "cc       1,234         -",
        "d     -1,234.5     43.9%",
    ]


def test_a_column_with_any_text_is_left_aligned():
    table = format_table(["v"], [["-5"], ["s"], ["12"]])
    assert table.splitlines()[2:] == ["-5", "s", "12"]
