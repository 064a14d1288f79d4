"""Benchmark: median per-program overhead of the sandbox for a trivial generation program.

    python -m bench.sandbox [--preset default|smoke]

warm: `pool.run` on an already started pool (static check, fork, isolate, run, validate) — target ≤ 50 ms;
      timed with and without the kernel boundary (Landlock view + tmpfs scratch) in the same run; beside
      the wall time, the CPU time of the worker and every process it forked (sessions, tasks) per run, which
      other load on the machine does not inflate (Linux: /proc/PID/stat).
cold: start a one-worker pool and run one program (interpreter + numpy/pydantic import) — target ≤ 1 s.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from common.cli import command_parser
from common.registry import Registry
from sandbox.config import PoolConfig
from sandbox.pool import SandboxPool

TRIVIAL = '''
from sim.scene import ObjectSpec, Predicate, SceneSpec

def generate(rng, **factors):
    x, y = rng.uniform(-0.1, 0.1, size=2)
    cube = ObjectSpec(name="cube", kind="box", category="cube", size=(0.02, 0.02, 0.02),
                      pos=(float(x), float(y)))
    return SceneSpec(family="bench", instruction="lift the cube", objects=(cube,),
                     goal=(Predicate(fn="lifted", args=("cube", 0.1)),))
'''


@dataclass(frozen=True, kw_only=True)
class BenchConfig:
    """How many runs to time."""

    # Timed runs on a warm pool (after two untimed ones).
    warm_runs: int = 100
    # Cold starts (each starts and closes a one-worker pool).
    cold_runs: int = 5


PRESETS: Registry[BenchConfig] = Registry("sandbox bench preset")
PRESETS.register("default", BenchConfig())
PRESETS.register("smoke", BenchConfig(warm_runs=10, cold_runs=1))


def _quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def _tree_cpu_s(pid: int) -> float:
    """CPU seconds of process `pid` and of every child it has reaped (with theirs): utime, stime, cutime,
    cstime of /proc/PID/stat; 0 where there is no /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _warm(config: BenchConfig, boundary: str) -> tuple[list[float], float, dict[str, object]]:
    """Wall seconds of each timed run, the worker tree's CPU seconds over them all, the isolation."""
    warm: list[float] = []
    with SandboxPool(PoolConfig(workers=1, os_boundary=boundary)) as pool:  # type: ignore[arg-type]
        isolation = {k: v for k, v in pool.isolation.items() if k != "readable"}
        worker = pool.worker_pids[0]
        cpu0 = 0.0
        for seed in range(config.warm_runs + 2):
            if seed == 2:
                cpu0 = _tree_cpu_s(worker)
            t0 = time.perf_counter()
            result = pool.run(TRIVIAL, seed=seed)
            if seed >= 2:
                warm.append(time.perf_counter() - t0)
            assert result.ok, result.error
        time.sleep(0.05)  # the last session reaps its task and is reaped
        cpu = _tree_cpu_s(worker) - cpu0
    return warm, cpu, isolation


def bench(config: BenchConfig) -> dict[str, object]:
    """Time warm and cold runs; returns milliseconds plus the isolation the workers achieved. Warm runs
    are timed with the kernel boundary (`sandbox.fsview`) and without it, interleaved in blocks so that
    machine load hits both alike."""
    cold: list[float] = []
    for _ in range(config.cold_runs):
        t0 = time.perf_counter()
        with SandboxPool(PoolConfig(workers=1)) as pool:
            assert pool.run(TRIVIAL, seed=0).ok
            cold.append(time.perf_counter() - t0)
    with_b: list[float] = []
    without: list[float] = []
    cpu = cpu0 = 0.0
    isolation: dict[str, object] = {}
    blocks = max(1, config.warm_runs // 20)
    per = BenchConfig(warm_runs=max(1, config.warm_runs // blocks), cold_runs=0)
    for _ in range(blocks):
        times, spent, isolation = _warm(per, "require")
        with_b += times
        cpu += spent
        times, spent, _ = _warm(per, "off")
        without += times
        cpu0 += spent
    med, med0 = statistics.median(with_b), statistics.median(without)
    return {"warm_median_ms": round(1e3 * med, 1), "warm_p90_ms": round(1e3 * _quantile(with_b, 0.9), 1),
            "warm_cpu_ms": round(1e3 * cpu / len(with_b), 1),
            "warm_cpu_ms_without_os_boundary": round(1e3 * cpu0 / len(without), 1),
            "warm_runs": len(with_b), "warm_median_ms_without_os_boundary": round(1e3 * med0, 1),
            "warm_p90_ms_without_os_boundary": round(1e3 * _quantile(without, 0.9), 1),
            "os_boundary_ratio": round(med / med0, 2),
            "cold_median_ms": round(1e3 * statistics.median(cold), 1), "cold_runs": len(cold),
            "isolation": isolation}


def main(argv: list[str] | None = None) -> None:
    parser = command_parser("bench.sandbox", __doc__)
    parser.add_argument("--preset", default="default", help="default or smoke")
    args = parser.parse_args(argv)
    report = bench(PRESETS.get(args.preset))
    print(json.dumps(report, indent=2))
    print(f"warm median {report['warm_median_ms']} ms with the OS boundary, "
          f"{report['warm_median_ms_without_os_boundary']} ms without (ratio {report['os_boundary_ratio']}; "
          f"target <= 50 ms; CPU {report['warm_cpu_ms']} and {report['warm_cpu_ms_without_os_boundary']} ms "
          f"per run), cold median {report['cold_median_ms']} ms (target <= 1000)")


if __name__ == "__main__":
    main()
