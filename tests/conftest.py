"""Suite-wide: `gpu`-marked tests run where torch sees a CUDA device and are skipped, with the reason,
everywhere else (so `make test` on a GPU machine runs them; CI's CPU machines report them skipped)."""

from __future__ import annotations

import pytest

# the smoke table (`smoke_table`), built once per test process (per xdist worker) for the tests reading it
pytest_plugins = ("tests.smoke_table",)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Long tests first, short ones last, so the two workers end together (a long test drawn last runs
    # alone): the smoke table's first reader (its worker builds the table at once), then the other
    # `integration` tests, then the table's other readers (by then the table is built, so no worker waits
    # on its lock), then the rest. The same order on every worker, as xdist requires.
    readers = [item for item in items if "smoke_table" in getattr(item, "fixturenames", ())]
    long_ = [item for item in items if item.get_closest_marker("integration") and item not in readers]
    first = {id(item) for item in (*readers, *long_)}
    items[:] = [*readers[:1], *long_, *readers[1:], *(item for item in items if id(item) not in first)]
    gpu = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu:
        return
    import torch

    if torch.cuda.is_available():
        return
    build = "a CPU build" if torch.version.cuda is None else "no visible GPU"
    skip = pytest.mark.skip(reason=f"needs a CUDA device (torch {torch.__version__}: {build})")
    for item in gpu:
        item.add_marker(skip)
