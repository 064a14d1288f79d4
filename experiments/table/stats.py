"""A table of Table 1-style cells, as numbers and as Markdown: mean ± standard error over seeds, each
method's change against its seed's bootstrap, the share of the budget spent on difficulty modes. Pure
functions of the cell records (`experiments.table.record.cell_record`); `experiments.table.table1` and
`experiments.table.ablations` write their tables with them.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from coda_policy.pretrained import canonical_sha256

# the methods of the paper's Table 1, in the table's row order; the paper's CoDA (`coda_text2potential`)
# beside ours (`coda`: the same loop, the sparse verifier as the update's reward, FINDINGS #28)
TABLE_METHODS = ("zero_shot", "sft", "domain_randomization", "uniform", "scalar", "critic_no_memory",
                 "coda_text2potential", "coda")
# the order of a table's rows: Table 1's methods, with the learnability baseline ("No Regrets"' p(1 − p))
# beside the other generators that no critic steers; any other method after them, by name
ROW_ORDER = ("zero_shot", "sft", "domain_randomization", "uniform", "learnability", "scalar",
             "critic_no_memory", "coda_text2potential", "coda")


def avg_ood(cell: dict[str, Any]) -> float:
    """A cell's average out-of-distribution success over its families (%)."""
    return sum(cell["ood"].values()) / len(cell["ood"])


def mean_se(xs: Sequence[float]) -> dict[str, float] | None:
    """`{"mean", "se"}` of `xs` (standard error over them), rounded; None for no values."""
    if not xs:
        return None
    n = len(xs)
    mean = sum(xs) / n
    se = (sum((x - mean) ** 2 for x in xs) / (n - 1)) ** 0.5 / n**0.5 if n > 1 else 0.0
    return {"mean": round(mean, 2), "se": round(se, 2)}


def slot_counts(arms: Sequence[str]) -> list[tuple[str, int]]:
    """(mode, training scenes) of a round's recorded slots, "<mode>|<family>×<n>" each (the `arms` the
    report node writes into a round's metrics, `generation.arms`)."""
    return [(a.split("|")[0], int(a.rsplit("×", 1)[1])) for a in arms]


def mode_budget_share(cell: dict[str, Any]) -> float | None:
    """% of the cell's training scenes (over its rounds) allotted to difficulty modes — arms that are neither
    the seed distribution, domain randomization nor an exploration variant (`var_*`); None when the cell did
    not record its arms."""
    arms = [a for r in cell.get("memory_per_round", {}).values() for a in r.get("arms", [])]
    if not arms:
        return None
    counts = slot_counts(arms)
    total = sum(n for _, n in counts)
    on_modes = sum(n for m, n in counts if m not in ("seed", "dr") and not m.startswith("var_"))
    return 100.0 * on_modes / total if total else None


def change_vs_bootstrap(cells: Sequence[dict[str, Any]], boots: dict[int, dict[str, Any]], split: str
            ) -> dict[str, float] | None:
    """Mean ± SE over cells of (final − shared bootstrap) success on `split`, averaged over families;
    only cells that started from the recorded bootstrap of their seed."""
    diffs = []
    for c in cells:
        b = boots.get(c["seed"])
        if b is None or not c.get("bootstrap_shared"):  # only cells that started from the seed's bootstrap
            continue
        # a record of before the safetensors conversion names the .pt's hash (`canonical_sha256`)
        if canonical_sha256(b["bootstrap_sha256"]) != canonical_sha256(c.get("bootstrap_sha256")):
            continue
        fams = c["families"]
        diffs.append(sum(c[split][f] - b[split][f] for f in fams) / len(fams))
    return mean_se(diffs)


