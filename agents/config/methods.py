"""The methods — CoDA and every baseline of DESIGN §6 — as `MethodConfig`s of the same graph, registered by
name in `METHODS`; the ablation variants are `dataclasses.replace`s of the paper's CoDA, each beside the
FINDINGS entry that measured it.

Every method spends the same generation budget (`RunConfig.budget`); methods differ only in how arms and
programs are chosen, whether the critic runs, whether memory persists, and how the policy is updated.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from common.registry import Registry

Generator = Literal["seed", "domain_randomization", "uniform", "scalar", "learnability", "critic", "memory"]
Update = Literal["none", "sft", "aw"]


@dataclass(frozen=True, kw_only=True)
class MethodConfig:
    """What one method does inside the shared graph."""

    # how arms and their generation programs are chosen each round:
    # "seed" the seed programs; "domain_randomization" seed programs with widened ranges; "uniform" random
    # single-factor variants; "scalar" variants steered by success rates only; "learnability" variants kept
    # and given budget by p(1 − p) of their measured success (no critic); "critic" the last round's
    # validated diagnoses (nothing kept longer); "memory" difficulty modes from memory, learning progress
    generator: Generator
    # run the critic on failed rollouts and verify its diagnoses (diagnose → verify → remember → compile)
    diagnose: bool = False
    # keep evidence, modes and programs in the Chroma memory across rounds
    memory: bool = False
    # policy update per round: none, SFT on the round's expert demos, or advantage-weighted (critic) update
    update: Update = "aw"
    # reward shaping of the advantage-weighted update (`coda_policy.shaping`): "text2potential" (the
    # training program's staged potential), "sparse" (the verifier only), "task_potential" (a potential
    # from the task description alone), "dense_reward" (the program's stages as a free-form dense reward,
    # not a potential difference), "frozen_actor" (Text2potential-shaped critic, no policy update: the
    # critic picks among `LearnConfig.select_k` sampled chunks at deployment)
    shaping: Literal["text2potential", "text2potential_unit", "sparse", "task_potential",
                     "dense_reward", "frozen_actor"] = "text2potential"
    # refine a compiled training program that agrees with the expert demos below the threshold
    # (`CompileConfig.agreement_threshold`); off, the writer's checked program is used as written
    refine: bool = True
    # start from SFT on seed demonstrations (False: the initial policy as given, e.g. zero-shot)
    bootstrap_sft: bool = True
    # rewrite a failing program with the writer agent (False: retry the same program with new seeds)
    writer: bool = False
    # diagnosis-driven generators (critic, memory) keep an arm on the seed distribution each round; off,
    # the whole budget goes to modes and exploration variants, as `uniform` spends all of its on variants
    # (the seed distribution's demonstrations are still replayed, `LearnConfig.replay`; FINDINGS #22)
    seed_arm: bool = True
    # The loop's own links, each replaceable for an ablation (issue #39; `python -m experiments.table.links`):
    # who names the failing factor — the critic, or a factor of the failing scene drawn at random
    diagnoser: Literal["critic", "random"] = "critic"
    # verify each diagnosis against a control batch (False: every diagnosis is accepted unverified)
    verify: bool = True
    # how the budget is split over the arms: by learning progress (`RunConfig.allocation`) or evenly
    allocation: Literal["progress", "uniform"] = "progress"
    # a composite arm of every stored mode's edits (with `RunConfig.compose`); False: none
    compose: bool = True

    def __post_init__(self) -> None:
        if self.memory and not self.diagnose:
            raise ValueError("memory stores validated diagnoses: it needs diagnose=True")
        if self.generator in ("critic", "memory") and not self.diagnose:
            raise ValueError(f"generator {self.generator!r} is driven by diagnoses: it needs diagnose=True")
        if (self.diagnoser != "critic" or not self.verify) and not self.diagnose:
            raise ValueError("diagnoser and verify are links of the diagnosis loop: they need diagnose=True")
        if not self.seed_arm and self.generator not in ("critic", "memory"):
            raise ValueError(f"seed_arm=False is an option of the diagnosis-driven generators (critic, "
                             f"memory), not of {self.generator!r}")


METHODS: Registry[MethodConfig] = Registry("method")
METHODS.register("zero_shot", MethodConfig(generator="seed", update="none", bootstrap_sft=False))
METHODS.register("sft", MethodConfig(generator="seed", update="sft"))
METHODS.register("domain_randomization", MethodConfig(generator="domain_randomization", update="sft"))
METHODS.register("uniform", MethodConfig(generator="uniform", update="sft"))
METHODS.register("scalar", MethodConfig(generator="scalar", update="aw", shaping="sparse"))
# The literature's strongest simple method ("No Regrets", Rutherford et al., NeurIPS 2024): uniform's
# variants and update, its arms kept and given budget by learnability p(1 − p); no critic, no memory.
METHODS.register("learnability", MethodConfig(generator="learnability", update="sft"))
# the critic without memory keeps the Text2potential update it was measured with (Table 1's records): its
# memory-only contrast is `coda_text2potential`, not `coda`
METHODS.register("critic_no_memory", MethodConfig(generator="critic", diagnose=True, writer=True,
                                                  shaping="text2potential"))
# The paper's CoDA: its advantage-weighted update shaped by the compiled training program's staged potential.
METHODS.register("coda_text2potential", MethodConfig(generator="memory", diagnose=True, memory=True,
                                                     writer=True, shaping="text2potential"))
# CoDA as this project runs it: the same loop with the sparse verifier as the update's reward. Measured the
# better design (FINDINGS #26-#28: Text2potential − sparse −3.0 ± 1.2 pp average OOD after two rounds, five
# seeds; −1.5 ± 1.7 after three), so the rule "keep the better design" makes it the default. The
# training program is still written, refined and kept in procedural memory (the report shows it; the
# `coda_text2potential` method uses it) — the loop is unchanged up to the update's reward.
METHODS.register("coda", MethodConfig(generator="memory", diagnose=True, memory=True, writer=True,
                                      shaping="sparse"))
# The Text2potential ablations (`python -m experiments.table.ablations`): the paper's CoDA with another
# training signal (each row's records were computed from this configuration; `coda` is its sparse row).
_T2P = METHODS.get("coda_text2potential")
METHODS.register("coda_task_potential", dataclasses.replace(_T2P, shaping="task_potential"))
METHODS.register("coda_dense_reward", dataclasses.replace(_T2P, shaping="dense_reward"))
METHODS.register("coda_no_refine", dataclasses.replace(_T2P, refine=False))
METHODS.register("coda_unit", dataclasses.replace(_T2P, shaping="text2potential_unit"))  # βΦ ∈ [0, 1]
# no policy update: the round's critic (Text2potential-shaped) picks the best of K sampled chunks
METHODS.register("coda_frozen_actor", dataclasses.replace(_T2P, shaping="frozen_actor"))
# CoDA whose budget never returns to the seed distribution (FINDINGS #22), measured beside the
# Text2potential row.
METHODS.register("coda_no_seed_arm", dataclasses.replace(_T2P, seed_arm=False))
# The attribution pair (FINDINGS #25): uniform (SFT) is the one row CoDA (weighted update) is reliably below;
# these two swap the update between them, so scenes and update are measured apart.
METHODS.register("coda_sft", dataclasses.replace(_T2P, update="sft"))
METHODS.register("uniform_aw", MethodConfig(generator="uniform", update="aw"))
# The ablations of the loop's own links (issue #39), each CoDA (`coda`) with one link replaced, at the same
# budget: the critic by a random factor of the failing scene, verification by accepting every diagnosis,
# memory by none (the last round's validated diagnoses only: the `critic` generator), the learning-progress
# allocation by an even split, the composite of modes by none.
_CODA = METHODS.get("coda")
METHODS.register("coda_random_critic", dataclasses.replace(_CODA, diagnoser="random"))
METHODS.register("coda_no_verify", dataclasses.replace(_CODA, verify=False))
METHODS.register("coda_no_memory", dataclasses.replace(_CODA, generator="critic", memory=False))
METHODS.register("coda_even_allocation", dataclasses.replace(_CODA, allocation="uniform"))
METHODS.register("coda_no_compose", dataclasses.replace(_CODA, compose=False))
