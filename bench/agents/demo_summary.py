"""What a `make demo` run did, one line per run: diagnoses, validated verdicts, program pairs compiled (and
in how many the training program keeps the stage the LLM wrote — not the seed's fallback, nor refined
back to the seed's stages), the LLM's seconds against the nodes' seconds. Reads a run directory or a copy
of its records (`metrics.jsonl`, `llm_calls.jsonl`, the program `.json` files anywhere below it).

    python -m bench.agents.demo_summary runs/demo docs/results/demo/seeds_c3d0bed/seed2
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def summary(run: Path) -> dict[str, float]:
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    critic = [r.get("critic") or {} for r in rows]
    compiled = [c for r in critic for c in r.get("compiled") or []]
    files = {p.name: p for p in run.rglob("*.json")}

    def llm_stage(entry: dict) -> bool:  # the compiled training program keeps a stage the writer added
        tp = json.loads(files[Path(entry["training"]).name].read_text())
        return any(g["doc"].startswith("staging the") for g in tp["subgoals"])
    calls_path = run / "llm_calls.jsonl"
    calls = ([json.loads(x) for x in calls_path.read_text().splitlines() if x.strip()]
             if calls_path.exists() else [])
    return {"diagnoses": sum(c.get("diagnoses", 0) for c in critic),
            "validated": sum((c.get("verdicts") or {}).get("validated", 0) for c in critic),
            "pairs": len(compiled), "pairs_llm_training": sum(llm_stage(c) for c in compiled),
            "llm_calls": len(calls),
            "llm_s": round(sum(c["latency_s"] for c in calls if not c.get("cache_hit")), 1),
            "nodes_s": round(sum(c["wall_s"] for r in rows for c in r["cost"].values()), 1)}


def main(argv: list[str] | None = None) -> int:
    runs = [Path(a) for a in (sys.argv[1:] if argv is None else argv)]
    if not runs or (missing := [str(r) for r in runs if not (r / "metrics.jsonl").is_file()]):
        print(f"usage: python -m bench.agents.demo_summary RUN ... (no metrics.jsonl in: "
              f"{', '.join(missing) if runs else 'no run given'})", file=sys.stderr)
        return 2
    for r in runs:
        s = summary(r)
        print(f"{r}: diagnoses {s['diagnoses']}, validated {s['validated']}, program pairs compiled "
              f"{s['pairs']} (training program keeping the LLM's stage: {s['pairs_llm_training']}), LLM "
              f"{s['llm_calls']} calls {s['llm_s']:.0f} s of {s['nodes_s']:.0f} s in the nodes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
