"""One Table 1 cell's record (`docs/results/<table>/<method>_seed<k>.json`) from its run directory and its
suite evaluation, and the provenance every record and table page carries. Pure reads of a finished run;
`experiments.table.table1` runs the cells and writes the records.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coda_policy.pretrained import sha256

if TYPE_CHECKING:
    from agents.config import RunConfig

ROOT = Path(__file__).resolve().parents[2]
# where the harness and the studies write results unless `--results` names a place; the committed results
# (docs/results) are written only when named
RUNS_RESULTS = ROOT / "runs" / "results"
FORK_NOTE = "table_fork.json"  # in a cell forked from another table's cell (`experiments.table.fork`)


def metrics_rows(run: Path) -> list[dict[str, Any]]:
    path = run / "metrics.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def integrity(cfg: RunConfig, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Fallbacks and unusable answers over the cell's rounds; a diagnosis-driven cell whose slots mostly fell
    back to the seed distribution is flagged (it ran as the seed baseline, not as itself)."""
    rounds = [r for r in rows if r["round"] > 0]
    slots = sum(r.get("generation", {}).get("slots", 0) for r in rounds)
    fell = sum(r.get("fallbacks", {}).get("slots", 0) for r in rounds)
    reasons: dict[str, int] = defaultdict(int)
    unusable: dict[str, int] = defaultdict(int)
    for r in rounds:
        for k, v in r.get("fallbacks", {}).get("reasons", {}).items():
            reasons[k] += v
        for k, v in r.get("unusable_answers", {}).items():
            unusable[k] += v
    flagged = cfg.method_config.diagnose and slots > 0 and fell / slots > 0.5
    return {"slots": slots, "fallback_slots": fell, "fallback_reasons": dict(reasons),
            "unusable_answers": dict(unusable), "flagged": flagged}


def _memory_row(row: dict[str, Any]) -> dict[str, Any]:
    critic = row.get("critic") or {}
    return {**critic.get("memory", {}), "validated": critic.get("verdicts", {}).get("validated", 0),
            "arms": row.get("generation", {}).get("arms", [])}


# an evaluation's key for its episodes' outcomes (`cells.evaluate`); a record's is "scenes"
SCENES = "_scenes"


def verdicts(run: Path) -> dict[str, int] | None:
    """How verification judged the run's diagnoses (`diagnoses/round_*/*.json`): each status, and how many
    were inconclusive because the control batch failed at its ceiling (no room to show an increase); None
    for a run that diagnoses nothing."""
    files = sorted((run / "diagnoses").glob("round_*/*.json"))
    if not files:
        return None
    out = {"validated": 0, "refuted": 0, "inconclusive": 0, "unverified": 0, "control_at_ceiling": 0}
    for path in files:
        v = json.loads(path.read_text()).get("verdict") or {}
        out[v.get("status", "unverified")] += 1
        out["control_at_ceiling"] += "control at ceiling" in v.get("reason", "")
    return out


