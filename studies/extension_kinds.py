"""Which kinds of the extended space's factors does a policy not shrug off? (issue #39 item 4: "most of which
the policy shrugs off and a few of which it does not"). A development measurement.

    python -m studies.extension_kinds --policy checkpoints/seed_sft_4fam.safetensors --label core_seed0

The scenes are `studies.extended_bootstrap_dev`'s development scenes of the extended space, in distribution
(`--per-split` per family; drawn there, or here when missing): each scene is built again with the
extension's factors of one kind (`sim.extension.EXTENSION`'s `kind`: distractors, obstacles, the arm's
start, actuation noise, …) as drawn and every other extension factor at its default — so `none` is the core
scene and `all` the drawn one. A draw that cannot be built with one kind alone is left out of that row. The
policy is scored on each row; records land in `<results>/extension_kinds/<label>.json` (default
runs/results/findings; the committed ones: `--results docs/results/findings`) and `extension_kinds.md` is
rebuilt from them. Never a frozen suite.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from common.cli import command_parser, worker_count
from common.markdown import md_table
from experiments.table.record import ROOT, RUNS_RESULTS, provenance, sha256

RESULTS = RUNS_RESULTS / "findings"
FAMILIES = ("pick_place", "articulated", "put_inside", "stack_insert")


def kind_of(factor: dict[str, Any]) -> str:
    """An extension factor's kind, placement folded into what it places (`distractor_pos` → `distractor`)."""
    return str(factor["kind"]).removesuffix("_pos")


def kinds() -> list[str]:
    """The extension's factor kinds, in declaration order."""
    from sim.extension import EXTENSION

    return list(dict.fromkeys(kind_of(f) for f in EXTENSION))


def with_kind(scene: Any, kind: str) -> Any:
    """`scene` built again with only `kind`'s extension factors as drawn (`none`: none, `all`: every one);
    ValueError when it cannot be laid out."""
    from sim.extension import EXTENSION
    from sim.families import get_family

    keep = {f["name"] for f in EXTENSION if kind == "all" or kind_of(f) == kind}
    defaults = {f["name"]: f["default"] for f in EXTENSION}
    factors = {g: {k: (v if k not in defaults or k in keep else defaults[k]) for k, v in vals.items()}
               for g, vals in scene.factors.items()}
    return get_family(scene.family).make_scene(factors, seed=scene.seed)


def rows(scenes: Sequence[Any]) -> dict[str, list[Any]]:
    """Each kind's scenes (and `none`, `all`)."""
    out: dict[str, list[Any]] = {}
    for kind in ("none", *kinds(), "all"):
        built = []
        for s in scenes:
            try:
                built.append(with_kind(s, kind))
            except ValueError:
                continue
        out[kind] = built
    return out


def score(policy: Path, by_kind: dict[str, list[Any]], seed: int, pool: Any) -> dict[str, dict[str, Any]]:
    from coda_policy.awr import SeededPolicy
    from sim.pool import EpisodeJob

    factory, out = SeededPolicy(str(policy), seed), {}
    for kind, scenes in by_kind.items():
        got = pool.run([EpisodeJob(scene=s, policy=factory) for s in scenes])
        errors = [r.error for r in got if r.error]
        if errors:
            raise RuntimeError(f"{kind}: {len(errors)} episodes failed, first: {errors[0]}")
        per = {f: [r.success for s, r in zip(scenes, got, strict=True) if s.family == f] for f in FAMILIES}
        rate = {f: round(100 * sum(v) / len(v), 1) if v else None for f, v in per.items()}
        out[kind] = {"n": len(scenes), "success": round(100 * sum(r.success for r in got) / len(got), 1),
                     "per_family": rate}
    return out


def markdown(records: Sequence[dict[str, Any]], command: str) -> str:
    labels = [r["label"] for r in records]
    order = list(records[0]["kinds"]) if records else []
    body = [(f"`{k}`", *(f"{r['kinds'][k]['success']:.0f} ({r['kinds'][k]['n']})" for r in records))
            for k in order]
    head = ("extension factors as drawn", *(f"`{x}` success % (scenes)" for x in labels))
    policies = "".join(f"- `{r['label']}`: `{r['policy']}` (sha256 {r['policy_sha256'][:12]}…)\n"
                       for r in records)
    return ("\n".join(md_table(head, body))
            + "\n\nDevelopment scenes of the extended space in distribution "
              "(`studies.extended_bootstrap_dev`'s), each rebuilt with one kind of the extension's factors "
              "as drawn and the rest at their defaults (`none`: the core scene). Never a frozen suite.\n\n"
            + policies + f"\nCommand: `{command}`\n")


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("studies.extension_kinds", __doc__)
    ap.add_argument("--policy", type=Path, required=True, help="the policy checkpoint to score")
    ap.add_argument("--label", required=True, help="the record's name (letters, digits, _ and -)")
    ap.add_argument("--per-split", type=int, default=25, help="development scenes per family")
    ap.add_argument("--seed", type=int, default=0, help="the policy's sampling seed")
    ap.add_argument("--workers", type=worker_count, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "extended_bootstrap_dev",
                    help="where the development scenes are cached (extended_bootstrap_dev's --out)")
    ap.add_argument("--results", type=Path, default=RESULTS)
    a = ap.parse_args(argv)
    if not a.policy.is_file():
        ap.error(f"--policy {a.policy}: no such checkpoint")
    if not a.label.replace("_", "").replace("-", "").isalnum():
        ap.error(f"--label {a.label!r}: letters, digits, _ and - only")
    if a.per_split < 1:
        ap.error("--per-split must be >= 1")
    from sim.pool import EpisodePool
    from studies.update_dev import dev_scenes

    given = argv if argv is not None else sys.argv[1:]
    command = ("python -m studies.extension_kinds " + " ".join(given)).strip()
    folder = a.results / "extension_kinds"
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with EpisodePool(a.workers) as pool:
        dev = dev_scenes(FAMILIES, a.per_split, a.out / f"dev_scenes_n{a.per_split}", pool, space="extended")
        by_kind = rows([d.load() for d in dev if d.split == "id"])
        res = score(a.policy, by_kind, a.seed, pool)
    rec = {"label": a.label, "policy": str(a.policy), "policy_sha256": sha256(a.policy), "seed": a.seed,
           "per_split": a.per_split, "kinds": res, "wall_s": round(time.perf_counter() - t0, 1),
           "code_commit": provenance("")["commit"]}
    (folder / f"{a.label}.json").write_text(json.dumps(rec, indent=1) + "\n")
    records = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    (a.results / "extension_kinds.md").write_text(markdown(records, command))
    print((a.results / "extension_kinds.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
