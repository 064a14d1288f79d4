"""Issue #40: are the LLM training writer's new stages reached, or vacuous? Read from a finished
`bench.agents.writers` result and the answers it logged (no model is called).

    python -m bench.agents.writers_reached docs/results/writers/issue40/stage_typed_1.5b.json

A one-stage answer's `done` is chained to the next stage's (`(<next>) or (<condition>)`), so a condition that
never holds agrees with the demonstrations as well as the seed program does. For each of the local writer's
training answers (the last `writer_stage` call of each diagnosis, in the result's row order), this rebuilds
the program and counts the share of expert demonstrations (6 per family, as the benchmark draws them) on
which the new stage is reached before the next (`bench.agents.writers.new_stages_reached`). Writes
`<result>_reached.json` beside the result. Benchmarks run from now on count it themselves.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from agents.writers.answers import stage_schema
    from agents.writers.training import stage_program
    from bench.agents.writers import family_demos, new_stages_reached
    from programs.seeds import seed_library

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not Path(args[0]).is_file():
        print("usage: python -m bench.agents.writers_reached RESULT.json (a bench.agents.writers result)",
              file=sys.stderr)
        return 2
    result = Path(args[0])
    folder = result.parent
    rows = [r for r in json.loads(result.read_text())["rows"] if r["writer"] == "local"]
    calls = [json.loads(line) for line in (folder / "llm_calls_local.jsonl").read_text().splitlines()]
    answers = [c for c in calls if c["prompt_name"] == "writer_stage" and c["ok"]][-len(rows):]
    demos = family_demos({r["family"] for r in rows}, 6, 2)
    out = []
    for row, call in zip(rows, answers, strict=True):
        base = seed_library()[row["family"]][1]
        text = (folder / "llm_texts" / f"{call['texts']['answer']}.txt").read_text()
        tp = stage_program(stage_schema(base).model_validate_json(text), base, {"phase": ""})
        if [g.name for g in tp.subgoals] != row["training"]["subgoals"]:
            raise SystemExit(f"answer {call['texts']['answer']} is not row {row['diagnosis']!r}'s program")
        share = new_stages_reached(tp, base, demos[row["family"]])
        out.append({"family": row["family"], "diagnosis": row["diagnosis"], "answer": json.loads(text),
                    "new_stages_reached": share})
        print(f"{row['family']:13} reached on {share:.2f} of the demos: {json.loads(text)['condition']}")
    n = sum(o["new_stages_reached"] >= 0.5 for o in out)
    print(f"new stages reached before the next on at least half the demonstrations: {n} of {len(out)}")
    dest = result.with_name(result.stem + "_reached.json")
    dest.write_text(json.dumps({"result": str(result), "reached_on_half": n, "n": len(out), "rows": out},
                               indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
