"""Why the compile's refinement changed a training program: its agreement with expert demonstrations as
written and after every single repair `programs.refine` considers (latch, reorder, flip one progress, drop
one subgoal), on fresh expert demonstrations of the program's family, and the refinement it chose.

    python -m bench.agents.refine_case \\
        docs/results/demo/fresh_clone_c3d0bed/train_base_yaw_insert_low_850e873e.json \\
        --goal inserted --demos 4 --out docs/results/demo/fresh_clone_c3d0bed/refine_case.json

`--goal` keeps only scenes whose first goal predicate is that one (stack_insert draws stacks and inserts).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from common.cli import command_parser


def demonstrations(family: str, n: int, goal: str | None, seed0: int = 0, tries: int = 200) -> list:
    """The expert's first `n` successful episodes on the family's scenes from `seed0` on (only scenes whose
    first goal is `goal`, when given)."""
    from sim.episode import run_episode
    from sim.families import get_family

    fam, out = get_family(family), []
    for seed in range(seed0, seed0 + tries):
        scene = fam.sample_scene(seed)
        if goal is not None and scene.goal[0].fn != goal:
            continue
        if (ep := run_episode(scene)).success:
            out.append(ep)
        if len(out) == n:
            return out
    raise SystemExit(f"refine_case: only {len(out)} of {n} expert demonstrations in {tries} scenes")


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("bench.agents.refine_case", __doc__)
    ap.add_argument("program", type=Path, help="a training program's .json (a run's programs/ or a copy)")
    ap.add_argument("--goal", default=None, help="only scenes whose first goal predicate is this one")
    ap.add_argument("--demos", type=int, default=4)
    ap.add_argument("--out", type=Path, default=None)
    a: argparse.Namespace = ap.parse_args(argv)
    if a.demos < 1:
        ap.error("--demos must be >= 1")
    from programs.model import TrainingProgram
    from programs.potential import agreement_report
    from programs.refine import Evidence, _score, candidates, refine

    raw = json.loads(a.program.read_text())
    fields = {k: v for k, v in raw.items() if k in TrainingProgram.model_fields and k != "id"}
    tp = TrainingProgram.model_validate(fields)
    eps = demonstrations(tp.family, a.demos, a.goal)
    written = agreement_report(tp, eps).agreement
    repairs = [{"repair": note, "agreement": None if (s := _score(c, eps)) is None else round(s[0], 3)}
               for note, c in candidates(tp, eps)]
    chosen = refine(tp, Evidence(eps)).refinement
    result = {"program": str(a.program), "family": tp.family, "goal": a.goal, "demos": len(eps),
              "written": round(written, 3), "repairs": repairs, "refinement": chosen}
    for r in repairs:
        print(f"{r['agreement']!s:>6}  {r['repair']}")
    print(f"written {result['written']}; refine: {chosen}")
    if a.out is not None:
        a.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
