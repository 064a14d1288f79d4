"""Frozen evaluation suites: per task family, four splits of validated scenes (the scripted expert solves
every one), stored as scene files with their SHA-256 in `experiments/table/suites/manifest.json`.

    id           in distribution
    ood_single   in distribution except one spatial or attribute factor, moved into its out-of-distribution
                 shell (the paper's spatial shift / size change / target replacement variants); the moved
                 factor cycles through the family's movable factors that have an OOD part
    ood          every factor out of distribution
    instruction  in-distribution scenes whose instruction is put in a framing the family templates never
                 produce ("could you ...?", "your task: ...", ...): a wording shift, weaker than the paper's
                 free rewordings

The suites are drawn from their own seeds (disjoint from every seed the loop uses), are never read by the
loop (`tests/experiments/test_suites.py` checks that no code outside `experiments/`, `studies/` and `bench/`
names them), and are never used for tuning: `experiments` owns them.

    python -m experiments.table.suites --build [--n 10]    # (re)draw and validate; writes files + manifest
    python -m experiments.table.suites --check             # every file present and unchanged
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from common.cli import command_parser, worker_count

SUITE_DIR = Path(__file__).resolve().parent / "suites"
MANIFEST = SUITE_DIR / "manifest.json"
SPLITS = ("id", "ood_single", "ood", "instruction")
FAMILIES = ("pick_place", "articulated", "put_inside", "stack_insert")  # the paper's four
SUITE_SEED = 7_340_000  # disjoint from the loop's seeds (scenes, demos, held-out evaluation at 900_000)
FRAMES = ("could you {} for me?", "your task: {}.", "I would like you to {}.", "go ahead and {}.",
          "{}, please.", "here is what to do: {}.")
MAX_DRAWS = 40  # candidate scenes per wanted scene before giving up (validity rejects some)


@dataclass(frozen=True)
class SuiteScene:
    """One frozen scene: where it is (relative to `SUITE_DIR`), its family and split."""

    path: str
    family: str
    split: str

    def load(self) -> Any:
        from sim.scene import SceneSpec

        return SceneSpec.from_json((SUITE_DIR / self.path).read_text())


def _movable_ood(fam: Any) -> list[Any]:
    """Spatial and attribute factors an `ood_single` scene can move: they have an OOD part."""
    return [f for f in fam.factors if f.group in ("spatial", "attribute") and f.has_ood]


def draw(family: str, split: str, i: int, attempt: int) -> Any:
    """Candidate scene `i` of (`family`, `split`), draw `attempt` (deterministic)."""
    from sim.families import get_family

    fam = get_family(family)
    rng = np.random.default_rng([SUITE_SEED, FAMILIES.index(family), SPLITS.index(split), i, attempt])
    seed = SUITE_SEED + 10_000 * SPLITS.index(split) + 100 * i + attempt
    values = fam.sample_factors(rng, ood=split == "ood")
    if split == "ood_single":
        movable = _movable_ood(fam)
        f = movable[i % len(movable)]
        values[f.group][f.name] = f.sample(rng, ood=True)  # from the shell outside the ID range
    spec = fam.make_scene(values, seed=seed)
    if split == "instruction":
        frame = FRAMES[i % len(FRAMES)]
        spec = spec.model_copy(update={"instruction": frame.format(spec.instruction)})
    return spec


def _check(spec_json: str) -> tuple[bool, str]:
    """(the scene passes every validity check, the message): runs in a pool worker."""
    from sim.scene import SceneSpec
    from sim.validity import check_scene

    report = check_scene(SceneSpec.from_json(spec_json))
    return report.ok, report.message


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build(n: int, families: Sequence[str] = FAMILIES, workers: int = 2) -> dict[str, Any]:
    """Draw and validate `n` scenes per family and split, write them and the manifest."""
    from sim.pool import EpisodePool

    scenes: dict[str, str] = {}
    rejected = 0
    with EpisodePool(workers) as pool:
        for family in families:
            for split in SPLITS:
                out = SUITE_DIR / family / split
                out.mkdir(parents=True, exist_ok=True)
                for old in out.glob("*.json"):
                    old.unlink()
                for i in range(n):
                    for start in range(0, MAX_DRAWS, workers):  # a batch of candidates per worker round
                        attempts = range(start, min(start + workers, MAX_DRAWS))
                        cands = [draw(family, split, i, a) for a in attempts]
                        checks = [pool.executor.submit(_check, c.to_json()) for c in cands]
                        ok = [c for c, f in zip(cands, checks, strict=True) if f.result()[0]]
                        rejected += len(cands) - len(ok)
                        if ok:
                            path = out / f"{i:02d}_{ok[0].scene_id}.json"
                            path.write_text(ok[0].to_json())
                            scenes[str(path.relative_to(SUITE_DIR))] = digest(path)
                            break
                    else:
                        raise RuntimeError(f"{family}/{split} scene {i}: no valid draw in {MAX_DRAWS}")
                print(f"{family:13s} {split:12s} {n} scenes", flush=True)
    manifest = {"version": 1, "seed": SUITE_SEED, "n": n, "families": list(families), "splits": list(SPLITS),
                "scenes": dict(sorted(scenes.items()))}
    MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n")
    return {"scenes": len(scenes), "rejected_draws": rejected}


def manifest() -> dict[str, Any]:
    """The committed manifest; a clear error when the suites were never built."""
    if not MANIFEST.exists():
        raise FileNotFoundError(f"no frozen suites at {SUITE_DIR}; build them with "
                                "`python -m experiments.table.suites --build`")
    return json.loads(MANIFEST.read_text())


def check() -> list[str]:
    """Problems with the frozen suites: missing, changed or unlisted files (empty when intact)."""
    m = manifest()
    problems = []
    for rel, sha in m["scenes"].items():
        path = SUITE_DIR / rel
        if not path.exists():
            problems.append(f"missing: {rel}")
        elif digest(path) != sha:
            problems.append(f"changed: {rel}")
    listed = set(m["scenes"])
    problems += [f"not in the manifest: {p.relative_to(SUITE_DIR)}" for p in SUITE_DIR.rglob("*/*/*.json")
                 if str(p.relative_to(SUITE_DIR)) not in listed]
    return problems


def suite(families: Sequence[str] | None = None, splits: Sequence[str] = SPLITS,
          per_split: int | None = None) -> list[SuiteScene]:
    """The frozen scenes of `families` × `splits` (the first `per_split` of each), after checking their
    hashes; raises if a file is missing or changed."""
    problems = check()
    if problems:
        raise RuntimeError("the frozen suites do not match their manifest: " + "; ".join(problems[:5]))
    m = manifest()
    fams = list(families or m["families"])
    unknown = sorted(set(fams) - set(m["families"])) + sorted(set(splits) - set(m["splits"]))
    if unknown:
        raise KeyError(f"no frozen suite for {unknown}; suites exist for {m['families']} × {m['splits']}")
    out = []
    for family in fams:
        for split in splits:
            rels = sorted(r for r in m["scenes"] if r.startswith(f"{family}/{split}/"))
            out += [SuiteScene(r, family, split) for r in rels[:per_split]]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("experiments.table.suites", __doc__)
    ap.add_argument("--build", action="store_true", help="draw, validate and write the suites")
    ap.add_argument("--check", action="store_true", help="check the files against the manifest")
    ap.add_argument("--n", type=int, default=10, help="scenes per family and split (with --build)")
    ap.add_argument("--workers", type=worker_count, default=2)
    a = ap.parse_args(argv)
    if a.build:
        print(build(a.n, workers=a.workers))
    problems = check()
    for p in problems:
        print(p, file=sys.stderr)
    print(f"{len(manifest()['scenes'])} frozen scenes, {'intact' if not problems else 'NOT intact'}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