def aggregate(cells: Sequence[dict[str, Any]], preset_name: str,
              bootstraps: dict[int, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The table (success in %, mean ± standard error over seeds):
    `{"preset", "seeds", "methods": {m: {"avg_ood", "in", "ood": {family: ·}, "ood_single": {family: ·},
    "instruction": {family: ·}, "cells", ...}}, "equal_budget"}`, each `·` being `{"mean", "se"}`; with the
    seeds' bootstrap records, also each method's change against its bootstrap (`id_change`: forgetting,
    `ood_change`: gain), in pp averaged over families."""
    boots = bootstraps or {}
    by_method: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in cells:
        by_method[c["method"]].append(c)
    methods = {}
    for m in [x for x in ROW_ORDER if x in by_method] + sorted(set(by_method) - set(ROW_ORDER)):
        cs = sorted(by_method[m], key=lambda c: c["seed"])
        fams = cs[0]["families"]
        entry: dict[str, Any] = {
            "avg_ood": mean_se([avg_ood(c) for c in cs]),
            "in": mean_se([c["in"] for c in cs if c["in"] is not None]) if any(
                c["in"] is not None for c in cs) else None,
        }
        for split in ("ood", "ood_single", "instruction", "id"):
            entry[split] = {f: mean_se([c[split][f] for c in cs]) for f in fams}
        entry["cells"] = len(cs)
        entry["seeds"] = [c["seed"] for c in cs]
        entry["flagged_cells"] = sum(c["integrity"]["flagged"] for c in cs)
        entry["fallback_slots"] = sum(c["integrity"]["fallback_slots"] for c in cs)
        entry["slots"] = sum(c["integrity"].get("slots", 0) for c in cs)
        unusable: dict[str, int] = defaultdict(int)
        for c in cs:
            for kind, n in c["integrity"].get("unusable_answers", {}).items():
                unusable[kind] += n
        entry["unusable_answers"] = dict(sorted(unusable.items()))
        entry["wall_s"] = round(sum(c["wall_s"] for c in cs), 1)
        entry["critic"] = cs[0]["critic"]
        shares = [x for x in map(mode_budget_share, cs) if x is not None]
        entry["mode_budget_pct"] = mean_se(shares) if cs[0]["critic"] else None
        entry["id_change"] = change_vs_bootstrap(cs, boots, "id")
        entry["ood_change"] = change_vs_bootstrap(cs, boots, "ood")
        methods[m] = entry
    budgets = {json.dumps(c["accepted_per_round"], sort_keys=True) for c in cells
               if c["method"] != "zero_shot"}
    return {"preset": preset_name, "seeds": sorted({c["seed"] for c in cells}), "methods": methods,
            "equal_budget": len(budgets) <= 1, "compute": compute(cells, boots),
            # the suite sets the cells were evaluated on (a record from before the sets names none: frozen10)
            "suites": sorted({c.get("suite", "frozen10") for c in cells})}


def compute(cells: Sequence[dict[str, Any]], boots: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Seconds the table's records say it took: the cells' runs (`wall_s`, or the sum of the rounds' own
    wall seconds where larger: a cell resumed after a kill; a forked cell counts its added rounds), their
    suite evaluations (`eval_s`) and the seeds' bootstraps (run and evaluation), with how many records
    predate the evaluation timing (their share is missing from the sum, not zero)."""
    timed = [c for c in cells if "eval_s" in c]
    boot_timed = [b for b in boots.values() if "wall_s" in b]
    cpu = [c["run_cpu_s"] for c in cells if "run_cpu_s" in c]
    boot_cpu = [b["run_cpu_s"] for b in boots.values() if "run_cpu_s" in b]
    runs = [max(c["wall_s"], 0.0 if c.get("forked_from") else c.get("rounds_wall_s") or 0.0) for c in cells]
    return {"run_s": round(sum(runs), 1),
            "eval_s": round(sum(c["eval_s"] for c in timed), 1),
            "untimed_eval_cells": len(cells) - len(timed),
            "bootstrap_s": round(sum(b["wall_s"] + b["eval_s"] for b in boot_timed), 1),
            "untimed_bootstraps": len(boots) - len(boot_timed),
            # CPU seconds of the cells' `agents.run` processes (unaffected by other jobs on the cores; like
            # `wall_s`, a cell resumed after a kill counts only its last invocation)
            "run_cpu_s": round(sum(cpu), 1), "cpu_timed_cells": len(cpu),
            "bootstrap_cpu_s": round(sum(boot_cpu), 1), "cpu_timed_bootstraps": len(boot_cpu)}


def compute_note(table: dict[str, Any]) -> str:
    """The table page's line on its compute (`compute`); empty for a table written before it was kept."""
    c = table.get("compute")
    if not c:
        return ""
    total = c["run_s"] + c["eval_s"] + c["bootstrap_s"]
    missing = [f"{n} {what}" for n, what in ((c["untimed_eval_cells"], "cells' suite evaluations"),
                                             (c["untimed_bootstraps"], "bootstraps")) if n]
    return (f"Compute recorded: {total:,.0f} s ({total / 3600:.2f} h) — cell runs {c['run_s']:,.0f} s, their "
            f"suite evaluations {c['eval_s']:,.0f} s, bootstraps {c['bootstrap_s']:,.0f} s"
            + (f"; not timed (recorded before timing was added): {', '.join(missing)}." if missing else ".")
            + (f" CPU of the cell runs' processes: {c['run_cpu_s']:,.0f} s over {c['cpu_timed_cells']} cells "
               f"({c['run_cpu_s'] / 7200:.2f} h of 2 cores)." if c.get("cpu_timed_cells") else "")
            + (f" CPU of the bootstrap runs' processes: {c['bootstrap_cpu_s']:,.0f} s over "
               f"{c['cpu_timed_bootstraps']} bootstraps." if c.get("cpu_timed_bootstraps") else ""))


# `<results>/<table>/bootstrap_cost/seed<k>.json`: a table's bootstraps trained again and timed
# (`studies.bootstrap_cost`), for a table whose cells start from another table's kept bootstraps
BOOTSTRAP_COST = "bootstrap_cost"


def load_bootstrap_costs(results: Path, table: str) -> dict[int, dict[str, Any]]:
    """The seeds' bootstrap cost records of a table (`BOOTSTRAP_COST`), by seed."""
    recs = [json.loads(p.read_text()) for p in sorted((results / table / BOOTSTRAP_COST).glob("seed*.json"))]
    return {r["seed"]: r for r in recs}


def load_bootstraps(results: Path, table: str) -> dict[int, dict[str, Any]]:
    """The seeds' bootstrap records of a table (`<results>/<table>/bootstrap/seed<k>.json`)."""
    recs = [json.loads(p.read_text()) for p in sorted((results / table / "bootstrap").glob("seed*.json"))]
    return {r["seed"]: r for r in recs}


def ms(x: dict[str, float] | None) -> str:
    """A `mean_se` cell of a Markdown table."""
    return "–" if x is None else f"{x['mean']:.1f} ± {x['se']:.1f}"


def delta(x: dict[str, float] | None) -> str:
    """A signed `mean_se` cell (a change)."""
    return "–" if x is None else f"{x['mean']:+.1f} ± {x['se']:.1f}"


def uneven_seeds(table: dict[str, Any]) -> list[str]:
    """A warning when rows average different seeds (a table filling up seed by seed): such rows compare
    different bootstraps; the paired comparison is `python -m experiments.table.table_power`."""
    seeds = {m: tuple(e.get("seeds", ())) for m, e in table["methods"].items()}
    if len(set(seeds.values())) <= 1:
        return []
    rows = "; ".join(f"{m} {list(s)}" for m, s in seeds.items())
    return [f"**Rows average different seeds** ({rows}): compare rows on common seeds, paired, with "
            "`python -m experiments.table.table_power`."]


def llm_integrity(table: dict[str, Any]) -> list[str]:
    """A note on the rows run with an LLM critic and writers (`coda+local`): the generation slots that fell
    back to the seed distribution, and the model's unusable answers by prompt and problem."""
    rows = []
    for m, e in table["methods"].items():
        if "+" not in m:
            continue
        bad = ", ".join(f"{k} {n}" for k, n in e.get("unusable_answers", {}).items()) or "none"
        rows.append(f"`{m}` {e['fallback_slots']} of {e.get('slots', 0)} slots fell back, unusable answers: "
                    f"{bad}")
    if not rows:
        return []
    return [f"**LLM rows** (critic and writers by the model named after `+`): {'; '.join(rows)}."]


def suite_folder(name: str) -> str:
    from experiments.table.suites import suite_set

    return suite_set(name).folder


def markdown(table: dict[str, Any], meta: dict[str, Any]) -> str:
    """The table as Markdown, with the command and provenance."""
    fams = next(iter(table["methods"].values()))["ood"].keys() if table["methods"] else []

    head = ["method", *[f"OOD {f}" for f in fams], "avg OOD", "In", "ID", "OOD-single", "instruction",
            "ID Δ vs bootstrap", "OOD Δ vs bootstrap", "budget on modes %", "cells"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for m, e in table["methods"].items():
        single = mean_se([v["mean"] for v in e["ood_single"].values()])
        instr = mean_se([v["mean"] for v in e["instruction"].values()])
        ident = mean_se([v["mean"] for v in e["id"].values()])
        flag = f" ⚠ {e['flagged_cells']} flagged" if e["flagged_cells"] else ""
        lines.append("| " + " | ".join([m, *[ms(e["ood"][f]) for f in fams], ms(e["avg_ood"]), ms(e["in"]),
                                        f"{ident['mean']:.1f}", f"{single['mean']:.1f}",
                                        f"{instr['mean']:.1f}", delta(e.get("id_change")),
                                        delta(e.get("ood_change")), ms(e.get("mode_budget_pct")),
                                        f"{e['cells']}{flag}"]) + " |")
    notes = [
        f"Preset `{table['preset']}`, seeds {table['seeds']}; success in %, mean ± standard error over seeds "
        "(ID, OOD-single and instruction: mean over families). Frozen suites: "
        + ", ".join(f"`{s}` (`experiments/table/{suite_folder(s)}/`)"
                    for s in table.get("suites", ["frozen10"])) + ".",
        "Δ vs bootstrap: the final policy minus the seed's shared bootstrap policy on the same frozen "
        "split, in pp averaged over families (ID Δ < 0 is forgetting). Budget on modes: the share of "
        "training scenes allotted to validated difficulty modes rather than the seed distribution or "
        "exploration variants.",
        f"Equal generation budget across methods (accepted scenes per family per round): "
        f"{'yes' if table['equal_budget'] else 'NO'}.",
        *uneven_seeds(table),
        *llm_integrity(table),
        *([note] if (note := compute_note(table)) else []),
        f"Command: `{meta['command']}` · cells computed at commit(s) {', '.join(meta['cell_commits'])} · "
        f"table written at {meta['commit']} · {meta['versions']}",
    ]
    return "\n".join(lines) + "\n\n" + "\n\n".join(notes) + "\n"
