"""The two writers measured on the loop's own diagnoses: does what they write pass, and is it new?

    python -m bench.agents.writers --runs runs/table1_default/coda_seed0 --writers rules,local
    python -m bench.agents.writers --runs RUN1,RUN2 --max 8 --attempts 3 --out docs/results/writers/x.json

Diagnoses are read from the runs' `diagnoses/round_*/` records (validated ones first, then the rest; one per
(family, factor, phase, side)), each treated as if validated: its difficulty mode is founded as the memory
would found it. For each, and each writer backend:

- the **generation writer** (`write_generation_program`, the diagnosis riding along as in `remember`):
  whether its program passes the static checks and the sandbox's policy, generates a scene in the sandbox,
  and that scene is valid (compiles, settles, the expert solves it) — on the first attempt, or after the
  error is fed back (up to `--attempts` in all, as the loop's `max_retries` allows);
- the **training writer** (`write_training_program`): whether its program passes the checks (first
  attempt / after feedback), whether it differs from the family's seed program in behaviour (its
  fingerprint), and its agreement with expert demonstrations of the family before refinement, whether
  it reaches the compile threshold (0.9) before or after `programs.refine`, and on how many of the
  demonstrations a stage it adds is reached before the next one (the writer is given the demonstrations
  as in the loop, and refuses a stage reached on fewer than `--stage-reached` of them).

The `rules` writers are the baseline (template edits; no LLM). Nothing here reads the frozen suites.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agents.config import WriterConfig
from agents.graph.rundir import write_json
from bench.agents import bench_llm, local_model_argument
from common.cli import comma_list, command_parser, worker_count
from common.markdown import md_table

WRITERS = ("rules", "local", "openai")


def load_diagnoses(runs: list[Path], limit: int) -> list[tuple[str, Any]]:
    """(family, Diagnosis) from the runs' diagnosis records: validated first, one per kind."""
    from memory.types import Diagnosis

    recs = []
    for run in runs:
        for path in sorted(run.glob("diagnoses/round_*/*.json")):
            rec = json.loads(path.read_text())
            status = (rec.get("verdict") or {}).get("status", "unverified")
            recs.append((status != "validated", str(path), rec))
    recs.sort(key=lambda t: (t[0], t[1]))
    out, seen = [], set()
    for _, _, rec in recs:
        dx = Diagnosis.model_validate(rec["diagnosis"])
        key = (rec["family"], dx.factor, dx.phase, dx.side)
        if key not in seen:
            seen.add(key)
            out.append((rec["family"], dx))
    return out[:limit]


def family_demos(families: set[str], n: int, workers: int) -> dict[str, list[Any]]:
    """`n` expert demonstrations per family on seed-distribution scenes (the agreement evidence)."""
    import tempfile

    from sim.episode import Episode
    from sim.families import get_family
    from sim.pool import EpisodeJob, EpisodePool

    tmp = Path(tempfile.mkdtemp(prefix="coda-writers-"))
    out: dict[str, list[Any]] = {}
    with EpisodePool(workers) as pool:
        for fam in sorted(families):
            jobs = [EpisodeJob(scene=get_family(fam).sample_scene(7_800_000 + i), out=tmp / f"{fam}_{i}.npz")
                    for i in range(n)]
            out[fam] = [Episode.load(r.path) for r in pool.run(jobs) if r.success]
    return out


def _attempts(make: Any, attempts: int) -> tuple[Any, int | None, list[str]]:
    """Call `make(feedback)` until it returns without an error text, at most `attempts` times: (result,
    attempt that passed or None, errors)."""
    feedback, errors = None, []
    for k in range(1, attempts + 1):
        result, error = make(feedback)
        if not error:
            return result, k, errors
        errors.append(error)
        feedback = error
    return None, None, errors


