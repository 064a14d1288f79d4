"""Answers FINDINGS #50's question for the core families: how often does the rules critic's top factor tie
with the runner-up, so that `CriticConfig.ties` decides the diagnosis? Read from finished runs' diagnosis
files (`<run>/diagnoses/round_*/*.json`): a diagnosis whose confidence is exactly 0.5 (the top score's share
of the top two, `agents.critic.rules.confidence`) had a tie at the top.

    python -m studies.critic_ties --runs 'runs/table1_core/coda_*' --label core_links \\
        --out docs/results/findings/critic_ties.json

Only the rules critic's diagnoses count (`critic_id` "rules"). Each `--label` adds (or replaces) one entry in
the `--out` file, with the globs it read.
"""

from __future__ import annotations

import glob
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from common.cli import comma_list, command_parser

TIE = 0.5


def count_ties(runs: list[str]) -> dict[str, Any]:
    n, ties, families, factors = 0, 0, Counter(), Counter()
    dirs = sorted({d for pattern in runs for d in glob.glob(pattern)})
    for run in dirs:
        for f in sorted(Path(run).glob("diagnoses/round_*/*.json")):
            rec = json.loads(f.read_text())
            dx = rec["diagnosis"]
            if dx.get("critic_id") != "rules":
                continue
            n += 1
            if abs(float(dx["confidence"]) - TIE) < 1e-9:
                ties += 1
                families[rec["family"]] += 1
                factors[dx["factor"]] += 1
    return {"runs": len(dirs), "diagnoses": n, "top_ties": ties, "tie_families": dict(families),
            "tie_factors": dict(factors)}


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("studies.critic_ties", __doc__)
    ap.add_argument("--runs", type=comma_list(), required=True,
                    help="comma-separated globs of run directories")
    ap.add_argument("--label", required=True, help="this entry's name in --out")
    ap.add_argument("--out", type=Path, help="a JSON file of entries by label")
    a = ap.parse_args(argv)
    found = count_ties(a.runs)
    if found["runs"] == 0:
        print(f"studies.critic_ties: no run directory matches {', '.join(a.runs)}", file=sys.stderr)
        return 2
    command = "python -m studies.critic_ties " + " ".join(argv if argv is not None else sys.argv[1:])
    entry = {**found, "globs": a.runs, "command": command}
    print(json.dumps(entry, indent=1))
    if a.out:
        have = json.loads(a.out.read_text()) if a.out.exists() else {}
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps({**have, a.label: entry}, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
