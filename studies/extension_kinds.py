"""Which kinds of the extended space's factors does a policy not shrug off? (issue #39 item 4: "most of which
the policy shrugs off and a few of which it does not"). A development measurement.

    python -m studies.extension_kinds --policy checkpoints/seed_sft_4fam.safetensors --label core_seed0

The scenes are development scenes of the extended space (`studies.update_dev.dev_scenes`, their own seed;
`--per-split` per family, cached under the extension's `digest()`): each scene is built again with the
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
    """An extension factor's kind, placement folded into what it places (`sim.extension.kind_group`)."""
    from sim.extension import kind_group

    return kind_group(str(factor["kind"]))


def digest() -> str:
    """Names the extension as declared now: development scenes drawn from it are cached under it."""
    import hashlib

    from sim.extension import EXTENSION

    return hashlib.sha256(json.dumps(EXTENSION, sort_keys=True).encode()).hexdigest()[:8]


def kinds() -> list[str]:
    """The extension's factor kinds, in declaration order."""
    from sim.extension import EXTENSION

    return list(dict.fromkeys(kind_of(f) for f in EXTENSION))


def with_kind(scene: Any, kind: str, source: Any = None) -> Any:
    """`scene` built again with only `kind`'s extension factors as drawn in `source` (default: `scene`
    itself; `none`: none, `all`: every one) and the rest at their defaults; ValueError when it cannot be
    laid out."""
    from sim.extension import EXTENSION
    from sim.families import get_family

    keep = {f["name"] for f in EXTENSION if kind == "all" or kind_of(f) == kind}
    defaults = {f["name"]: f["default"] for f in EXTENSION}
    drawn = {k: v for vals in (source or scene).factors.values() for k, v in vals.items() if k in defaults}
    factors = {g: {k: (v if k not in defaults else drawn[k] if k in keep else defaults[k])
                   for k, v in vals.items()} for g, vals in scene.factors.items()}
    return get_family(scene.family).make_scene(factors, seed=scene.seed)


def rows(scenes: Sequence[Any], sources: Sequence[Any] | None = None) -> dict[str, list[Any]]:
    """Each kind's scenes (and `none`, `all`), the kind's values from `sources` (default: the scenes)."""
    out: dict[str, list[Any]] = {}
    for kind in ("none", *kinds(), "all"):
        built = []
        for s, src in zip(scenes, sources or scenes, strict=True):
            try:
                built.append(with_kind(s, kind, src))
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


def markdown(records: Sequence[dict[str, Any]]) -> str:
    order = list(records[0]["kinds"]) if records else []
    body = [(f"`{k}`", *(f"{r['kinds'][k]['success']:.0f} ({r['kinds'][k]['n']})" if k in r["kinds"] else "–"
                         for r in records)) for k in order]
    head = ("extension factors as drawn",
            *(f"`{r['label']}` on {r.get('base', 'id')} scenes, kinds from {r.get('kinds_from', 'id')}: "
              "success % (scenes)" for r in records))
    policies = "".join(f"- `{r['label']}`: `{r['policy']}` (sha256 {r['policy_sha256'][:12]}…); "
                       + (f"extension `{r['extension']}`" if "extension" in r else
                          "the extension as first declared (its seed distribution held nuisances; before "
                          "FINDINGS #47)")
                       + (f"; `{r['command']}`" if "command" in r else "") + "\n" for r in records)
    return ("\n".join(md_table(head, body))
            + "\n\nDevelopment scenes of the extended space (`studies.update_dev`'s seed; `id`: in "
              "distribution, `ood`: every factor from its out-of-distribution shell), each rebuilt with one "
              "kind of the extension's factors as drawn in the `kinds from` split's scene of the same index "
              "and the rest at their defaults (`none`: the core scene). Never a frozen suite.\n\n"
            + policies)


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("studies.extension_kinds", __doc__)
    ap.add_argument("--policy", type=Path, required=True, help="the policy checkpoint to score")
    ap.add_argument("--label", required=True, help="the record's name (letters, digits, _ and -)")
    ap.add_argument("--per-split", type=int, default=25, help="development scenes per family")
    ap.add_argument("--seed", type=int, default=0, help="the policy's sampling seed")
    ap.add_argument("--workers", type=worker_count, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "extension_kinds",
                    help="where the development scenes are cached")
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--base", choices=("id", "ood"), default="id",
                    help="the development split whose scenes are rebuilt (ood: every core factor out of "
                         "distribution)")
    ap.add_argument("--kinds-from", choices=("id", "ood"), default=None,
                    help="the split whose draws give the kind's values (default: --base; ood: each "
                         "extension factor from its out-of-distribution shell)")
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
        dev = dev_scenes(FAMILIES, a.per_split, a.out / f"dev_scenes_n{a.per_split}_{digest()}", pool,
                         space="extended")
        src = a.kinds_from or a.base
        by_kind = rows([d.load() for d in dev if d.split == a.base],
                       [d.load() for d in dev if d.split == src])
        res = score(a.policy, by_kind, a.seed, pool)
    rec = {"label": a.label, "policy": str(a.policy), "policy_sha256": sha256(a.policy), "seed": a.seed,
           "per_split": a.per_split, "command": command, "extension": digest(), "base": a.base,
           "kinds_from": src, "kinds": res, "wall_s": round(time.perf_counter() - t0, 1),
           "code_commit": provenance("")["commit"]}
    (folder / f"{a.label}.json").write_text(json.dumps(rec, indent=1) + "\n")
    records = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    (a.results / "extension_kinds.md").write_text(markdown(records))
    print((a.results / "extension_kinds.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