def generation(family: str, dx: Any, llm: Any, sandbox: Any, attempts: int,
               examples: int = 0, memories: Sequence[tuple[Path, Any]] = ()) -> dict[str, Any]:
    from agents.llm.base import LLMOutputError
    from agents.writers.base import ProgramRejected
    from agents.writers.generation import program_errors, write_generation_program
    from memory.store import found_mode
    from programs.seeds import seed_library
    from sim.validity import check_scene

    base, mode = seed_library()[family][0], found_mode(dx, family, 1)
    shown = run_examples(memories, mode, examples)

    def make(feedback: str | None) -> tuple[Any, str]:
        try:
            p = write_generation_program(mode, base, llm, feedback, diagnosis=dx, pool=sandbox,
                                         config=WriterConfig(allow_ood=True), examples=shown)
        except (LLMOutputError, ProgramRejected) as e:  # a dead backend stops the benchmark instead
            return None, f"{type(e).__name__}: {e}"
        errors = program_errors(p, sandbox)
        if errors:
            return None, "\n".join(errors)
        made = sandbox.run(p.source, p.sample_factors(np.random.default_rng(0)), 0)
        if made.error is not None:
            return None, f"the program failed in the sandbox: {made.error}"
        report = check_scene(made.scenes[0])
        return p, "" if report.ok else f"the scene is not valid: {report.message}"

    t0 = time.perf_counter()
    program, passed, errors = _attempts(make, attempts)
    return {"passed_at": passed, "errors": [e[:300] for e in errors], "s": round(time.perf_counter() - t0, 1),
            "examples": len(shown), "program": program.hash8 if program else None,
            "edits": (program.diagnosis or "")[:200] if program else None}


def run_examples(memories: Sequence[tuple[Path, Any]], mode: Any, k: int) -> list[str]:
    """Up to `k` worked examples for `mode` from the runs' procedural memories (`agents.writers.examples`),
    the first run's first; each stored program read from its own run."""
    from agents.writers.examples import procedural_examples
    from programs.render import load_program

    out: list[str] = []
    for run, memory in memories:
        if len(out) < k:
            out += procedural_examples(memory, mode, lambda p, run=run: load_program(run / p), k - len(out))
    return out


def training(family: str, dx: Any, llm: Any, demos: list[Any], attempts: int,
             threshold: float = 0.9, form: str = "stage", reached: float = 0.5) -> dict[str, Any]:
    from agents.llm.base import LLMOutputError
    from agents.writers.reach import DROPPED, MOVED
    from agents.writers.training import write_training_program
    from programs.checks import check_training, format_errors
    from programs.potential import agreement
    from programs.refine import Evidence, refine
    from programs.seeds import seed_library

    seed = seed_library()[family][1]

    def make(feedback: str | None) -> tuple[Any, str]:
        try:
            # the demonstrations go in as the loop gives them: a written stage must be reached on `reached`
            tp = write_training_program(dx, seed, llm, feedback=feedback, evidence=Evidence(demos, threshold),
                                        config=WriterConfig(allow_ood=True, training_form=form,
                                                            stage_reached=reached))
        except LLMOutputError as e:
            return None, f"{type(e).__name__}: {e}"
        return tp, format_errors(check_training(tp)) or ""

    t0 = time.perf_counter()
    tp, passed, errors = _attempts(make, attempts)
    out: dict[str, Any] = {"passed_at": passed, "errors": [e[:300] for e in errors]}
    if tp is not None:
        a0 = agreement(tp, demos)
        refined = refine(tp, Evidence(demos, threshold)) if a0 < threshold else tp
        a1 = a0 if refined is tp else agreement(refined, demos)
        out |= {"differs_from_seed": tp.fingerprint != seed.fingerprint,
                "subgoals": [g.name for g in tp.subgoals],
                "agreement": round(a0, 3), "agreement_refined": round(a1, 3),
                "meets_threshold": a0 >= threshold, "meets_threshold_refined": a1 >= threshold,
                "new_and_agrees": tp.fingerprint != seed.fingerprint and a1 >= threshold,
                "new_stages_reached": new_stages_reached(tp, seed, demos),
                # its thresholds moved to the expert's quartiles (`agents.writers.reach.repair`)
                "thresholds_moved": any(MOVED in g.doc for g in tp.subgoals),
                "clauses_dropped": any(DROPPED in g.doc for g in tp.subgoals)}
    out["s"] = round(time.perf_counter() - t0, 1)
    return out


def new_stages_reached(tp: Any, seed: Any, demos: list[Any]) -> float | None:
    """The least share of `demos` on which a subgoal `tp` adds to `seed` is reached before the stage after it
    (`programs.potential.stage_reached`), or None when it adds none. A new stage's `done` is chained to the
    next one's (`(<next>) or (<condition>)`), so a condition that never holds still agrees with the
    demonstrations as well as the seed does: this tells a stage that shapes from a vacuous one."""
    from programs.potential import stage_reached

    names = {g.name for g in seed.subgoals}
    added = [k for k, g in enumerate(tp.subgoals) if g.name not in names and k + 1 < len(tp.subgoals)]
    if not added or not demos:
        return None
    return min(stage_reached(tp, demos, k) for k in added)


