"""The sizes of Table 1 (`TablePreset`, registered in `TABLES`): which `agents.run` preset each cell starts
from, what the table changes in it, how many seeds and frozen-suite scenes, and whether the table extends
another with more rounds (`experiments.table.fork`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from agents.config import PRESETS, CriticConfig
from agents.config.run_config import room_for_space
from common.registry import Registry


@dataclass(frozen=True, kw_only=True)
class TablePreset:
    """One size of the table."""

    # the agents.run preset every cell starts from, and the fields this table changes in it
    run_preset: str
    overrides: dict[str, Any] = field(default_factory=dict)
    # default seeds (cells per method)
    seeds: int = 3
    # the frozen suite set the cells are evaluated on (`experiments.table.suites.SETS`)
    suite: str = "frozen10"
    # frozen-suite scenes per family and split in the evaluation (None: all)
    per_split: int | None = None
    # the split every round's policy is evaluated on (the curves); the final policy sees every split
    curve_split: str = "ood"
    # scenes per family of the curve split for the rounds before the last (None: `per_split`)
    curve_per_split: int | None = None
    # another table whose kept bootstrap policies the seeds start from (their records stay this table's;
    # None: this table's own, trained when missing)
    bootstraps: str | None = None
    # name of the table's files under the results directory
    table: str = "table1"
    # the cells' run-config label is "<run_preset>+<label>" (default: the table's name); a table that shares
    # another's cells (the ablations share Table 1's CoDA cells and bootstraps) takes that table's label, and
    # reads and keeps each seed's bootstrap (record and policy) in that table's folder (`boot_home`)
    label: str | None = None
    # a table preset whose cells these are with more rounds: a cell starts as a fork of that table's
    # finished run at its last round (`extended_cell`), so the shared rounds are computed once
    extends: str | None = None


TABLES: Registry[TablePreset] = Registry("table preset")
# The harness end to end in a few minutes on 2 cores: one family, one round, one scene per split.
TABLES.register("smoke", TablePreset(run_preset="smoke", overrides={"rounds": 1}, seeds=1, per_split=1,
                                     table="table1_smoke"))
# The table on the paper's four families, sized for ≤ 3 h of compute on 2 CPU cores over several sittings.
# Variants move three factors at once (every method that has variants: FINDINGS #5 found that placing
# scenes where many factors are out of distribution is what lifts OOD success at this budget; three of a
# family's ~10 movable factors, so the critic can still tell which one failed), and the critic diagnoses
# up to eight failures a round (two a family; verification episodes are measurement, not budget), each
# under the failing scene's other OOD factors (`CriticConfig.ood_context`: with several factors moved, one
# factor moved alone on the seed distribution was refuted 12 times of 16, FINDINGS #8). Set by reasoning
# and the loop's own rollouts, never on the frozen suites.
TABLES.register("default", TablePreset(
    run_preset="default", seeds=3, per_split=10,
    overrides={"llm": "rules", "background": "seed", "rounds": 2, "budget": 6, "max_arms": 3, "eval_id": 2,
               "eval_ood": 2, "thumbnails": False, "variant_factors": 3, "diagnose_max": 8,
               "critic": CriticConfig(retries=0, allow_ood=True, ood_context=True)}))
# The two diagnostic presets of FINDINGS #9-#10 (`default_demo_update`, `default_aw_step`) measured the
# weighted update as it was before FINDINGS #11, while a bug drew its "rollout" half from every chunk; they
# are gone with that update, and their cells are kept in docs/results/findings/table1_mask_bug/.
# The paper's shape: five rounds at budget 8 (many hours on 2 cores).
# Table 1's `default` with a third round, so memory's modes (founded in rounds 1–2) have a round to steer:
# each cell forks Table 1's finished cell after round 2 (FINDINGS #12: the two-round table measures the
# update and the exploration, not the memory). Its bootstraps are Table 1's.
TABLES.register("rounds3", dataclasses.replace(
    TABLES.get("default"), table="table1_rounds3", label="table1", extends="default",
    overrides={**TABLES.get("default").overrides, "rounds": 3}))
# Table 1's `default` cells run again from its kept bootstraps, all at one commit, each timed in CPU
# seconds (`run_cpu_s`): what the preset costs (#10: ≤ 3 h on 2 cores). Run with its own --out.
TABLES.register("timed", dataclasses.replace(TABLES.get("default"), table="table1_timed", label="table1"))
# Issue #39's Table 1: the core space, three rounds, five seeds, evaluated on the enlarged frozen suites (50
# scenes per family and split: 200 OOD scenes a cell, against 40 before); each round's curve on the first
# 10 OOD scenes per family. The seeds start from Table 1's kept bootstraps (the same SFT recipe), evaluated
# again on these suites. Sized before any of its numbers were seen; the never-read `recheck50` set is kept
# for re-checking a choice made after.
TABLES.register("core", dataclasses.replace(
    TABLES.get("default"), table="table1_core", seeds=5, suite="frozen50", per_split=50, curve_per_split=10,
    bootstraps="table1", overrides={**TABLES.get("default").overrides, "rounds": 3}))
# The same table in the extended space (issue #39 item 4: the families' factors and `sim.extension`'s, about
# three times as many): every generator draws from it, the suites are `extended50b`. The extension's seed
# distribution is the core scene (its factors' ranges are their defaults), so the seeds' demonstrations and
# the `id` split are the core table's kind of scene; its `ood_single` split moves one of 35-41 factors per
# family, its `ood` split every one, nuisance ones included (where the bootstrap is at the floor: FINDINGS
# #47). Each seed starts from the core table's bootstrap with its object-token bound raised to the
# extension's (`room_for_space`: max_objects 16 → 20, a bound, not a weight), kept and recorded as this
# table's own. With `core`, the two points of `python -m experiments.factor_scaling`.
_core_learn = PRESETS.get(TABLES.get("core").run_preset).learn
TABLES.register("extended", dataclasses.replace(
    TABLES.get("core"), table="table1_extended", suite="extended50b", bootstraps="table1_core",
    overrides={**TABLES.get("core").overrides, "space": "extended",
               "learn": dataclasses.replace(_core_learn,
                                            policy=room_for_space(_core_learn.policy, "extended"))}))
# The core table's rows with every generated arm laid on domain randomization's program
# (`RunConfig.background` "dr"; rows `coda@dr`, `uniform@dr`, ...): they share the core table's bootstraps
# (its folder keeps their records) and pair with its rows by seed — does targeting add to the strongest
# simple generator? Chosen on development scenes (`studies.knob_dev --knob background=seed,dr`, FINDINGS #49).
TABLES.register("core_dr", dataclasses.replace(
    TABLES.get("core"), table="table1_core_dr", label="table1_core",
    overrides={**TABLES.get("core").overrides, "background": "dr"}))
TABLES.register("full", TablePreset(run_preset="default", seeds=3, per_split=10, table="table1_full",
                                    overrides={"llm": "rules", "background": "seed", "rounds": 5,
                                               "thumbnails": False}))


def lender(table: str) -> TablePreset:
    """The table preset whose files are named `table` (the one a `TablePreset.bootstraps` names)."""
    for name in TABLES.names():
        p = TABLES.get(name)
        if p.table == table and p.label is None:
            return p
    raise KeyError(f"no table preset writes {table}")
