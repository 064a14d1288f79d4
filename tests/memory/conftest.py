"""A fresh memory under `tmp_path` per test."""

from __future__ import annotations

import pytest


@pytest.fixture
def mem(tmp_path):
    from memory.store import Memory

    with Memory(tmp_path / "memory") as m:
        yield m
