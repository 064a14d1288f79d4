"""Shared fixture for the programs tests: expert demonstrations per registered family, recorded once
per session."""

from __future__ import annotations

import pytest

from tests.programs.helpers import registered

DEMO_SCENES = 3  # expert demonstrations per family


class _Demos:
    def __init__(self) -> None:
        self._by_family: dict[str, list] = {}

    def __call__(self, family: str) -> list:
        if not registered(family):
            pytest.skip(f"family {family!r} is not registered yet")
        if family not in self._by_family:
            from sim.episode import run_episode
            from sim.families import get_family

            fam = get_family(family)
            # the first DEMO_SCENES solved scenes (LIBERO's expert misses a few in a hundred; ours none)
            solved = (ep for ep in (run_episode(fam.sample_scene(seed)) for seed in range(3 * DEMO_SCENES))
                      if ep.success)
            self._by_family[family] = [ep for _, ep in zip(range(DEMO_SCENES), solved, strict=False)]
        return self._by_family[family]


@pytest.fixture(scope="session")
def demos() -> _Demos:
    """`demos(family)`: expert episodes on `DEMO_SCENES` sampled scenes (skips unregistered families)."""
    return _Demos()
