"""Suite-wide: `gpu`-marked tests run where torch sees a CUDA device and are skipped, with the reason,
everywhere else (so `make test` on a GPU machine runs them; CI's CPU machines report them skipped)."""

from __future__ import annotations

import pytest

# the smoke table (`smoke_table`), built once per test process (per xdist worker) for the tests reading it
pytest_plugins = ("tests.smoke_table",)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # the smoke table's first reader runs first (its worker builds the table at once) and the other readers
    # last, when it is built: under xdist no worker then waits on the table's lock (the same order on every
    # worker, as xdist requires)
    readers = [item for item in items if "smoke_table" in getattr(item, "fixturenames", ())]
    if readers:
        rest = [item for item in items if item not in readers]
        items[:] = [readers[0], *rest, *readers[1:]]
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
