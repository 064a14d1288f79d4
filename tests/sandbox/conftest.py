"""One warm pool per test module (tight limits, so hostile programs fail fast)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sandbox import PoolConfig, SandboxLimits, SandboxPool
from tests.sandbox.programs import OK_PROGRAM

TEST_LIMITS = SandboxLimits(cpu_s=1, wall_s=4, memory_mb=256, max_result_bytes=1_000_000,
                            max_output_chars=4_000)


@pytest.fixture(scope="module")
def pool() -> Iterator[SandboxPool]:
    with SandboxPool(PoolConfig(workers=2, limits=TEST_LIMITS)) as p:
        yield p


def assert_alive(pool: SandboxPool) -> None:
    """The pool still runs a normal program after whatever happened before."""
    result = pool.run(OK_PROGRAM, factors={"size": 0.03}, seed=1)
    assert result.ok, result.error
    assert result.scenes[0].objects[0].size == (0.03, 0.03, 0.03)
