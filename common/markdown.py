"""Markdown tables, the one way every report and benchmark writes them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def md_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    """The lines of a Markdown table: `| a | b |`, `|---|---|`, then one line per row (cells by `str`)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"a row of {len(row)} cells in a table of {len(header)} columns: {row!r}")
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return lines
