"""`docs/results/liberopro.md` (+ `.json`): our policy on LIBERO-Pro under the protocol, from the committed
evaluation files, beside the numbers the CoDA paper reports (theirs, labelled as such).

    python -m experiments.liberopro.table                     # docs/results/libero/ → runs/results/
    python -m experiments.liberopro.table --out docs/results  # the committed docs/results/liberopro.*

Each row names the files it comes from: `python -m experiments.liberopro ... --out FILE` evaluations, the
records of the earlier standalone CoDA round on LIBERO (its driver was removed in issue #38, superseded by
`agents.run --preset libero`; their `evaluation` holds one entry per perturbation), and a loop
run's rounds (`python -m experiments.liberopro.run`,
`docs/results/libero/loop/<run>/round<k>_<perturb>*.json`: one row per round). A cell with no file is "–":
not measured, never 0.

Rows are kept apart by episodes per task, as each file records it: the main table holds the protocol's 50
per task (init states 0–49); the evaluations made before it (5 per task, 10 for the scripted expert) stay in
their own table below it, labelled, never mixed into a protocol row.

Beneath each suite's protocol table, every later round (and the position oracle) against the bootstrap it
started from, per perturbation both files have: the difference, its 95 % intervals over episodes and over
tasks (`experiments.liberopro.compare`) and issue #41's target where it sets one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from common.cli import command_parser
from experiments.liberopro.evaluate import EPISODES, MAX_STEPS
from experiments.table.record import RUNS_RESULTS

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"  # the committed evaluations the table reads
PERTURBS = ("none", "position", "instruction", "task", "object")
PROTOCOL = EPISODES  # episodes per task of the protocol (init states 0-49 of each file)
SUFFIX = {"_swap": "position", "_lan": "instruction", "_task": "task", "_object": "object"}

# Loop runs whose rounds ran on another run's bootstrap — its seed demonstrations, validity verdicts and
# round-0 policy copied into the new run directory before `agents.run` started there (the graph reuses
# both; FINDINGS #40), or the other run forked at its round-0 report (`agents.replay --fork`): the row says
# so, and the wall clock counts the other run's round 0
BOOTSTRAP_FROM = {"libero_s36": ("libero_s35", "copied"), "libero_s37": ("libero_s35", "copied"),
                  **{run: ("libero_t1", "forked")
                     for run in ("libero_r1", "libero_r2", "libero_sft2", "libero_uni2")},
                  "libero_spsft": ("libero_sp2", "forked"), "libero_gsft": ("libero_g1", "forked")}

# Issue #41's targets, against the bootstrap's round 0 in pp (task: reported, no target)
TARGETS = {"position": 20.0, "none": -5.0, "instruction": -5.0}
# Policies outside a loop compared with a loop's bootstrap: (row label prefix, its files' folder and name
# before `_<perturb>_50ep.json`, the loop run whose round 0 it started from)
AGAINST_BOOTSTRAP = (("position oracle", "position_oracle/sft_seed_swap256", "libero_t1"),)

# (suite, row label, what it is, files under docs/results/libero/ in the order they are read; later files
# add perturbations, never overwrite one)
ROWS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("libero_object", "scripted expert", "privileged state, no learning (`--policy expert`)",
     ("expert_libero_object.json",)),
    ("libero_object", "SFT, plain demonstrations", "185 expert demonstrations, 1,500 steps (FINDINGS #21)",
     ("sft_plain20_libero_object.json",)),
    ("libero_object", "SFT, DART demonstrations (the seed policy)",
     "107 noisy-execution expert demonstrations (FINDINGS #21)",
     ("sft_dart_libero_object.json", "sft_dart_libero_object_position.json",
      "sft_dart_libero_object_instruction.json", "sft_dart_libero_object_task.json")),
    ("libero_object", "seed policy + 1 CoDA round", "the standalone CoDA round (FINDINGS #23)",
     ("coda_round1_libero_object.json",)),
    ("libero_object", "seed policy + 1 round on the tasks' own scenes", "the control: the same demonstration "
     "budget, no generated scene (`--arm original`)", ("original_round1_libero_object.json",)),
    ("libero_object", "SFT with the auxiliary target loss (the libero preset's bootstrap since FINDINGS #39)",
     "the loop's 300 seed demonstrations of `libero_s34` (eight layouts per task), 1,500 steps; "
     "`studies.libero_loop_sft --variants target`",
     ("loop/libero_s34/sft300_target_none.json", "loop/libero_s34/sft300_target_position.json",
      "loop/libero_s34/sft300_target_instruction.json", "loop/libero_s34/sft300_target_task.json")),
    ("libero_object", "position oracle: the bootstrap's recipe on its 300 seed + 256 swapped-start "
     "demonstrations (FINDINGS #55; a report, no choice follows)",
     "`libero_t1`'s seed demonstrations and 256 DART ones starting in swap partners 2-3 (never "
     "LIBERO-Pro's), 1,500 steps; `studies.libero_position --demos 256 --sft`",
     ("position_oracle/sft_seed_swap256_none_50ep.json",
      "position_oracle/sft_seed_swap256_position_50ep.json")),
    ("libero_spatial", "scripted expert", "privileged state, no learning (`--policy expert`)",
     ("expert_libero_spatial.json", "expert_libero_spatial_position.json")),
    ("libero_spatial", "SFT, plain demonstrations", "75 expert demonstrations, 1,500 steps (FINDINGS #19)",
     ("sft_libero_spatial.json",)),
    ("libero_spatial", "SFT, DART demonstrations",
     "55 noisy-execution expert demonstrations (of 20 tries per task), 1,500 steps (FINDINGS #35)",
     ("sft_dart_libero_spatial.json", "sft_dart_libero_spatial_position.json",
      "sft_dart_libero_spatial_instruction.json", "sft_dart_libero_spatial_task.json")),
    ("libero_goal", "scripted expert", "privileged state, no learning (`--policy expert`; the 8 tasks it "
     "scripts)", ("expert_libero_goal.json",)),
)
SUITES = ("libero_object", "libero_spatial", "libero_goal")

# The CoDA paper's Table 2 (project page), the suites we run and overall: π0.5-based vision policies trained
# on their data, and ASPIRE (code-as-policy). Success as a fraction; "task" is the paper's "Task" column.
PAPER = (
    ("π0.5", {"object": {"position": 0.17, "task": 0.01}, "spatial": {"position": 0.20, "task": 0.01},
              "overall": {"position": 0.25, "task": 0.01}}),
    ("ASPIRE (code-as-policy)", {"object": {"position": 0.98, "task": 0.95},
                                 "spatial": {"position": 0.51, "task": 0.60},
                                 "overall": {"position": 0.77, "task": 0.67}}),
    ("CoDA (π0.5), 5 rounds", {"object": {"position": 0.90, "task": 0.86},
                               "spatial": {"position": 0.76, "task": 0.72},
                               "overall": {"position": 0.82, "task": 0.72}}),
    ("CoDA (π0.5), 15 rounds", {"object": {"position": 0.91, "task": 0.88},
                                "spatial": {"position": 0.78, "task": 0.76},
                                "overall": {"position": 0.84, "task": 0.76}}),
)
PAPER_COLUMNS = ("object", "spatial", "overall")


def perturb_of(suite: str, base: str = "libero_object") -> str:
    """`libero_object_swap` → position (the suffix after the original suite's own name)."""
    if not suite.startswith(base):
        raise ValueError(f"an evaluation of {suite!r} in a row of {base!r}")
    rest = suite[len(base):]
    if rest and rest not in SUFFIX:
        raise ValueError(f"{suite!r}: unknown perturbation suffix {rest!r}")
    return SUFFIX.get(rest, "none")


def cells(path: Path, base: str = "libero_object") -> dict[str, dict[str, Any]]:
    """perturbation → {successes, episodes, wall_s, per_task} from one evaluation file or one round's
    record (`per_task`: its episodes per task; the standalone round's records did not say it, so it is
    their episodes over their tasks)."""
    d = json.loads(path.read_text())
    if "evaluation" in d:
        return {p: {"successes": e["successes"], "episodes": e["episodes"], "wall_s": e.get("wall_s"),
                    "per_task": e.get("episodes_per_task", e["episodes"] // e["tasks"])}
                for p, e in d["evaluation"].items()}
    return {perturb_of(d["suite"], base): {"successes": d["successes"], "episodes": d["episodes"],
                                           "wall_s": d.get("wall_s"), "per_task": d["episodes_per_task"]}}


def by_size(paths: list[Path], base: str, names: list[str]) -> dict[int, tuple[list[str], dict[str, Any]]]:
    """episodes per task → (the files of that size, perturbation → cell); an earlier file's cell stands."""
    out: dict[int, tuple[list[str], dict[str, Any]]] = {}
    for path, name in zip(paths, names, strict=True):
        for p, c in cells(path, base).items():
            sources, got = out.setdefault(c["per_task"], ([], {}))
            got.setdefault(p, c)
            if name not in sources:
                sources.append(name)
    return out


def build(libero: Path) -> dict[str, Any]:
    rows = []
    for suite, label, what, files in ROWS:
        found = [name for name in files if (libero / name).is_file()]
        sized = by_size([libero / n for n in found], suite, found)
        rows += [{"row": label, "what": what, "suite": suite, "episodes_per_task": per_task,
                  "sources": sources, "cells": got}
                 for per_task, (sources, got) in sorted(sized.items(), reverse=True)]
    rows += loop_rows(libero / "loop")
    return {"ours": rows, "against_bootstrap": against_bootstrap(libero),
            "paper": [{"row": r, "success": s} for r, s in PAPER]}


def against_bootstrap(libero: Path) -> list[dict[str, Any]]:
    """Each loop run's later rounds at the protocol's size, and the policies of `AGAINST_BOOTSTRAP`,
    against the round 0 of the run they started from (`BOOTSTRAP_FROM`, else their own), per perturbation
    both have: `experiments.liberopro.compare`'s difference and intervals, the target's verdict."""
    from experiments.liberopro.compare import compare, read, verdict
    from experiments.liberopro.run import evaluation_file

    loop = libero / "loop"
    pairs = []  # (row, against, perturbation, base file, other file)
    for path in sorted(loop.glob(f"*/round*_*_{PROTOCOL}ep.json")):
        run, (head, perturb) = path.parent.name, path.stem.split("_")[:2]
        rnd = int(head[len("round"):])
        boot = BOOTSTRAP_FROM.get(run, (run,))[0]
        if rnd > 0:
            pairs.append((f"loop `{run}`, round {rnd}", boot, perturb,
                          evaluation_file(loop / boot, 0, perturb, PROTOCOL), path))
    for label, stem, boot in AGAINST_BOOTSTRAP:
        for path in sorted(libero.glob(f"{stem}_*_{PROTOCOL}ep.json")):
            perturb = path.stem[len(Path(stem).name) + 1:].split("_")[0]
            pairs.append((label, boot, perturb, evaluation_file(loop / boot, 0, perturb, PROTOCOL), path))
    out = []
    for row, boot, perturb, base, other in pairs:
        if not base.is_file():
            continue
        r = compare(read(base), read(other))
        suite = max((s for s in SUITES if r["suite"].startswith(s)), key=len)
        target = TARGETS.get(perturb)
        out.append({"row": row, "suite": suite, "against": f"`{boot}` round 0", "perturb": perturb,
                    "base": str(base.relative_to(libero)), "other": str(other.relative_to(libero)),
                    "diff_pp": r["diff_pp"], "over_episodes": r["over_episodes"]["interval_pp"],
                    "over_tasks": r["over_tasks"]["interval_pp"], "target_pp": target,
                    "verdict": verdict(r, target) if target is not None else "reported"})
    order = {p: i for i, p in enumerate(PERTURBS)}
    return sorted(out, key=lambda x: (x["suite"], x["row"], order[x["perturb"]]))


def loop_rows(folder: Path) -> list[dict[str, Any]]:
    """One row per evaluated round (and episodes per task) of each loop run under `folder`
    (`experiments.liberopro.run`)."""
    by: dict[tuple[str, int], list[Path]] = {}
    for path in sorted(folder.glob("*/round*_*.json")):
        rnd = int(path.stem.split("_")[0][len("round"):])
        by.setdefault((path.parent.name, rnd), []).append(path)
    rows = []
    for (run, rnd), paths in sorted(by.items()):
        suite = json.loads(paths[0].read_text())["suite"]
        base = max((s for s in SUITES if suite.startswith(s)), key=len)
        sized = by_size(paths, base, [f"loop/{run}/{p.name}" for p in paths])
        rows += [loop_row(folder, run, rnd, base, per_task, sources, got)
                 for per_task, (sources, got) in sorted(sized.items(), reverse=True)]
    return rows


def loop_row(folder: Path, run: str, rnd: int, base: str, per_task: int, sources: list[str],
             got: dict[str, Any]) -> dict[str, Any]:
    """A loop run's round at one number of episodes per task, with what sets the run apart."""
    method = _method(folder / run)
    rounds = f"{rnd} {'CoDA' if method == 'coda' else f'`{method}`'} round{'s' if rnd > 1 else ''}"
    label = f"loop `{run}`, round {rnd}" + (" (SFT on its seed demonstrations)" if rnd == 0 else
                                            f" (after {rounds})")
    what = f"`agents.run`{_loop_config(folder / run)}; `experiments.liberopro.run --run runs/{run}`"
    if run in BOOTSTRAP_FROM:
        what += f"; rounds on `{BOOTSTRAP_FROM[run][0]}`'s bootstrap ({BOOTSTRAP_FROM[run][1]})"
    wall = _loop_wall(folder / run, rnd)
    if wall is not None:
        what += f"; the loop's wall clock through this round {wall / 60:.0f} min"
    elif _bootstrap_resumed(folder / BOOTSTRAP_FROM.get(run, (run,))[0]):
        what += "; its bootstrap was resumed after a kill, so the loop's wall clock is not known"
    return {"row": label, "what": what, "suite": base, "episodes_per_task": per_task, "loop_wall_s": wall,
            "sources": sources, "cells": got}


def _loop_config(run: Path) -> str:
    """What sets the run apart, from its copied `run_config.json`: the seed demonstrations, the target loss
    (the libero preset changed both over the runs; FINDINGS #39), the round's training scenes and how a
    round updates (its steps and rate, or retraining the bootstrap's recipe: FINDINGS #56)."""
    path = run / "run_config.json"
    if not path.is_file():
        return ""
    cfg = json.loads(path.read_text())
    loss = cfg["learn"]["policy"].get("target_loss", 0.0)  # runs before the option existed had none
    retrain = cfg["learn"].get("retrain")  # runs before the option existed updated
    steps = ("at steps scaled to them" if cfg["learn"].get("retrain_steps") == "scaled"
             else "at the bootstrap's steps")  # FINDINGS #61
    update = (f"each round retrains the bootstrap's recipe on every demonstration {steps}" if retrain
              else f"round updates {cfg['learn']['awr_steps']} steps at lr {cfg['learn']['awr_lr']:g}")
    return (f" (its config: {cfg['preset']} preset, {cfg['seed_demos']} seed demonstrations, "
            f"{'target loss ' + format(loss, 'g') if loss else 'no target loss'}, {cfg['budget']} training "
            f"scenes a round, {update})")


def _method(run: Path) -> str:
    """The run's method, from its copied `run_config.json` (coda where there is none)."""
    path = run / "run_config.json"
    return json.loads(path.read_text()).get("method", "coda") if path.is_file() else "coda"


def _bootstrap_resumed(run: Path) -> bool:
    """Whether the run's bootstrap finished in an invocation that found part of its seed demonstrations
    already collected (a resume after a kill): its recorded cost is then that invocation's share only, and
    it ran fewer episodes than it trained on demonstrations (a whole bootstrap runs at least one a demo)."""
    path = run / "run_metrics.jsonl"
    if not path.is_file():
        return False
    first = json.loads(path.read_text().splitlines()[0])
    boot = first.get("cost", {}).get("bootstrap", {})
    return first["round"] == 0 and boot.get("episodes", 0) < first.get("train", {}).get("demos", 0)


def _loop_wall(run: Path, rnd: int) -> float | None:
    """The loop's wall seconds up to round `rnd`'s policy, from the run's copied `run_metrics.jsonl` (a run
    resumed over several invocations: the rounds' own costs summed); None where that cannot be known (no
    metrics, or a bootstrap resumed part-way)."""
    path = run / "run_metrics.jsonl"
    if not path.is_file() or (run.name not in BOOTSTRAP_FROM and _bootstrap_resumed(run)):
        return None
    total = 0.0
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec["round"] <= rnd and not (rec["round"] == 0 and run.name in BOOTSTRAP_FROM):
            total += sum(c.get("wall_s", 0.0) for c in rec.get("cost", {}).values())
    if run.name in BOOTSTRAP_FROM:
        parent = _loop_wall(run.parent / BOOTSTRAP_FROM[run.name][0], 0)
        return None if parent is None else round(total + parent, 1)
    return round(total, 1)


def _pct(c: dict[str, Any] | None) -> str:
    if not c or not c["episodes"]:
        return "–"
    return f"{100 * c['successes'] / c['episodes']:.0f} % ({c['successes']}/{c['episodes']})"


PRIVILEGED = ("Our policy reads privileged simulator state — each object's pose and box, the goal region, "
              "the instruction — as object tokens, not camera images; the paper's π0.5 reads camera images. "
              "The rows compare with each other, not with the paper's numbers.")
BEFORE = ("Episode i from init state i of each file: a tenth or a fifth of the protocol's starts, so these "
          "rows are not the protocol's numbers and stay out of its table.")
BEFORE_SFT = (" The standalone SFT policies among them were trained on demonstrations from init states 20 "
              "and up (`experiments.liberopro.sft` before issue #41; it now starts them from LIBERO's own "
              "samples), which a 50-episode evaluation would include.")


def _rows(rows: list[dict[str, Any]], size_column: bool) -> list[str]:
    """A markdown table of `rows`: the four perturbations always, object when any row has it."""
    perturbs = [p for p in PERTURBS if p != "object" or any("object" in r["cells"] for r in rows)]
    head = "| policy | " + ("per task | " if size_column else "") + " | ".join(
        "original" if p == "none" else p for p in perturbs) + " | what |"
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    for r in rows:
        size = f"{r['episodes_per_task']} | " if size_column else ""
        pct = " | ".join(_pct(r["cells"].get(p)) for p in perturbs)
        lines.append(f"| {r['row']} | {size}{pct} | {r['what']} |")
    return lines


def _suite(table: dict[str, Any], suite: str) -> list[str]:
    """One suite's tables: the protocol's (50 per task), then the earlier, smaller evaluations."""
    mine = [r for r in table["ours"] if r["suite"] == suite]
    protocol = [r for r in mine if r["episodes_per_task"] == PROTOCOL]
    before = [r for r in mine if r["episodes_per_task"] != PROTOCOL]
    lines = [f"## Ours: {suite}, object-token policy on privileged state (CPU)", ""]
    lines += _rows(protocol, False) if protocol else ["No evaluation at the protocol's size yet."]
    walls = [c["wall_s"] for r in protocol for c in r["cells"].values() if c.get("wall_s")]
    if walls:
        span = f"{min(walls) / 60:.0f}" + ("" if round(min(walls) / 60) == round(max(walls) / 60) else
                                           f"–{max(walls) / 60:.0f}")
        lines += ["", f"One evaluation at this size (one perturbation, every task's {PROTOCOL} episodes) "
                  f"took {span} min of wall time here ({len(walls)} of them; each file's `wall_s`, with the "
                  "workers and the machine's load it ran under)."]
    lines += _against(table, suite)
    lines += ["", f"Protocol: `python -m experiments.liberopro --suite {suite} --perturb P --policy POLICY "
              f"--out FILE` — {PROTOCOL} episodes per task from init states 0–{PROTOCOL - 1} of each "
              f"(perturbed) suite's own file, the instruction read from its BDDL, {MAX_STEPS[suite]} steps; "
              f"position = `{suite}_swap`, instruction = `{suite}_lan`, task = `{suite}_task`, object = "
              f"`{suite}_object`. Wall time per evaluation is in each source file.", ""]
    if before:
        sizes = " or ".join(str(n) for n in sorted({r["episodes_per_task"] for r in before}))
        lines += [f"### {suite}: {sizes} episodes per task (before the protocol's {PROTOCOL})", "",
                  *_rows(before, True), "",
                  BEFORE + (BEFORE_SFT if any(r["row"].startswith("SFT") for r in before) else ""), ""]
    return lines


def _against(table: dict[str, Any], suite: str) -> list[str]:
    """The suite's rows of `against_bootstrap` as a table (nothing when it has none)."""
    from experiments.liberopro.compare import pp

    rows = [r for r in table.get("against_bootstrap", []) if r["suite"] == suite]
    if not rows:
        return []
    lines = ["", "**Against the bootstrap** — issue #41's targets: position ≥ +20 pp, original and "
             "instruction ≥ −5 pp, task reported; a target is shown when both 95 % intervals lie at or above "
             "it, measured not to hold when both lie below it (`python -m experiments.liberopro.compare BASE "
             "OTHER --at-least T` gives each row with its per-task table):", "",
             "| policy | against | perturbation | difference (pp) | 95 % over episodes | 95 % over tasks "
             "| target |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        target = "reported" if r["target_pp"] is None else (
            f"≥ {r['target_pp']:+g}: {r['verdict']}".replace("-", "−"))
        span = [f"[{pp(lo)}, {pp(hi)}]" for lo, hi in (r["over_episodes"], r["over_tasks"])]
        name = "original" if r["perturb"] == "none" else r["perturb"]
        lines.append(f"| {r['row']} | {r['against']} | {name} | {pp(r['diff_pp'])} | {span[0]} | "
                     f"{span[1]} | {target} |")
    return lines


def markdown(table: dict[str, Any], command: str) -> str:
    lines: list[str] = [PRIVILEGED, ""]
    for suite in SUITES:
        lines += _suite(table, suite)
    lines += ["## Reported in the CoDA paper (theirs, not measured here)", "",
              "Table 2 of the paper: vision-language-action policies (π0.5, reading camera images) trained "
              "on their data and GPUs, and ASPIRE, a code-as-policy method. Ours reads privileged simulator "
              "state as object tokens, so the rows are not comparable as methods — they say where the "
              "benchmark's numbers sit.", "",
              "| method | " + " | ".join(f"{c}: {p}" for c in PAPER_COLUMNS for p in ("position", "task"))
              + " |", "|---" * (1 + 2 * len(PAPER_COLUMNS)) + "|"]
    for r in table["paper"]:
        vals = [r["success"][c][p] for c in PAPER_COLUMNS for p in ("position", "task")]
        lines.append(f"| {r['row']} | " + " | ".join(f"{100 * v:.0f} %" for v in vals) + " |")
    lines += ["", f"Written by `{command}` from the files under `docs/results/libero/` each row names."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("experiments.liberopro.table", __doc__)
    ap.add_argument("--results", type=Path, default=RESULTS,
                    help="the folder whose libero/ holds the evaluations (default docs/results)")
    ap.add_argument("--out", type=Path, default=RUNS_RESULTS,
                    help="where liberopro.json and .md go (default runs/results; docs/results: the committed "
                         "table)")
    a = ap.parse_args(argv)
    if not (a.results / "libero").is_dir():
        ap.error(f"--results {a.results}: no libero/ folder of evaluations in it")
    table = build(a.results / "libero")
    a.out.mkdir(parents=True, exist_ok=True)
    command = "python -m experiments.liberopro.table" + ("" if a.out == RUNS_RESULTS else f" --out {a.out}")
    (a.out / "liberopro.json").write_text(json.dumps(table, indent=1) + "\n")
    (a.out / "liberopro.md").write_text(markdown(table, command))
    print((a.out / "liberopro.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
