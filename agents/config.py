"""Run configuration of the co-evolution loop: one `RunConfig` per run, named presets (`smoke`, `default`)
and the methods — CoDA and every baseline of DESIGN §6 — as `MethodConfig`s of the same graph.

Every method spends the same generation budget: `budget` accepted training scenes per task family per
round (plus `held` accepted measurement scenes per arm, the same for all). Methods differ only in how arms
and programs are chosen, whether the critic runs, whether memory persists, and how the policy is updated.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from coda_policy.device import check_device_spec
from coda_policy.object_token.configuration_object_token import ObjectTokenConfig
from coda_policy.pi05.configuration_pi05 import Pi05Config
from coda_policy.pretrained import SEED_SFT_4FAM
from common.registry import Registry
from memory.ledger import AllocationConfig
from sim.pool import EXECUTORS

Generator = Literal["seed", "domain_randomization", "uniform", "scalar", "critic", "memory"]
Update = Literal["none", "sft", "aw"]


@dataclass(frozen=True, kw_only=True)
class MethodConfig:
    """What one method does inside the shared graph."""

    # how arms and their generation programs are chosen each round:
    # "seed" the seed programs; "domain_randomization" seed programs with widened ranges; "uniform" random
    # single-factor variants; "scalar" variants steered by success rates only; "critic" the last round's
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

    def __post_init__(self) -> None:
        if self.memory and not self.diagnose:
            raise ValueError("memory stores validated diagnoses: it needs diagnose=True")
        if self.generator in ("critic", "memory") and not self.diagnose:
            raise ValueError(f"generator {self.generator!r} is driven by diagnoses: it needs diagnose=True")
        if not self.seed_arm and self.generator not in ("critic", "memory"):
            raise ValueError(f"seed_arm=False is an option of the diagnosis-driven generators (critic, "
                             f"memory), not of {self.generator!r}")


METHODS: Registry[MethodConfig] = Registry("method")
METHODS.register("zero_shot", MethodConfig(generator="seed", update="none", bootstrap_sft=False))
METHODS.register("sft", MethodConfig(generator="seed", update="sft"))
METHODS.register("domain_randomization", MethodConfig(generator="domain_randomization", update="sft"))
METHODS.register("uniform", MethodConfig(generator="uniform", update="sft"))
METHODS.register("scalar", MethodConfig(generator="scalar", update="aw", shaping="sparse"))
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


@dataclass(frozen=True, kw_only=True)
class LearnConfig:
    """The policy and how it is trained (sizes come from `coda_policy`). Torch threads of the training
    process are the policy's own `torch_threads` (one setting, with the measured reason, for every
    trainer of the policy)."""

    # the policy's own configuration: any registered backend's (`coda_policy.registry`; its `type` names
    # the backend, and a run's config.json builds it back through the registry)
    policy: ObjectTokenConfig | Pi05Config = field(default_factory=ObjectTokenConfig)
    # optimiser steps of the bootstrap SFT on seed demonstrations (0: start from `init_policy` as given)
    sft_steps: int = 2000
    # optimiser steps of a round's SFT fine-tune (methods with update="sft")
    finetune_steps: int = 300
    # chunk critic of the advantage-weighted update: hidden width, optimiser steps, batch size
    critic_hidden: int = 256
    critic_steps: int = 2000
    critic_batch: int = 256
    # advantage-weighted update: optimiser steps, batch size, temperature τ, learning rate. The defaults of
    # this field and the four below were chosen on development scenes, never the frozen suites
    # (`python -m studies.update_dev`, FINDINGS #11): the policy imitates expert chunks only, each
    # weighted by exp(Â/3) of its advantage under the training program's potential (the chunk critic learns
    # from rollouts too), at SFT's step size and schedule. Seed 0 there, 120 scenes per split: dev OOD 30.8 %,
    # the same as SFT's and against 11.7 % for the earlier update (`WEIGHTED_UPDATE_BEFORE`), dev ID 69.2 %
    # against SFT's 75.0 % and the earlier update's 63.3 %
    awr_steps: int = 300
    awr_batch: int = 128
    awr_tau: float = 3.0
    awr_lr: float = 1e-3
    # critics cross-fitted over episodes for the advantages (1 = one critic on everything)
    awr_folds: int = 3
    # the frozen-actor ablation (`shaping` "frozen_actor"): chunks the unchanged actor samples per decision,
    # of which the round's critic keeps the one with the highest Q
    select_k: int = 8
    # share of each weighted-update minibatch drawn from expert demonstrations (the rest from the policy's
    # own rollouts at their advantage weight; 1.0: demonstrations only, rollouts then only teach the critic)
    awr_demo_fraction: float = 1.0
    # the weighted update's learning-rate schedule: "constant", or "cosine" (warm-up then cosine, exactly
    # as a round's SFT fine-tune: `finetune_warmup` of its steps)
    awr_schedule: str = "cosine"
    # divide each weighted-update minibatch's loss by the sum of its weights (Σ w·l / Σ w): the advantages
    # then redistribute emphasis between chunks without changing the step size (`AWRConfig.self_normalize`)
    awr_self_normalize: bool = True
    # which rollout chunks the weighted update imitates: "all", or "success" (successful rollouts only; the
    # chunk critic still fits every chunk). See `AWRConfig.rollouts`
    awr_rollouts: str = "all"
    # share of the weighted update's demonstrations that are the round's own (its training scenes'), the
    # rest the replayed history (`replay`): the round's are repeated to reach it (`agents.graph.nodes.learn.
    # aw_groups`). 0: every demonstration once, so 4 new beside 300 replayed are ~1 % of the update
    round_share: float = 0.0
    # expert chunks start every this many steps of a demonstration
    demo_stride: int = 2
    # train each round on every expert demonstration so far (the bootstrap's and earlier rounds', beside the
    # round's own; in the advantage-weighted update, shaped by their family's seed training program)
    # instead of the round's alone. Fine-tuning on a round's few demonstrations alone forgets: with the
    # same scenes, replay kept held-out ID success 77.5 % against 43.8-68.8 % (studies.ceiling,
    # FINDINGS #5). Every method trains this way; False is the earlier round-only update
    replay: bool = True
    # a checkpoint to start from instead of a fresh network (the "pretrained" policy of zero-shot)
    init_policy: str | None = None
    # where training runs — the bootstrap SFT, each round's update and its chunk critics: cpu, cuda, cuda:N
    # or auto (`coda_policy.device`; checkpoints are CPU tensors whatever the device)
    device: str = "cpu"
    # where the policy acts in rollouts, verification and evaluation episodes (each pool worker holds its
    # own copy there). CPU by default even with a GPU for training: the object-token policy plans one chunk
    # at batch size 1, a few milliseconds on one core (`coda_policy.threads`)
    rollout_device: str = "cpu"

    def __post_init__(self) -> None:
        check_device_spec(self.device)
        check_device_spec(self.rollout_device)
        if not 0.0 <= self.round_share < 1.0:
            raise ValueError(f"learn.round_share must be in [0, 1), got {self.round_share}")


# The weighted update every run used before FINDINGS #11 (half of each minibatch from rollouts, failed ones
# included; τ = 1; a constant 1e-4; mean-1 weights): the diagnostics that measured it keep it by name
WEIGHTED_UPDATE_BEFORE: dict[str, Any] = {"awr_tau": 1.0, "awr_lr": 1e-4, "awr_demo_fraction": 0.5,
                                          "awr_schedule": "constant", "awr_self_normalize": False,
                                          "awr_rollouts": "all"}


@dataclass(frozen=True, kw_only=True)
class CriticConfig:
    """How diagnoses are made and bounded (`agents.critic.diagnose`; defined here so the run's config
    stays light to import)."""

    # allow edits into a factor's out-of-distribution range (a run sets it: `RunConfig.critic`). Off, a
    # failure found on a scene with an OOD value is diagnosed at a value clamped into the ID range
    allow_ood: bool = False
    # hold the failing scene's other out-of-distribution factors in the diagnosis's edit (the conditions the
    # failure happened under, `agents.critic.diagnose.ood_conditions`; needs allow_ood): verification then
    # tests the factor under them, and a validated mode recreates all of them
    ood_context: bool = False
    # the rules critic ranks a failing scene's out-of-distribution factors before its in-distribution ones
    # (`agents.critic.rules.rank_factors`); off: one ranking by score (before FINDINGS #16)
    ood_first: bool = True
    # narrowest targeted edit of a number factor, as a share of its ID range (the edit runs from the
    # failing value out to the range's end on its side, at most half the range wide)
    band: float = 0.25
    # extra attempts inside one `diagnose` call after an unusable LLM answer (each one sees the previous
    # error); for standalone callers — inside the graph it is 0 and the diagnose node retries instead
    # (`RunConfig.max_retries`), so one loop owns the budget
    retries: int = 2
    # keyframe images passed to image-capable models
    max_keyframes: int = 3
    # token budget of one critic answer
    max_tokens: int = 400

    def __post_init__(self) -> None:
        if not 0.0 < self.band <= 1.0:
            raise ValueError(f"band must be in (0, 1], got {self.band}")
        if self.retries < 0 or self.max_keyframes < 0:
            raise ValueError("retries and max_keyframes must be >= 0")


@dataclass(frozen=True, kw_only=True)
class WriterConfig:
    """How programs are written and checked (`agents.writers`; defined here so the run's config stays
    light to import)."""

    # allow edits into the OOD range (a run sets it with the critic's: `RunConfig.writer`)
    allow_ood: bool = False
    # a side-only mode ("high"/"low" without an edit) gets this share of the ID range at that end
    band: float = 0.25
    # extra LLM attempts inside one call (the caller bounds the rest through `feedback`); 0 inside the
    # graph, whose nodes retry (`RunConfig.max_retries`), so one loop owns the budget
    retries: int = 0
    # let the LLM return a whole new generation source (else it may only edit factors)
    allow_source: bool = False
    # worked examples for the LLM generation writer: up to this many programs of other difficulty modes
    # from procedural memory (`agents.writers.examples`); 0 shows none (not yet measured to help, #12)
    examples: int = 0
    # rules training writer: add a subgoal that stages the diagnosed phase more finely
    emphasis: bool = True
    # token budgets: an edit spec, a new source, a subgoal list
    max_tokens_edit: int = 400
    max_tokens_source: int = 4000
    max_tokens_subgoals: int = 1000

    def __post_init__(self) -> None:
        if not 0.0 < self.band <= 1.0 or self.retries < 0 or self.examples < 0:
            raise ValueError("band must be in (0, 1], retries and examples >= 0")


@dataclass(frozen=True, kw_only=True)
class VerifyTestConfig:
    """The verification test's knobs besides its batch size and significance level (`RunConfig.verify_n`
    and `verify_alpha`, kept at the top level so old config.json files load); the graph builds
    `agents.critic.verify.VerifyConfig` from them, whose defaults they mirror."""

    # fewer counted episodes than this in either batch: inconclusive (capped at verify_n: a batch of n can
    # only be judged if n episodes may count)
    min_valid: int = 4
    # the smallest failure-rate increase a difficulty mode is worth: "refuted" needs the data to bound the
    # increase below it, and a control failing more often than 1 - min_effect is a ceiling (inconclusive)
    min_effect: float = 0.25
    # the control factor, or None to pick one (another number factor of a different kind, at random)
    control_factor: str | None = None
    # groups a control factor may come from ("task" factors change the task itself)
    control_groups: tuple[str, ...] = ("spatial", "attribute")
    # which failures count: in "any" phase (the factor claim; FINDINGS #16) or only the diagnosis's "named"
    count: str = "any"

    def __post_init__(self) -> None:
        if self.count not in ("any", "named"):
            raise ValueError(f"verify.count must be 'any' or 'named', got {self.count!r}")
        if self.min_valid < 1:
            raise ValueError("min_valid must be >= 1")
        if not 0.0 < self.min_effect < 1.0:
            raise ValueError(f"verify.min_effect must be in (0, 1), got {self.min_effect}")


@dataclass(frozen=True, kw_only=True)
class CompileConfig:
    """How `compile` turns a validated mode into its training program (DESIGN §5.8)."""

    # a training program below this agreement with the round's expert demos is refined
    agreement_threshold: float = 0.9
    # expert demonstrations of the family an agreement check reads, at most
    max_demos: int = 10

    def __post_init__(self) -> None:
        if not 0.0 < self.agreement_threshold <= 1.0 or self.max_demos < 0:
            raise ValueError("need 0 < agreement_threshold <= 1 and max_demos >= 0")


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """One run of the loop: families, budget, rounds, agents, evaluation, resources."""

    # preset this config came from (for the record)
    preset: str = "default"
    # method name (see METHODS); resolved with `method_config`
    method: str = "coda"
    # task families the data engine works on
    families: tuple[str, ...] = ("pick_place", "articulated", "put_inside", "stack_insert")
    # rounds after the bootstrap (round 0)
    rounds: int = 5
    # accepted training scenes per family per round: the generation budget every method gets
    budget: int = 8
    # accepted measurement scenes per arm per round (before/after success, never trained on)
    held: int = 2
    # arms (difficulty modes incl. the seed distribution) per family per round, at most
    max_arms: int = 3
    # retries of every agent call, each fed the previous attempt's exact error (K): a failing slot's writer
    # rewrites before it is reported failed, the critic's answers per failed episode, the writer's answers
    # per compiled program — at most 1 + K LLM calls per slot, episode or program (the agents' own
    # `critic.retries` and `writer.retries` stay 0, so this is the only retry loop)
    max_retries: int = 2
    # candidate scenes generated per needed scene on each attempt (validation rejects some)
    oversample: float = 1.5
    # expert demonstrations per family for the bootstrap SFT
    seed_demos: int = 20
    # failed rollouts the critic diagnoses per round, at most
    diagnose_max: int = 4
    # episodes per batch (targeted and control) when verifying a diagnosis
    verify_n: int = 12
    # significance level of the verification test
    verify_alpha: float = 0.1
    # the verification test's other knobs (smallest countable batch, control factor and its groups)
    verify: VerifyTestConfig = field(default_factory=VerifyTestConfig)
    # the critic: edit bounds and band of its diagnoses, keyframes, token budget (retries must stay 0).
    # Its edits may reach OOD values, where the exploration variants of every method (uniform, scalar,
    # CoDA's own) and domain randomization already take training scenes: clamped into the ID range, a
    # failure found on such a scene is diagnosed where the difficulty does not exist, and verification
    # refutes it (FINDINGS #2). The frozen evaluation suites are other scenes either way.
    critic: CriticConfig = field(default_factory=lambda: CriticConfig(retries=0, allow_ood=True))
    # the writers: edit bounds, band of side-only modes, new sources allowed, emphasis, token budgets
    # (retries must stay 0); OOD edits allowed with the critic's, so a mode's program recreates its value
    writer: WriterConfig = field(default_factory=lambda: WriterConfig(allow_ood=True))
    # compile: the training program's agreement threshold and the demonstrations it is checked on
    compile: CompileConfig = field(default_factory=CompileConfig)
    # LLM backend of the critic and writer (agents.llm registry: local, openai, replay, rules); "rules"
    # uses the rule-based critic over privileged state and template program edits (no model)
    llm: str = "local"
    # model of the LLM backend: a local GGUF key, or the endpoint's model name ("" = the backend's default)
    llm_model: str = ""
    # OpenAI-compatible endpoint root for llm="openai" (the key comes from $OPENAI_API_KEY, never from here)
    llm_base_url: str = ""
    # domain randomization: widen each numeric in-distribution range by this fraction of its width per side
    dr_widen: float = 0.5
    # uniform/scalar variants: new variants proposed per family per round
    variants: int = 2
    # factors every variant moves past its training range at once (uniform, scalar, and the exploration
    # arms of the diagnosis-driven methods draw them alike). 1 is DESIGN §5's single-factor variant; the
    # OOD a policy meets moves many factors together, and a policy trained on one moved factor at a time
    # does not reach it (FINDINGS #5)
    variant_factors: int = 1
    # CoDA: lead a family's arms with the composite of its stored difficulty modes (every mode's edits in
    # one generation program) once two modes have programs; memory is what holds modes found in different
    # rounds and families, so only it can compose them
    compose: bool = True
    # learning-progress allocation
    allocation: AllocationConfig = field(default_factory=AllocationConfig)
    # training
    learn: LearnConfig = field(default_factory=LearnConfig)
    # held-out evaluation per family (reported, never used for steering): in-distribution and OOD scenes
    eval_id: int = 10
    eval_ood: int = 10
    # first seed of the held-out evaluation scenes (disjoint from every generated scene's seed)
    eval_seed0: int = 900_000
    # control-step limit of policy rollouts; None keeps each scene's own limit
    rollout_max_steps: int | None = None
    # episode-pool worker processes (0 runs episodes in this process); with executor "ray" and no
    # ray_address, the CPUs of the local Ray instance
    workers: int = 2
    # where the simulation work (validate, roll out, verify, evaluate) runs: "local" (this machine's process
    # pool) or "ray" (`sim.ray_pool`; identical results, tests/sim/test_ray_pool.py)
    executor: str = "local"
    # the Ray cluster to join with executor "ray": None or "local" (start one here), "auto", "HOST:PORT"
    ray_address: str | None = None
    # sandbox worker processes
    sandbox_workers: int = 1
    # render a thumbnail next to every accepted scene
    thumbnails: bool = True
    # seed of everything random in the loop
    seed: int = 0

    def __post_init__(self) -> None:
        METHODS.get(self.method)  # "did you mean" on a typo
        if not self.families:
            raise ValueError("need at least one task family")
        if self.rounds < 0 or self.budget < 1 or self.held < 0 or self.max_arms < 1:
            raise ValueError("need rounds >= 0, budget >= 1, held >= 0, max_arms >= 1")
        if self.workers < 0 or self.sandbox_workers < 1:
            raise ValueError(f"need workers >= 0 (0 runs episodes in this process) and sandbox_workers >= 1, "
                             f"got {self.workers} and {self.sandbox_workers}")
        if self.executor not in EXECUTORS:
            raise ValueError(f"unknown executor {self.executor!r}; executors: {', '.join(EXECUTORS)}")
        if self.ray_address is not None and self.executor != "ray":
            raise ValueError("ray_address needs executor 'ray'")
        if self.executor == "ray" and self.workers < 1:
            raise ValueError("executor 'ray' needs workers >= 1 (workers 0 runs episodes in this process)")
        if self.learn.sft_steps < 0 or (self.learn.sft_steps == 0 and not self.learn.init_policy):
            raise ValueError(f"learn.sft_steps = {self.learn.sft_steps}: the bootstrap needs SFT steps >= 1, "
                             "or 0 with learn.init_policy (a policy to start from as given)")
        if self.variant_factors < 1:
            raise ValueError(f"need variant_factors >= 1 (the factors a variant moves), got "
                             f"{self.variant_factors}")
        if self.max_retries < 0 or self.oversample < 1.0:
            raise ValueError("need max_retries >= 0 and oversample >= 1")
        if not 0.0 < self.verify_alpha < 1.0:
            raise ValueError(f"verify_alpha must be in (0, 1), got {self.verify_alpha}")
        if self.critic.retries or self.writer.retries:
            raise ValueError("critic.retries and writer.retries must be 0 in a run: the nodes retry every "
                             f"agent call themselves, max_retries={self.max_retries} times (one retry loop)")

    @property
    def method_config(self) -> MethodConfig:
        return METHODS.get(self.method)

    @property
    def critic_kind(self) -> Literal["rules", "llm"]:
        """The rule-based critic and writer without a model, the LLM ones otherwise."""
        return "rules" if self.llm == "rules" else "llm"

    def to_json(self) -> str:
        """The config's fields and, as `method_config`, what its method name meant when it was written: a
        method's definition can change (FINDINGS #28 made `coda` sparse), and a resumed run must not
        silently continue under another one (`check_method`)."""
        method = dataclasses.asdict(self.method_config)
        return json.dumps({**dataclasses.asdict(self), "method_config": method}, indent=1)

    @classmethod
    def from_json(cls, text: str) -> RunConfig:
        return _build(cls, json.loads(text))


def check_method(method: str, written: dict[str, Any]) -> None:
    """ValueError when `method` now names another configuration than `written` (a run's `method_config`),
    naming the method that matches what the run was started with."""
    now = dataclasses.asdict(METHODS.get(method))
    if written == now:
        return
    same = [name for name in METHODS.names() if dataclasses.asdict(METHODS.get(name)) == written]
    diff = ", ".join(f"{k}: {written.get(k)!r} → {now[k]!r}" for k in now if written.get(k) != now[k])
    raise ValueError(f"method {method!r} has changed since this run was written ({diff})"
                     + (f"; what it was is now called {same[0]!r}: set \"method\": \"{same[0]}\" in its "
                        f"config.json to continue it" if same else "; no registered method matches it"))


def _build(cls: type, data: dict[str, Any]) -> Any:
    """A (nested) frozen dataclass from its `asdict` form; tuples come back as tuples."""
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):  # keys of removed fields (learn.threads) are ignored: old files load
        if f.name not in data:
            continue
        kwargs[f.name] = _value(hints[f.name], data[f.name])
    return cls(**kwargs)


def _value(hint: Any, v: Any) -> Any:
    if dataclasses.is_dataclass(hint) and isinstance(v, dict):
        return _build(hint, v)
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        if isinstance(v, dict) and "type" in v and all(dataclasses.is_dataclass(a) for a in inner):
            from coda_policy.registry import CONFIGS  # a policy config: its backend by name

            return _build(CONFIGS.get(v["type"]), v)
        return v if v is None or len(inner) != 1 else _value(inner[0], v)
    if origin is tuple and isinstance(v, list):
        return tuple(v)
    return v


PRESETS: Registry[RunConfig] = Registry("run preset")
PRESETS.register("default", RunConfig())
# Seconds-to-minutes on 2 CPU cores: one family, tiny policy, two rounds, a handful of episodes.
PRESETS.register("smoke", RunConfig(
    preset="smoke", llm="rules", families=("pick_place",), rounds=2, budget=2, held=1, max_arms=2,
    max_retries=1, seed_demos=3, diagnose_max=1, verify_n=3, eval_id=1, eval_ood=1, rollout_max_steps=120,
    variants=1, thumbnails=False,
    learn=LearnConfig(
        policy=ObjectTokenConfig(d_model=32, n_layers=1, n_decoder_layers=1, batch_size=16, flow_steps=4),
        sft_steps=20, finetune_steps=5, critic_hidden=32, critic_steps=20, critic_batch=32, awr_steps=5,
        awr_batch=16, demo_stride=4)))

# Two full CoDA rounds on two families on 2 CPU cores (what `make demo` runs with the local LLM). The
# bootstrap SFT gets enough demonstrations to solve most in-distribution scenes, so rounds meet real
# out-of-distribution failures and verification has successes to contrast with.
PRESETS.register("demo", RunConfig(
    preset="demo", families=("pick_place", "stack_insert"), rounds=2, budget=4, held=1, max_arms=3,
    max_retries=2, seed_demos=40, diagnose_max=3, verify_n=12, eval_id=6, eval_ood=6, variants=2,
    rollout_max_steps=200,
    learn=LearnConfig(
        policy=ObjectTokenConfig(batch_size=64, flow_steps=8),
        sft_steps=1500, finetune_steps=60, critic_hidden=64, critic_steps=300, critic_batch=64, awr_steps=60,
        awr_batch=64, demo_stride=2)))


# The first run: a minute on 2 CPU cores that shows the loop doing its job. It starts from a pretrained
# policy shipped with the code (`checkpoints/seed_sft_4fam.safetensors`: SFT on seed demonstrations of the
# four families, Table 1's seed-0 bootstrap), so the policy solves in-distribution pick-place scenes and
# fails where variants move three factors out of distribution; the rules critic diagnoses two failures, each
# verified on 12 + 12 episodes, and a validated one is compiled into a generation + training program pair.
PRESETS.register("quickstart", RunConfig(
    preset="quickstart", llm="rules", families=("pick_place",), rounds=1, budget=6, held=1, max_arms=3,
    max_retries=1, seed_demos=3, diagnose_max=2, verify_n=12, eval_id=2, eval_ood=2, variants=1,
    variant_factors=4,
    learn=LearnConfig(
        init_policy=str(SEED_SFT_4FAM),
        sft_steps=0, finetune_steps=5, critic_hidden=32, critic_steps=20, critic_batch=32, awr_steps=5,
        awr_batch=16, demo_stride=4)))


# CoDA on LIBERO-Object in LIBERO's own world (`sim/families/libero_object/`, issue #14): the item starts in
# its own region or swapped with another's, that region moved or not, the instruction in the task file's
# words or a paraphrase. Seed demonstrations are DART-style expert runs (`sim.libero.episode`: without them
# the policy does not close the loop, FINDINGS #21), 300 of them over the family's eight in-distribution
# layouts per task, and the policy trained with the auxiliary target loss: with several layouts per task
# plain SFT learned where items usually start, not which the words name (3/20 development scenes at 300
# demonstrations, 14/20 with the loss; FINDINGS #39 — chosen on development scenes, not the protocol's
# suites). One round at a small budget. The family has no attribute factor, so a control may also move a
# task factor (the words, the item).
# A round's weighted update at SFT's rate (1e-3, the default, chosen on our own families) unlearns the
# bootstrap: one run's round-1 update redone at 1e-3 / 3e-4 / 1e-4 / 3e-5 scored 5 / 9 / 21 / 17 of 40
# development scenes against 13 for the policy it started from (`studies.libero_round_dev`,
# FINDINGS #41): 1e-4.
PRESETS.register("libero", RunConfig(
    preset="libero", families=("libero_object",), rounds=1, budget=4, held=1, max_arms=3, max_retries=2,
    seed_demos=300, diagnose_max=2, verify_n=6, eval_id=5, eval_ood=5, variants=2, variant_factors=3,
    rollout_max_steps=280, thumbnails=False,
    verify=VerifyTestConfig(control_groups=("spatial", "attribute", "task")),
    learn=LearnConfig(
        policy=ObjectTokenConfig(batch_size=64, flow_steps=8, target_loss=1.0),
        sft_steps=1500, finetune_steps=60, critic_hidden=64, critic_steps=300, critic_batch=64, awr_steps=60,
        awr_batch=64, awr_lr=1e-4, demo_stride=2)))
# The same on LIBERO-Spatial (`sim/families/libero_spatial/`): which of two identical black bowls goes on
# the plate, named by its place; the plate starts in its own region or swapped with another object's, moved
# or not. LIBERO's step limit for the suite (220); every other setting is `libero`'s, not tuned here.
PRESETS.register("libero_spatial", dataclasses.replace(
    PRESETS.get("libero"), preset="libero_spatial", families=("libero_spatial",), rollout_max_steps=220))


def get_preset(name: str) -> RunConfig:
    """A named preset; a typo raises with "did you mean"."""
    return PRESETS.get(name)


def config_path(run_dir: str | Path) -> Path:
    return Path(run_dir) / "config.json"
