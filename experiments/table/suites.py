"""Frozen evaluation suites: per task family, four splits of validated scenes (the scripted expert solves
every one), stored as scene files with their SHA-256 in a manifest, one folder per suite set:

    frozen10   experiments/table/suites/     10 scenes per family and split: Table 1 up to issue #38, read
                                             by every design choice made since (keep it for those tables)
    frozen50   experiments/table/suites50/   50 per family and split (200 OOD scenes a cell): the tables'
                                             suites from issue #39 on
    recheck50  experiments/table/recheck50/  50 per family and split, never read by a table: it re-checks a
                                             choice made after seeing frozen50's numbers, and says so
    extended50b experiments/table/extended50b/ 50 per family and split of the extended space (issue #39:
                                             the families' factors and `sim.extension`'s, whose seed
                                             distribution is the core scene): `id` and `instruction` are
                                             core scenes, `ood_single` moves one of 35-41 factors, `ood` every
                                             factor, nuisance ones included, into its OOD shell. It replaced
                                             `extended50` (drawn while the extension's seed distribution
                                             held distractors, clutter and noise; read by two bootstrap
                                             records only, FINDINGS #47; in git history before 2026-12-06)

    id           in distribution
    ood_single   in distribution except one spatial or attribute factor, moved into its out-of-distribution
                 shell (the paper's spatial shift / size change / target replacement variants); the moved
                 factor cycles through the family's movable factors that have an OOD part (in the extended
                 space the extension's counts too)
    ood          every factor out of distribution
    instruction  in-distribution scenes whose instruction is put in a framing the family templates never
                 produce ("could you ...?", "your task: ...", ...): a wording shift, weaker than the paper's
                 free rewordings

The suites are drawn from their own seeds (disjoint from every seed the loop uses), are never read by the
loop (`tests/experiments/test_suites.py` checks that no code outside `experiments/`, `studies/` and `bench/`
names them), and are never used for tuning: `experiments` owns them.

    python -m experiments.table.suites --set frozen50 --build   # (re)draw and validate: files + manifest
    python -m experiments.table.suites --set frozen50 --check   # every file present and unchanged

Each set draws from its own seeds (a scene's seed: the set's base + 10,000 × split + 100 × index + draw).
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

HERE = Path(__file__).resolve().parent
SPLITS = ("id", "ood_single", "ood", "instruction")
FAMILIES = ("pick_place", "articulated", "put_inside", "stack_insert")  # the paper's four
MAX_N = 100  # scenes per family and split a set can hold (the seed formula leaves 100 per split)


@dataclass(frozen=True)
class SuiteSet:
    """A set of frozen suites: its folder under experiments/table/, its seed base and its size."""

    name: str
    folder: str
    # base of every scene seed; disjoint from the loop's seeds (scenes, demos, held-out evaluation at 900_000)
    seed: int
    n: int
    # the factor space its scenes are drawn from (`sim.extension.SPACES`)
    space: str = "core"


SETS = {s.name: s for s in (SuiteSet("frozen10", "suites", 7_340_000, 10),
                            SuiteSet("frozen50", "suites50", 7_400_000, 50),
                            SuiteSet("recheck50", "recheck50", 7_450_000, 50),
                            SuiteSet("extended50b", "extended50b", 7_550_000, 50, "extended"))}
DEFAULT_SET = "frozen10"
SUITE_SEED = SETS[DEFAULT_SET].seed


def suite_set(name: str) -> SuiteSet:
    try:
        return SETS[name]
    except KeyError:
        raise KeyError(f"no suite set {name!r}; the sets are {', '.join(SETS)}") from None


def folder(name: str = DEFAULT_SET) -> Path:
    return HERE / suite_set(name).folder
FRAMES = ("could you {} for me?", "your task: {}.", "I would like you to {}.", "go ahead and {}.",
          "{}, please.", "here is what to do: {}.")
MAX_DRAWS = 40  # candidate scenes per wanted scene before giving up (validity rejects some)


@dataclass(frozen=True)
class SuiteScene:
    """One frozen scene: where it is (relative to its set's folder), its family and split."""

    path: str
    family: str
    split: str
    suite_set: str = DEFAULT_SET

    def load(self) -> Any:
        from sim.scene import SceneSpec

        return SceneSpec.from_json((folder(self.suite_set) / self.path).read_text())


def movable_ood(fam: Any, space: str = "core") -> list[Any]:
    """Factors of `space` an `ood_single` scene can move: spatial and attribute ones with an OOD part, and
    the extension's counts (distractors, obstacles, clutter: task factors, but nuisances of the scene)."""
    from sim.extension import EXTENSION_NAMES

    return [f for f in fam.schema(space)
            if f.has_ood and (f.group in ("spatial", "attribute") or f.name in EXTENSION_NAMES)]


def draw(family: str, split: str, i: int, attempt: int, set_name: str = DEFAULT_SET) -> Any:
    """Candidate scene `i` of (`family`, `split`), draw `attempt` (deterministic), of suite set `set_name`."""
    from sim.families import get_family

    if not (0 <= i < MAX_N and 0 <= attempt < MAX_DRAWS):
        raise ValueError(f"scene {i}, draw {attempt}: a set holds < {MAX_N} scenes a split, "
                         f"< {MAX_DRAWS} draws")
    fam, s = get_family(family), suite_set(set_name)
    rng = np.random.default_rng([s.seed, FAMILIES.index(family), SPLITS.index(split), i, attempt])
    seed = s.seed + 10_000 * SPLITS.index(split) + 100 * i + attempt
    values = fam.sample_factors(rng, ood=split == "ood", space=s.space)
    if split == "ood_single":
        movable = movable_ood(fam, s.space)
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


def build(n: int, families: Sequence[str] = FAMILIES, workers: int = 2,
          set_name: str = DEFAULT_SET) -> dict[str, Any]:
    """Draw and validate `n` scenes per family and split of suite set `set_name`, write them and its
    manifest."""
    from sim.pool import EpisodePool

    if not 0 < n <= MAX_N:
        raise ValueError(f"a suite set holds 1 to {MAX_N} scenes per family and split, not {n}")
    root = folder(set_name)
    scenes: dict[str, str] = {}
    rejected = 0
    with EpisodePool(workers) as pool:
        for family in families:
            for split in SPLITS:
                out = root / family / split
                out.mkdir(parents=True, exist_ok=True)
                for old in out.glob("*.json"):
                    old.unlink()
                for i in range(n):
                    for start in range(0, MAX_DRAWS, workers):  # a batch of candidates per worker round
                        attempts = range(start, min(start + workers, MAX_DRAWS))
                        cands = []
                        for a in attempts:  # a draw that cannot be built (no room for what it places) is
                            try:            # rejected like one that fails validity
                                cands.append(draw(family, split, i, a, set_name))
                            except ValueError:
                                rejected += 1
                        checks = [pool.executor.submit(_check, c.to_json()) for c in cands]
                        ok = [c for c, f in zip(cands, checks, strict=True) if f.result()[0]]
                        rejected += len(cands) - len(ok)
                        if ok:
                            path = out / f"{i:02d}_{ok[0].scene_id}.json"
                            path.write_text(ok[0].to_json())
                            scenes[str(path.relative_to(root))] = digest(path)
                            break
                    else:
                        raise RuntimeError(f"{family}/{split} scene {i}: no valid draw in {MAX_DRAWS}")
                print(f"{family:13s} {split:12s} {n} scenes", flush=True)
    manifest = {"version": 1, "seed": suite_set(set_name).seed, "n": n, "families": list(families),
                "splits": list(SPLITS), "scenes": dict(sorted(scenes.items()))}
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return {"scenes": len(scenes), "rejected_draws": rejected}


def manifest(set_name: str = DEFAULT_SET) -> dict[str, Any]:
    """The committed manifest of a suite set; a clear error when it was never built."""
    path = folder(set_name) / "manifest.json"
    if not path.exists():
        raise FileNotFoundError(f"no frozen suites at {path.parent}; build them with "
                                f"`python -m experiments.table.suites --set {set_name} --build`")
    return json.loads(path.read_text())


def check(set_name: str = DEFAULT_SET) -> list[str]:
    """Problems with a suite set: missing, changed or unlisted files (empty when intact)."""
    m, root = manifest(set_name), folder(set_name)
    problems = []
    for rel, sha in m["scenes"].items():
        path = root / rel
        if not path.exists():
            problems.append(f"missing: {rel}")
        elif digest(path) != sha:
            problems.append(f"changed: {rel}")
    listed = set(m["scenes"])
    problems += [f"not in the manifest: {p.relative_to(root)}" for p in root.glob("*/*/*.json")
                 if str(p.relative_to(root)) not in listed]
    return problems


def suite(families: Sequence[str] | None = None, splits: Sequence[str] = SPLITS,
          per_split: int | None = None, set_name: str = DEFAULT_SET) -> list[SuiteScene]:
    """The frozen scenes of `families` × `splits` (the first `per_split` of each) of suite set `set_name`,
    after checking their hashes; raises if a file is missing or changed."""
    problems = check(set_name)
    if problems:
        raise RuntimeError(f"the frozen suites of {set_name} do not match their manifest: "
                           + "; ".join(problems[:5]))
    m = manifest(set_name)
    if per_split is not None and per_split > m["n"]:
        raise ValueError(f"suite set {set_name} holds {m['n']} scenes per family and split, not {per_split}")
    fams = list(families or m["families"])
    unknown = sorted(set(fams) - set(m["families"])) + sorted(set(splits) - set(m["splits"]))
    if unknown:
        raise KeyError(f"no frozen suite for {unknown}; suites exist for {m['families']} × {m['splits']}")
    out = []
    for family in fams:
        for split in splits:
            rels = sorted(r for r in m["scenes"] if r.startswith(f"{family}/{split}/"))
            out += [SuiteScene(r, family, split, set_name) for r in rels[:per_split]]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("experiments.table.suites", __doc__)
    ap.add_argument("--set", dest="set_name", choices=list(SETS), default=DEFAULT_SET,
                    help=f"the suite set (default {DEFAULT_SET})")
    ap.add_argument("--build", action="store_true", help="draw, validate and write the suites")
    ap.add_argument("--check", action="store_true", help="check the files against the manifest")
    ap.add_argument("--n", type=int,
                    help="scenes per family and split (with --build; default the set's size)")
    ap.add_argument("--workers", type=worker_count, default=2)
    a = ap.parse_args(argv)
    if a.build:
        print(build(a.n or suite_set(a.set_name).n, workers=a.workers, set_name=a.set_name))
    problems = check(a.set_name)
    for p in problems:
        print(p, file=sys.stderr)
    print(f"{a.set_name}: {len(manifest(a.set_name)['scenes'])} frozen scenes, "
          f"{'intact' if not problems else 'NOT intact'}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
