"""Which item does a LIBERO policy go for? Read at the states a LIBERO-Pro evaluation starts from, e.g.
under the task perturbation (`libero_object_task`: a task's scene, an instruction naming another of its
items) or under position (`libero_object_swap`: the item swapped with another object). Forward passes
only, no episode is run and nothing is trained.

    python -m studies.libero_target_probe --run runs/libero_r2 --round 5 --perturb task \
        --out docs/results/findings/libero_target_probe_r2_task.json

Per task of the perturbed suite: the states the protocol starts from (init states 0..N−1 of the task file,
placed in its own environment, as `experiments.liberopro.evaluate` places them) read as the policy reads
them, with the file's instruction (naming the goal's item, Y) and with the scene's own task's instruction
(naming the item the scene was built around, X; the same words but under `task`). Two readings of each:
the target head's choice (the auxiliary head a `target_loss` policy trains to name the goal's object
token; the most probable item and p(Y)) and the item the first sampled chunk heads for (the item whose
direction from the gripper has the largest cosine with the chunk's summed x-y translation; items in one
direction are not told apart). Beside them the run's evaluation's successes of that task under the
perturbation, when its file is there. A probe of the first state, not a rollout: what the arm touched in a
failed episode is not read here.

The suite is the run's family: `libero_object`'s own item is the one its scene was built around;
`libero_spatial`'s and `libero_goal`'s is the goal's object (the bowl the words single out of two identical
bowls), read with the original suite's words for the same task.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from common.cli import command_parser
from experiments.liberopro.evaluate import EPISODES, PERTURB

LOOP_RESULTS = Path("docs/results/libero/loop")


def readings(policy: Any, feats: dict[str, np.ndarray], names: list[str], ee_xy: np.ndarray,
             xy: np.ndarray, seed: int) -> dict[str, Any]:
    """The target head's probabilities over the object tokens and the item the first chunk heads for."""
    import torch

    from coda_policy.object_token.features import collate

    batch = collate([feats])
    with torch.no_grad():
        tokens, mask, _ = policy.encode(batch)
        probs = torch.softmax(policy.target_logits(tokens, mask), -1)[0, : len(names)].numpy()
        chunk = policy.sample_actions(batch, generator=torch.Generator().manual_seed(seed))[0].numpy()
    move = chunk[:, :2].sum(0)
    to = xy - ee_xy
    cos = to @ move / (np.linalg.norm(to, axis=1) * np.linalg.norm(move) + 1e-9)
    return {"head": names[int(probs.argmax())], "probs": dict(zip(names, probs.tolist(), strict=True)),
            "heads_to": names[int(cos.argmax())]}


def probe_task(task: Any, own: dict[str, tuple[str | None, str]], policy: Any, n: int) -> dict[str, Any]:
    """One task of the perturbed suite: its first `n` evaluated states, read under both instructions (the
    own item None: the goal's object)."""
    from coda_policy.object_token.features import featurize, token_names
    from coda_policy.object_token.libero_features import reader
    from common.text import default_embedder
    from experiments.liberopro.evaluate import init_states
    from sim.libero.env import LiberoEnv

    own_item, own_words = own.get(task.name, (None, task.instruction))
    env = LiberoEnv.for_task(task)
    try:
        goal_item = env.goal[0][1]
        if not env.is_object(goal_item):  # a drawer's region, say: no token the head could name
            return {"task": task.name, "skipped": f"the goal's subject {goal_item} is no object token"}
        own_item, emb = own_item or goal_item, default_embedder()
        rows = []
        for i, state in enumerate(init_states(task)[:n]):
            env.reset(state, seed=i)
            ws = reader(env).read()
            names = [name for name, kind in token_names(ws) if kind == "object"]
            xy, ee = np.asarray(ws.obj_pos).reshape(-1, 3)[: len(names), :2], np.asarray(ws.ee_pos)[:2]
            row = {}
            for tag, text in (("instruction", task.instruction), ("own_instruction", own_words)):
                feats = featurize(ws, text, None, emb, policy.config.grounding)
                r = readings(policy, feats, names, ee, xy, seed=i)
                row[tag] = {"head": r["head"], "p_named": round(r["probs"][goal_item], 3),
                            "p_own": round(r["probs"][own_item], 3), "heads_to": r["heads_to"]}
            rows.append(row)
    finally:
        env.close()

    def tally(tag: str, key: str) -> dict[str, int]:
        return dict(Counter(r[tag][key] for r in rows).most_common())

    return {"task": task.name, "instruction": task.instruction, "named_item": goal_item, "own_item": own_item,
            "states": len(rows),
            **{tag: {"head": tally(tag, "head"), "heads_to": tally(tag, "heads_to"),
                     "mean_p_named": round(float(np.mean([r[tag]["p_named"] for r in rows])), 3),
                     "mean_p_own": round(float(np.mean([r[tag]["p_own"] for r in rows])), 3)}
               for tag in ("instruction", "own_instruction")}}


