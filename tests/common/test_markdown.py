import pytest

from common.markdown import md_table


def test_md_table_lines() -> None:
    lines = md_table(("a", "b"), [(1, "x"), (2.5, "")])
    assert lines == ["| a | b |", "|---|---|", "| 1 | x |", "| 2.5 |  |"]


def test_md_table_refuses_a_ragged_row() -> None:
    with pytest.raises(ValueError, match="a row of 1 cells in a table of 2 columns"):
        md_table(("a", "b"), [("only",)])