def summary(rows: list[dict[str, Any]], attempts: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[r["writer"]].append(r)
    for w, rs in by.items():
        g, t = [r["generation"] for r in rs], [r["training"] for r in rs]
        out[w] = {"n": len(rs),
                  "generation_first_try": sum(x["passed_at"] == 1 for x in g),
                  "generation_within_attempts": sum(x["passed_at"] is not None for x in g),
                  "training_first_try": sum(x["passed_at"] == 1 for x in t),
                  "training_within_attempts": sum(x["passed_at"] is not None for x in t),
                  "training_differs_from_seed": sum(bool(x.get("differs_from_seed")) for x in t),
                  "training_meets_threshold": sum(bool(x.get("meets_threshold")) for x in t),
                  "training_meets_threshold_refined": sum(bool(x.get("meets_threshold_refined")) for x in t),
                  "training_new_and_agrees": sum(bool(x.get("new_and_agrees")) for x in t),
                  # its added stages reached before the next stage on at least half the demonstrations
                  "training_new_stages_reached": sum((x.get("new_stages_reached") or 0) >= 0.5 for x in t),
                  "training_thresholds_moved": sum(bool(x.get("thresholds_moved")) for x in t),
                  "training_clauses_dropped": sum(bool(x.get("clauses_dropped")) for x in t),
                  "seconds": round(sum(x["s"] for x in g + t), 1), "attempts": attempts}
    return out


def table(s: dict[str, Any]) -> str:
    header = ("writer", "diagnoses", "generation: 1st try / within attempts", "training: 1st try / within",
              "training differs from seed", "meets 0.9 agreement (refined)", "new and agrees",
              "new stages reached (≥ half the demos)", "of them, thresholds moved", "clauses dropped",
              "seconds")
    return "\n".join(md_table(header, [
        (w, x["n"], f"{x['generation_first_try']} / {x['generation_within_attempts']}",
         f"{x['training_first_try']} / {x['training_within_attempts']}", x["training_differs_from_seed"],
         f"{x['training_meets_threshold']} ({x['training_meets_threshold_refined']})",
         x["training_new_and_agrees"], x.get("training_new_stages_reached", "–"),
         x.get("training_thresholds_moved", "–"), x.get("training_clauses_dropped", "–"),
         f"{x['seconds']:.0f}")
        for w, x in s.items()]))


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("bench.agents.writers", __doc__)
    ap.add_argument("--runs", type=comma_list(Path), required=True, help="comma-separated run directories")
    ap.add_argument("--writers", type=comma_list(choices=WRITERS), default=["rules"],
                    help=f"comma-separated of {', '.join(WRITERS)} (default rules)")
    ap.add_argument("--max", type=int, default=8, help="diagnoses (default 8)")
    ap.add_argument("--attempts", type=int, default=3, help="writer calls per program, feedback between")
    ap.add_argument("--demos", type=int, default=6, help="expert demonstrations per family (agreement)")
    ap.add_argument("--threads", type=int, default=2, help="llama.cpp threads of the local writer")
    ap.add_argument("--training-form", choices=("stage", "subgoals"), default="stage",
                    help="what an LLM training writer writes: one subgoal inserted into the family's program "
                         "(stage, the loop's default) or the whole list (subgoals; rows labelled +subgoals)")
    ap.add_argument("--stage-reached", type=float, default=WriterConfig.stage_reached,
                    help="share of the demonstrations on which a written stage must be reached, else the "
                         "answer is refused with the expert's read-outs (default: the loop's, "
                         f"{WriterConfig.stage_reached}; 0 checks nothing; rows labelled +reached<x>)")
    local_model_argument(ap, "--writers local")
    ap.add_argument("--examples", type=int, default=0,
                    help="show LLM generation writers up to K worked examples from the runs' procedural "
                         "memory (rows labelled <writer>+examples<K>; default 0: none)")
    ap.add_argument("--base-url", help="endpoint for --writers openai")
    ap.add_argument("--model", help="endpoint model for --writers openai")
    ap.add_argument("--workers", type=worker_count, default=2)
    ap.add_argument("--out", type=Path, help="write the results as JSON here (LLM call logs beside it)")
    a = ap.parse_args(argv)
    missing = [str(r) for r in a.runs if not (r / "diagnoses").is_dir()]
    if missing:
        ap.error(f"not run directories with diagnoses: {', '.join(missing)}")
    if a.max < 1 or a.attempts < 1 or a.demos < 1 or a.examples < 0:
        ap.error("--max, --attempts and --demos must be >= 1, --examples >= 0")
    if a.examples and a.writers == ["rules"]:
        ap.error("--examples is for LLM writers (the rules writer reads none): add --writers local or openai")
    dxs = load_diagnoses(a.runs, a.max)
    if not dxs:
        ap.error("no diagnosis in those runs")
    from contextlib import ExitStack

    from agents.llm import ResponseCache
    from memory.store import Memory
    from sandbox.pool import PoolConfig, SandboxPool

    demos = family_demos({f for f, _ in dxs}, a.demos, a.workers)
    log_dir = a.out.parent if a.out else Path(".")
    rows = finished_rows(a.out, a.runs, a.attempts)
    done = {(r["writer"], r["family"], r["diagnosis"]) for r in rows}
    with SandboxPool(PoolConfig(workers=a.workers)) as sandbox, ExitStack() as stack:
        memories = [(r, stack.enter_context(Memory(r / "memory"))) for r in a.runs] if a.examples else []
        for w in a.writers:
            k_ex = a.examples if w != "rules" else 0
            label = f"{w}+examples{k_ex}" if k_ex else w
            if w != "rules" and a.training_form != "stage":
                label += f"+{a.training_form}"
            if w != "rules" and a.stage_reached != WriterConfig.stage_reached:
                label += f"+reached{a.stage_reached:g}"
            todo = [(k, f, dx) for k, (f, dx) in enumerate(dxs) if (label, f, dx.text()[:200]) not in done]
            if not todo:
                continue
            cache = ResponseCache(log_dir / f"llm_cache_{w}.sqlite") if a.out and w != "rules" else None
            llm = None if w == "rules" else bench_llm(w, a, log_dir, cache)
            try:
                for k, family, dx in todo:
                    row = {"writer": label, "family": family, "diagnosis": dx.text()[:200],
                           "generation": generation(family, dx, llm, sandbox, a.attempts, k_ex, memories),
                           "training": training(family, dx, llm, demos[family], a.attempts,
                                                form=a.training_form, reached=a.stage_reached)}
                    rows.append(row)
                    print(f"{label} {k + 1}/{len(dxs)} {family} {dx.factor}/{dx.phase}: generation passed at "
                          f"{row['generation']['passed_at']}, training at {row['training']['passed_at']} "
                          f"(agreement {row['training'].get('agreement')})", flush=True)
                    if a.out:  # every finished row is kept: a killed benchmark resumes after it
                        save(a.out, a.runs, rows, a.attempts, complete=False)
            finally:
                if llm is not None:
                    llm.close()
    s = summary(rows, a.attempts)
    print(table(s))
    if a.out:
        save(a.out, a.runs, rows, a.attempts, complete=True)
    return 0


def save(out: Path, runs: list[Path], rows: list[dict[str, Any]], attempts: int, *, complete: bool) -> None:
    """The results so far; `complete` is False while diagnoses remain (a rerun of the same command resumes:
    finished rows are kept, answers already given are replayed from `llm_cache_<writer>.sqlite` beside it,
    so a resumed row's seconds leave out those calls — their latency is in the call log)."""
    write_json(out, {"runs": [str(r) for r in runs], "attempts": attempts, "complete": complete,
                     "summary": summary(rows, attempts), "rows": rows})


def finished_rows(out: Path | None, runs: list[Path], attempts: int) -> list[dict[str, Any]]:
    """The rows of an earlier, interrupted run of the same benchmark at `out` (none if it was another)."""
    if out is None or not out.is_file():
        return []
    prev = json.loads(out.read_text())
    if prev.get("runs") != [str(r) for r in runs] or prev.get("attempts") != attempts:
        raise SystemExit(f"error: {out} holds results of other runs or attempts; choose another --out")
    return list(prev["rows"])


if __name__ == "__main__":
    raise SystemExit(main())
