"""Answers FINDINGS #50 (issue #41): why the LIBERO loop's rounds do not move position, link by link, read
from the committed records of its runs (`docs/results/libero/loop/<run>/run_metrics.jsonl`,
`run_verdicts.json`): nothing is run.

    python -m studies.libero_links --runs libero_s35,libero_s36,libero_s37,libero_sp1 \\
        --out docs/results/findings/libero_links.md

Per run: which factor each diagnosis named and its verdict (is a position failure diagnosed as the item's
`start`, the factor LIBERO-Pro's position perturbation moves? validated?), and per round the training
scenes each arm gave the update beside the demonstrations it replays (do generated swap layouts reach the
update, and in what share?); where the record has it (`run_trained.json`), the position factor's values
among those scenes. An arm "moves the start" when its mode's name carries a `start_` edit (exploration
variants name their edits; a difficulty mode is named after its factor).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from common.cli import comma_list, command_parser
from common.markdown import md_table

LOOP = Path(__file__).resolve().parents[1] / "docs" / "results" / "libero" / "loop"
POSITION = ("start", "plate")  # the factor LIBERO-Pro's position perturbation moves, per family
RETRAINED = "all: a retraining round"  # FINDINGS #56: the round's update is SFT on demonstrations only


def moves_start(mode: str) -> bool:
    return any(part.startswith(f"{f}_") or mode.startswith(f"{f}_") for f in POSITION
               for part in mode.split("__"))


def training_arms(row: dict[str, Any]) -> list[tuple[str, int]]:
    """(mode, training scenes) per slot of one round's metrics row: `generation.arms`, entries
    "<mode>|<family>×<n>" — the scenes whose demonstrations the update took. (The row's `arms` are the
    measurement arms, the held scenes each arm is scored on after the update; the first version of this
    study read those, FINDINGS #50's correction.)"""
    from experiments.table.stats import slot_counts

    return slot_counts((row.get("generation") or {}).get("arms", []))


def run_links(folder: Path) -> dict[str, Any]:
    verdicts = json.loads((folder / "run_verdicts.json").read_text())
    rows = [json.loads(line) for line in (folder / "run_metrics.jsonl").read_text().splitlines() if line]
    named = Counter(v["factor"] for v in verdicts)
    status = Counter((v["factor"], v["status"]) for v in verdicts)
    rounds = []
    for r in rows:
        if r["round"] == 0:
            continue
        arms = training_arms(r)
        train = r.get("train", {})
        rounds.append({"round": r["round"], "scenes": sum(n for _, n in arms),
                       "start_scenes": sum(n for mode, n in arms if moves_start(mode)),
                       "arms": [f"{mode} ×{n}" for mode, n in arms if n],
                       # a retraining round (FINDINGS #56) trains on demonstrations only: `demos`
                       "episodes": train.get("episodes", train.get("demos")), "chunks": train.get("chunks"),
                       "demo_chunks": train.get("demo_chunks")})
    trained = folder / "run_trained.json"  # experiments.liberopro.run writes it since FINDINGS #59
    return {"run": folder.name, "diagnoses": len(verdicts), "named": dict(named),
            "verdicts": {f"{f}: {s}": n for (f, s), n in sorted(status.items())}, "rounds": rounds,
            "trained": json.loads(trained.read_text()) if trained.is_file() else []}


def markdown(runs: list[dict[str, Any]], command: str) -> str:
    out = ["# Why the LIBERO loop's rounds do not move position (FINDINGS #50)", "",
           "Read from the runs' committed records; nothing was run. Position factor: the item's `start` "
           "(libero_object), the plate's place (`plate`, libero_spatial), the subject's `start` "
           "(libero_goal: the object carried, or the drawer's cabinet).", "",
           "**The critic's diagnoses**", ""]
    out += md_table(("run", "diagnoses", "factor named (count)", "verdicts"),
                    [(r["run"], r["diagnoses"], ", ".join(f"`{k}` {v}" for k, v in r["named"].items()),
                      "; ".join(f"{k} {v}" for k, v in r["verdicts"].items())) for r in runs])
    out += ["", "**What each round trained on**", ""]
    out += md_table(("run", "round", "training scenes", "of them in an arm moving the position factor",
                     "episodes in the update", "chunks (of them replayed demonstrations)", "arms"),
                    [(r["run"], x["round"], x["scenes"], x["start_scenes"], x["episodes"],
                      f"{x['chunks']} ({x['demo_chunks'] if x['demo_chunks'] is not None else RETRAINED})",
                      "; ".join(x["arms"]))
                     for r in runs for x in r["rounds"]])
    trained = [(r["run"], t) for r in runs for t in r["trained"]]
    if trained:
        out += ["", "**The position factor's values among each round's training scenes** (the runs whose "
                "record has them: every accepted training scene, whose demonstration went into the "
                "update)", ""]
        out += md_table(("run", "round", "training scenes", "position factor: value ×scenes", "task: items"),
                        [(run, t["round"], t["scenes"], "; ".join(
                            f"`{f}` " + ", ".join(f"{v} ×{n}" for v, n in t["factors"][f].items())
                            for f in POSITION if f in t["factors"]),
                          len(t["factors"].get("task", {}))) for run, t in trained])
    return "\n".join(out) + f"\n\nCommand: `{command}`\n"


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("studies.libero_links", __doc__)
    ap.add_argument("--runs", type=comma_list(), required=True,
                    help="run folders under docs/results/libero/loop")
    ap.add_argument("--out", type=Path, help="write the page here (and its JSON beside it)")
    a = ap.parse_args(argv)
    missing = [r for r in a.runs if not (LOOP / r / "run_verdicts.json").exists()]
    if missing:
        print(f"studies.libero_links: no committed records for {', '.join(missing)} under {LOOP}",
              file=sys.stderr)
        return 2
    runs = [run_links(LOOP / r) for r in a.runs]
    command = "python -m studies.libero_links " + " ".join(argv if argv is not None else sys.argv[1:])
    text = markdown(runs, command)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text)
        a.out.with_suffix(".json").write_text(json.dumps(runs, indent=1) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
