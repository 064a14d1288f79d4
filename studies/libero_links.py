"""Answers FINDINGS #50 (issue #41): why the LIBERO loop's rounds do not move position, link by link, read
from the committed records of its runs (`docs/results/libero/loop/<run>/run_metrics.jsonl`,
`run_verdicts.json`): nothing is run.

    python -m studies.libero_links --runs libero_s35,libero_s36,libero_s37,libero_sp1 \\
        --out docs/results/findings/libero_links.md

Per run: which factor each diagnosis named and its verdict (is a position failure diagnosed as the item's
`start`, the factor LIBERO-Pro's position perturbation moves? validated?), and per round the scenes each arm
trained on beside the demonstrations the update replays (do generated swap layouts reach the update, and in
what share?). An arm "moves the start" when its mode's name carries a `start_` edit (exploration variants
name their edits; a difficulty mode is named after its factor).
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


def moves_start(mode: str) -> bool:
    return any(part.startswith(f"{f}_") or mode.startswith(f"{f}_") for f in POSITION
               for part in mode.split("__"))


def run_links(folder: Path) -> dict[str, Any]:
    verdicts = json.loads((folder / "run_verdicts.json").read_text())
    rows = [json.loads(line) for line in (folder / "run_metrics.jsonl").read_text().splitlines() if line]
    named = Counter(v["factor"] for v in verdicts)
    status = Counter((v["factor"], v["status"]) for v in verdicts)
    rounds = []
    for r in rows:
        if r["round"] == 0:
            continue
        arms = r.get("arms", [])
        train = r.get("train", {})
        rounds.append({"round": r["round"], "scenes": sum(a["n"] for a in arms),
                       "start_scenes": sum(a["n"] for a in arms if moves_start(a["mode"])),
                       "arms": [f"{a['mode']} ×{a['n']}" for a in arms],
                       "episodes": train.get("episodes"), "chunks": train.get("chunks"),
                       "demo_chunks": train.get("demo_chunks")})
    return {"run": folder.name, "diagnoses": len(verdicts), "named": dict(named),
            "verdicts": {f"{f}: {s}": n for (f, s), n in sorted(status.items())}, "rounds": rounds}


def markdown(runs: list[dict[str, Any]], command: str) -> str:
    out = ["# Why the LIBERO loop's rounds do not move position (FINDINGS #50)", "",
           "Read from the runs' committed records; nothing was run. Position factor: the item's `start` "
           "(libero_object), the plate's place (`plate`, libero_spatial).", "",
           "**The critic's diagnoses**", ""]
    out += md_table(("run", "diagnoses", "factor named (count)", "verdicts"),
                    [(r["run"], r["diagnoses"], ", ".join(f"`{k}` {v}" for k, v in r["named"].items()),
                      "; ".join(f"{k} {v}" for k, v in r["verdicts"].items())) for r in runs])
    out += ["", "**What each round trained on**", ""]
    out += md_table(("run", "round", "generated scenes", "of them moving the position factor",
                     "episodes in the update", "chunks (of them replayed demonstrations)", "arms"),
                    [(r["run"], x["round"], x["scenes"], x["start_scenes"], x["episodes"],
                      f"{x['chunks']} ({x['demo_chunks']})", "; ".join(x["arms"]))
                     for r in runs for x in r["rounds"]])
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