def compiled_programs(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The training programs a run compiled from validated modes, with their agreement with the round's
    expert demos (and after refinement), from its metrics rows."""
    keep = ("family", "mode", "agreement", "agreement_refined", "fallback")
    return [{"round": r["round"], **{k: c[k] for k in keep if k in c}}
            for r in rows if r["round"] > 0 for c in (r.get("critic") or {}).get("compiled", [])]


def forked_from(run: Path) -> dict[str, Any] | None:
    """Where a cell of an extending table was forked from (`experiments.table.fork`), else None."""
    note = run / FORK_NOTE
    return json.loads(note.read_text()) if note.exists() else None


def row_name(cfg: RunConfig) -> str:
    """The table row of a cell: its method, marked with the LLM backend when a diagnosis-driven method ran
    with an LLM critic and writers (`coda+local`) — a row of its own beside the rules row, on the same
    bootstraps — and with its background when a method that generates arms lays them on domain
    randomization (`coda@dr`, `RunConfig.background`). A method without a critic is the same row whichever
    critic the table was asked for, one without generated arms whichever background."""
    llm_row = cfg.critic_kind != "rules" and cfg.method_config.diagnose
    name = f"{cfg.method}+{cfg.llm}" if llm_row else cfg.method
    generated = cfg.method_config.generator not in ("seed", "domain_randomization")
    return f"{name}@{cfg.background}" if generated and cfg.background != "seed" else name


def cell_record(cfg: RunConfig, run: Path, evals: dict[str, Any], wall_s: float, boot_hash: str | None,
                preset_name: str) -> dict[str, Any]:
    rows = metrics_rows(run)
    final = evals[f"round_{cfg.rounds:02d}"]
    own = [r.get("held_after") for r in rows if r["round"] > 0 and r.get("held_after") is not None]
    accepted = {r["round"]: r.get("generation", {}).get("accepted", {}) for r in rows if r["round"] > 0}
    policy0 = run / "policy" / "round_00.safetensors"
    return {
        "method": row_name(cfg), "seed": cfg.seed, "preset": preset_name, "families": list(cfg.families),
        "critic": cfg.critic_kind if cfg.method_config.diagnose else None, "llm": cfg.llm,
        "ood": {f: final[f]["ood"] for f in cfg.families},
        "ood_single": {f: final[f]["ood_single"] for f in cfg.families},
        "instruction": {f: final[f]["instruction"] for f in cfg.families},
        "id": {f: final[f]["id"] for f in cfg.families},
        # each final episode's outcome, per split and family in suite order (`cells.scene_outcomes`)
        "scenes": final.get(SCENES),
        # success on the generator's own distribution: the arms' measurement scenes after the last update
        "in": 100.0 * own[-1] if own else None,
        "curve": {k: {f: v[f] for f in cfg.families} for k, v in sorted(evals.items())},
        "accepted_per_round": accepted,
        # memory and the critic per round (diagnosis-driven methods): what the memory plot reads
        "memory_per_round": {r["round"]: _memory_row(r) for r in rows if r["round"] > 0},
        # training programs compiled from validated modes: agreement with the round's expert demos
        "compiled": compiled_programs(rows),
        # the run's verdicts (diagnosis-driven methods), with the inconclusive ones whose control was at its
        # ceiling
        "verdicts": verdicts(run),
        "shaping": cfg.method_config.shaping if cfg.method_config.update == "aw" else None,
        "integrity": integrity(cfg, rows),
        "bootstrap_sha256": sha256(policy0) if policy0.exists() else None,
        "bootstrap_shared": boot_hash is not None and sha256(policy0) == boot_hash,
        "wall_s": round(wall_s, 1), "rounds_wall_s": rounds_wall_s(rows),
        "run_dir": str(run), "code_commit": provenance("")["commit"],
        # a cell of an extending table: the cell it was forked from (its rounds, and their wall time, are
        # that cell's; `wall_s` counts the rounds added here)
        "forked_from": forked_from(run),
    }


def rounds_wall_s(rows: list[dict[str, Any]]) -> float | None:
    """The wall seconds a run's rounds took by its own metrics (each round's `cost_total`), every
    invocation's: what a cell resumed after a kill took, where the harness saw only its last invocation.
    A forked cell's rows are its own and its base's; None when the rows say nothing."""
    walls = [r.get("cost_total", {}).get("wall_s") for r in rows]
    return round(sum(w for w in walls if w is not None), 1) if any(w is not None for w in walls) else None


def oracle_name(source: str, budget: int, replay: bool, seed: int) -> str:
    """The record name of one oracle cell of `studies.ceiling` (`<source>_b<budget>[_replay]_seed<k>`)."""
    return f"{source}_b{budget}{'_replay' if replay else ''}_seed{seed}"


def oracle_folder(table: str) -> str:
    """Where a table size's oracle records go: `ceiling/` for Table 1's default, `ceiling_<table>/` else."""
    return "ceiling" if table == "default" else f"ceiling_{table}"


def results_dir(given: Path | None, commit: bool = False) -> Path:
    """`--results` as given, else `RUNS_RESULTS`; `--commit` without `--results` is a ValueError (what is
    committed is written only where the command line says)."""
    if given is not None:
        return given
    if commit:
        raise ValueError("--commit commits the results where --results puts them: name it "
                         "(e.g. --results docs/results); the default, runs/results, is not committed")
    return RUNS_RESULTS


def provenance(command: str) -> dict[str, Any]:
    from importlib.metadata import version

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True, check=False).stdout.strip() or "unknown"
    versions = ", ".join(f"{p} {version(p)}" for p in ("mujoco", "torch", "langgraph", "chromadb"))
    return {"command": command, "commit": commit, "versions": versions}


def table_files(results: Path, table: str) -> list[Path]:
    """What a rebuilt table consists of: its JSON, its markdown and the page and plots the markdown shows."""
    files = [results / f"{table}.json", results / f"{table}.md", results / f"{table}.html",
             *sorted(results.glob(f"{table}_*.png"))]
    return [f for f in files if f.exists()]


def commit_files(paths: Sequence[Path], message: str, tries: int = 5) -> None:
    """`git add` and `git commit` of exactly `paths`; a commit with nothing new passes, and a busy index
    (another git command holding `index.lock`) is waited for, a few seconds at most, before the error is
    raised."""
    names = [str(p) for p in paths]
    if not names:  # `git commit -- ` with no path would commit whatever else is staged
        return
    for cmd in (["git", "add", *names], ["git", "commit", "-q", "-m", message, "--", *names]):
        for k in range(tries):
            done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
            said = done.stdout + done.stderr
            # nothing new: git says "nothing to commit", or "no changes added" when other files are modified
            unchanged = "nothing" in said or "no changes added" in said
            if done.returncode == 0 or (cmd[1] == "commit" and unchanged):
                break
            if "index.lock" not in said or k == tries - 1:
                raise RuntimeError(f"{' '.join(cmd[:2])} failed: {said.strip()}")
            time.sleep(1 + k)
