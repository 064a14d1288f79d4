"""Potential evaluation throughput and agreement of the seed training programs on expert demonstrations.

    python -m bench.programs [--preset smoke|default] [--scenes N] [--ood]

For each registered family with a seed program: run the scripted expert on a few sampled scenes, then
time `Potential.batch` over all recorded states (median of repeats) and report states per second and
the agreement of the potential with the demonstrations.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass, replace

from programs.potential import PotentialCache, agreement_report, episode_parts
from programs.seeds import seed_library


@dataclass(frozen=True, kw_only=True)
class BenchConfig:
    # expert demonstrations per family (scenes `sample_scene(seed)` for seed in range(scenes))
    scenes: int = 3
    # timed passes over all demo states; the median is reported
    repeats: int = 21
    # families to run (None: every family that has a seed program and is registered)
    families: tuple[str, ...] | None = None
    # sample out-of-distribution scenes instead (only the expert's successful episodes are used)
    ood: bool = False


PRESETS = {"smoke": BenchConfig(scenes=1, repeats=3, families=("pick_place",)), "default": BenchConfig()}


@dataclass(frozen=True)
class BenchRow:
    family: str
    demos: int
    states: int
    states_per_s: float  # median over repeats
    us_per_state: float
    agreement: float
    pairs: int


def _family_available(name: str) -> bool:
    from sim.families import FAMILIES, get_family

    try:
        get_family(name)
    except KeyError:
        return False
    return name in FAMILIES.names()


def demos(family: str, scenes: int, ood: bool = False) -> list:
    """Successful expert episodes on `scenes` sampled scenes."""
    from sim.episode import run_episode
    from sim.families import get_family

    fam = get_family(family)
    episodes = [run_episode(fam.sample_scene(seed, ood=ood)) for seed in range(scenes)]
    return [ep for ep in episodes if ep.success]


def bench_family(family: str, cfg: BenchConfig) -> BenchRow:
    _, tp = seed_library()[family]
    episodes = demos(family, cfg.scenes, cfg.ood)
    cache = PotentialCache(tp)
    work = [(cache.for_scene(scene), states) for states, _, scene in map(episode_parts, episodes)]
    n = sum(len(states) for _, states in work)
    times = []
    for _ in range(cfg.repeats):
        t0 = time.perf_counter()
        for pot, states in work:
            pot.batch(states)
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    report = agreement_report(tp, episodes)
    return BenchRow(family, len(episodes), n, n / med, 1e6 * med / n, report.agreement, report.pairs)


def main(cfg: BenchConfig) -> list[BenchRow]:
    families = cfg.families or tuple(f for f in seed_library() if _family_available(f))
    rows = [bench_family(f, cfg) for f in families]
    print(f"{'family':<14}{'demos':>6}{'states':>8}{'states/s':>12}{'µs/state':>10}{'agreement':>11}{'pairs':>7}")
    for r in rows:
        print(f"{r.family:<14}{r.demos:>6}{r.states:>8}{r.states_per_s:>12,.0f}{r.us_per_state:>10.1f}"
              f"{r.agreement:>11.3f}{r.pairs:>7}")
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="default")
    parser.add_argument("--scenes", type=int, default=None, help="override the preset's scenes per family")
    parser.add_argument("--ood", action="store_true", help="out-of-distribution scenes")
    args = parser.parse_args()
    config = replace(PRESETS[args.preset], ood=args.ood)
    if args.scenes:
        config = replace(config, scenes=args.scenes)
    main(config)
