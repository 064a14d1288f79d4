"""`python -m bench.sandbox`: the sandbox's per-program cost, with and without the kernel boundary."""

from __future__ import annotations


def test_the_bench_times_the_boundary_beside_the_pool_without_it() -> None:
    from bench.sandbox import PRESETS, bench

    report = bench(PRESETS.get("smoke"))
    assert report["warm_runs"] >= 10 and report["warm_median_ms"] > 0
    assert report["warm_median_ms_without_os_boundary"] > 0 and report["os_boundary_ratio"] > 0
    assert report["isolation"]["landlock"] >= 1