def evaluated(run: str, round_: int, perturb: str) -> dict[str, int]:
    """Successes per task of the run's protocol evaluation of that round and perturbation: its file, or the
    per-task files of one still running."""
    from experiments.liberopro.records import tasks_folder
    from experiments.liberopro.run import evaluation_file

    whole = evaluation_file(LOOP_RESULTS / run, round_, perturb, EPISODES)
    if whole.is_file():
        parts = json.loads(whole.read_text())["tasks_run"]
    else:
        parts = [json.loads(p.read_text())["task"] for p in sorted(tasks_folder(whole).glob("*.json"))]
    return {t["name"]: t["successes"] for t in parts}


def add_run_args(ap: Any, perturb: str) -> None:
    """--run, --round and --perturb, as the LIBERO studies that read one round's policy take them."""
    ap.add_argument("--run", type=Path, required=True, help="a LIBERO run directory (`agents.run`)")
    ap.add_argument("--round", type=int, required=True, help="its round whose policy is read")
    ap.add_argument("--perturb", choices=sorted(PERTURB), default=perturb,
                    help=f"the LIBERO-Pro suite whose starts are read (default {perturb})")


def run_policy(run: Path, round_: int) -> tuple[Path, str]:
    """A LIBERO run's policy of that round and the suite its family stands for; a ValueError says which is
    missing."""
    path = run / "policy" / f"round_{round_:02d}.safetensors"
    if not path.is_file():
        raise ValueError(f"{path}: no such policy (rounds with one: "
                         f"{sorted(p.stem for p in (run / 'policy').glob('round_*.safetensors'))})")
    from experiments.liberopro.run import run_suite

    try:
        return path, run_suite(run)
    except (OSError, KeyError) as e:
        raise ValueError(f"{run}: not a LIBERO run directory (its config.json is missing or names no "
                         f"families: {e})") from None


def parse_run(ap: Any, argv: list[str] | None, count: str) -> tuple[Any, Path, str]:
    """The arguments, the run's policy and its suite; a count under 1, a missing policy or a run of no
    LIBERO family ends the command with a one-line error (exit 2)."""
    a = ap.parse_args(argv)
    if getattr(a, count) < 1:
        ap.error(f"--{count} must be >= 1")
    try:
        path, suite = run_policy(a.run, a.round)
    except ValueError as e:
        ap.exit(2, f"error: {e}\n")
    return a, path, suite


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("studies.libero_target_probe", __doc__)
    add_run_args(ap, perturb="task")
    ap.add_argument("--states", type=int, default=10, help="init states per task, 0.. (default 10)")
    ap.add_argument("--out", type=Path, default=None, help="write the rows here (JSON)")
    a, path, suite = parse_run(ap, argv, count="states")
    import torch

    from coda_policy.registry import load_policy
    from experiments.liberopro.evaluate import tasks

    torch.set_num_threads(1)
    policy = load_policy(path)
    policy.eval()
    original = {t.name: t.instruction for t in tasks(suite, "none")}
    own: dict[str, tuple[str | None, str]] = {name: (None, words) for name, words in original.items()}
    if suite == "libero_object":
        from sim.families.libero_object.scene import TASKS

        own = {row[0]: (row[1], original[row[0]]) for row in TASKS.values()}
    try:
        rows = [probe_task(t, own, policy, a.states) for t in tasks(suite, a.perturb) if t.usable]
    except ValueError as e:  # a policy without a target head
        print(f"error: {path}: {e}", file=sys.stderr)
        return 2
    done = evaluated(a.run.name, a.round, a.perturb)
    for r in rows:
        r["successes_of_50"] = done.get(r["task"])
    def most(tally: dict[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in tally.items())

    for r in rows:
        if "skipped" in r:
            print(f"{r['task']}: skipped ({r['skipped']})", flush=True)
            continue
        named, mine = r["instruction"], r["own_instruction"]
        print(f"{r['named_item']:20s} in {r['own_item']:20s} head: {most(named['head'])} "
              f"(p(named) {named['mean_p_named']:.2f}); heads to: {most(named['heads_to'])} | own words, "
              f"head: {most(mine['head'])} | successes {r.get('successes_of_50', '–')}", flush=True)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps({"run": a.run.name, "suite": suite, "round": a.round,
                                     "perturb": a.perturb, "policy": str(path), "states_per_task": a.states,
                                     "tasks": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
