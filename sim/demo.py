"""The main job until the agent loop exists: sample scenes of every task family (in and out of
distribution), validate them in MuJoCo, run the scripted experts, and write a run directory a person
can browse: scene JSON + thumbnails, demonstration episodes, a contact sheet and a summary table.

    python -m sim.demo --out runs/demo [--per-family 6] [--ood 3] [--workers 2]

Reruns into the same directory skip scenes that are already done (delete the directory to start over).
"""

from __future__ import annotations

import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from multiprocessing import get_context
from pathlib import Path

from common.cli import comma_list, command_parser, worker_count

ROUND = "round_00"


@dataclass(frozen=True, kw_only=True)
class DemoConfig:
    """What the demo samples and where it writes."""

    out: Path  # run directory
    families: tuple[str, ...] = ()  # empty → every registered family
    per_family: int = 6  # in-distribution scenes per family
    ood: int = 3  # out-of-distribution scenes per family
    workers: int = 2  # processes (the machine has 2 cores)
    seed: int = 0  # first scene seed

    def __post_init__(self) -> None:
        if self.per_family < 0 or self.ood < 0 or self.per_family + self.ood == 0:
            raise ValueError("per_family and ood must be >= 0 and not both 0")
        if self.workers < 0:
            raise ValueError("workers must be >= 0 (0 runs in this process)")


def _worker_init() -> None:
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[k] = "1"


def process_scene(family: str, seed: int, ood: bool, out: str) -> dict:
    """Sample, validate (the expert solve is the last check), save scene, thumbnail and demonstration."""
    from sim.families import get_family
    from sim.render import thumbnail
    from sim.validity import check_scene

    t0 = time.perf_counter()
    spec = get_family(family).sample_scene(seed, ood=ood)
    name = f"{family}_{'ood' if ood else 'id'}_{seed:03d}_{spec.scene_id[:8]}"
    root = Path(out)
    scene_path = root / "scenes" / ROUND / f"{name}.json"
    scene_path.parent.mkdir(parents=True, exist_ok=True)
    scene_path.write_text(spec.to_json())
    report = check_scene(spec, solve=True)
    row = {
        "name": name,
        "family": family,
        "seed": seed,
        "ood": ood,
        "instruction": spec.instruction,
        "valid": report.ok,
        "reason": report.reason,
        "message": report.message,
        "success": bool(report.demo is not None and report.demo.success),
        "failing_phase": report.attempt.failing_phase if report.attempt is not None else None,
        "steps": report.attempt.steps if report.attempt is not None else 0,
    }
    if report.attempt is not None:  # failed attempts are kept too: they show where the expert got stuck
        report.attempt.save(root / "episodes" / ROUND / name)
    try:
        thumbnail(spec, scene_path.with_suffix(".png"))
        row["thumbnail"] = str(scene_path.with_suffix(".png").relative_to(root))
    except Exception as e:  # a missing GL stack must not lose the rest of the work
        row["thumbnail_error"] = f"{type(e).__name__}: {e}"
    row["seconds"] = round(time.perf_counter() - t0, 2)
    (root / "results" / f"{name}.json").parent.mkdir(parents=True, exist_ok=True)
    (root / "results" / f"{name}.json").write_text(json.dumps(row, indent=1))
    return row


def _jobs(cfg: DemoConfig, families: list[str]) -> list[tuple[str, int, bool]]:
    jobs = []
    for f in families:
        jobs += [(f, cfg.seed + i, False) for i in range(cfg.per_family)]
        jobs += [(f, cfg.seed + i, True) for i in range(cfg.ood)]
    return jobs


def _done(out: Path) -> dict[tuple[str, int, bool], dict]:
    rows = {}
    for p in (out / "results").glob("*.json"):
        r = json.loads(p.read_text())
        rows[(r["family"], r["seed"], r["ood"])] = r
    return rows


def run(cfg: DemoConfig) -> list[dict]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from sim.families import FAMILIES, our_families

    families = list(cfg.families) or our_families()
    for f in families:
        FAMILIES.get(f)  # "did you mean" before any work starts
    cfg.out.mkdir(parents=True, exist_ok=True)
    (cfg.out / "config.json").write_text(
        json.dumps({**asdict(cfg), "out": str(cfg.out), "families": families}, indent=1)
    )
    done = _done(cfg.out)
    todo = [j for j in _jobs(cfg, families) if j not in done]
    rows = [done[j] for j in _jobs(cfg, families) if j in done]
    cols = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*cols) as bar:
        task = bar.add_task(f"validate + expert ({len(rows)} already done)", total=len(todo))
        if cfg.workers == 0:
            for j in todo:
                rows.append(process_scene(*j, str(cfg.out)))
                bar.advance(task)
        else:
            ctx = get_context("spawn")
            with ProcessPoolExecutor(cfg.workers, mp_context=ctx, initializer=_worker_init) as ex:
                futs = {ex.submit(process_scene, *j, str(cfg.out)): j for j in todo}
                for fut in as_completed(futs):
                    f, seed, ood = futs[fut]
                    try:
                        rows.append(fut.result())
                    except Exception as e:  # report, keep going: one bad scene never loses the batch
                        rows.append(
                            {
                                "name": f"{f}_{seed}",
                                "family": f,
                                "seed": seed,
                                "ood": ood,
                                "valid": False,
                                "reason": "crashed",
                                "message": f"{type(e).__name__}: {e}",
                                "success": False,
                            }
                        )
                    bar.advance(task)
    return sorted(rows, key=lambda r: (r["family"], r["ood"], r["seed"]))


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("sim.demo", __doc__)
    ap.add_argument("--out", type=Path, default=Path("runs/demo"), help="output folder")
    ap.add_argument("--families", type=comma_list(), default=[],
                    help="comma-separated task families (default: every registered one)")
    ap.add_argument("--per-family", type=int, default=6, help="scenes per family")
    ap.add_argument("--ood", type=int, default=3, help="of them, scenes out of distribution")
    ap.add_argument("--workers", type=worker_count, default=2, help="episode-pool worker processes")
    ap.add_argument("--seed", type=int, default=0, help="first scene seed")
    a = ap.parse_args(argv)
    try:
        cfg = DemoConfig(
            out=a.out,
            families=tuple(a.families),
            per_family=a.per_family,
            ood=a.ood,
            workers=a.workers,
            seed=a.seed,
        )
        t0 = time.perf_counter()
        rows = run(cfg)
    except (ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from sim.report import write_summary

    write_summary(cfg.out, rows, time.perf_counter() - t0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
