"""The parts of a run's configuration, each the settings of one stage of the loop: the policy and its training
(`LearnConfig`), the critic (`CriticConfig`), the program writers (`WriterConfig`), verification
(`VerifyConfig`) and compilation (`CompileConfig`). Defined here, not beside their code, so the run's
config stays light to import (no torch, no LLM client).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from coda_policy.device import check_device_spec
from coda_policy.object_token.configuration_object_token import ObjectTokenConfig
from coda_policy.pi05.configuration_pi05 import Pi05Config


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
    # chunk critic still fits every chunk). See `AWRConfig.rollouts`. Only with awr_demo_fraction < 1: at 1
    # (the default) no rollout chunk is imitated, and "success" is refused as a knob that does nothing
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
    # each round's update is the bootstrap's recipe (`sft_steps` of SFT from `init_policy` or a fresh
    # network) retrained on every expert demonstration so far, the round's own included, in place of the
    # method's update (a method without one, `zero_shot`, still keeps its policy). On LIBERO a round's
    # update did not learn new starts from 64 times a round's position scenes, while the bootstrap's recipe
    # retrained on 256 of them did; the round's weighted update run after that retraining kept the new
    # starts and lost the item's own (development scenes, FINDINGS #55-#56). The training program's
    # potential then weighs nothing: the round's scenes are what the method chooses. Costs a bootstrap's
    # SFT a round
    retrain: bool = False
    # with `retrain`, how many SFT steps a round's retraining takes: "fixed", the bootstrap's `sft_steps`
    # whatever the data (each demonstration seen less often as rounds add them), or "scaled", `sft_steps`
    # times the demonstrations over the bootstrap's, so each is seen about as often as in the bootstrap
    # (`trainer.retrain_steps`)
    retrain_steps: Literal["fixed", "scaled"] = "fixed"
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
        if self.retrain and self.sft_steps == 0:
            raise ValueError("learn.retrain retrains the bootstrap's SFT every round, and "
                             "learn.sft_steps = 0 has none: give sft_steps >= 1 or leave retrain off")
        if self.retrain_steps not in ("fixed", "scaled"):
            raise ValueError(f"learn.retrain_steps must be 'fixed' or 'scaled', got {self.retrain_steps!r}")
        if not 0.0 <= self.round_share < 1.0:
            raise ValueError(f"learn.round_share must be in [0, 1), got {self.round_share}")
        if self.awr_rollouts != "all" and self.awr_demo_fraction >= 1.0:
            raise ValueError(f"learn.awr_rollouts={self.awr_rollouts!r} would change nothing: with "
                             "learn.awr_demo_fraction=1 every minibatch is demonstrations (rollouts only "
                             "teach the critic); lower awr_demo_fraction or leave awr_rollouts 'all'")


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
    # how the rules critic orders factors its evidence scores alike (`agents.critic.rules.tie_order`):
    # "episode" by a hash of the failing episode and the factor, so successive failures try each tied factor
    # and verification decides; "name" alphabetically, every tie settled the same way (every table recorded
    # before FINDINGS #50; on LIBERO-Object, whose factors are all choices, it never named the item's start;
    # in the core and extended tables' runs 0.8-1.4 % of diagnoses had a tie at the top)
    ties: str = "episode"
    # narrowest targeted edit of a number factor, as a share of its ID range (the edit runs from the
    # failing value out to the range's end on its side, at most half the range wide)
    band: float = 0.25
    # extra attempts inside one `diagnose` call after an unusable LLM answer (each one sees the previous
    # error); for standalone callers — inside the graph it is 0 and the diagnose node retries instead
    # (`RunConfig.max_retries`), so one loop owns the budget
    retries: int = 2
    # keyframe images passed to image-capable models
    max_keyframes: int = 3
    # token budget of one critic answer (the "alone" prompt's: a free explanation, a value, a confidence)
    max_tokens: int = 400
    # how the LLM critic is asked: "hybrid" shows it the failure's evidence and the rules critic's ranked
    # candidates with theirs, and it decides (keeps the first or overrides it with a reason); "alone" shows
    # it the evidence and every factor (`agents.critic.diagnose`; measured in docs/benchmarks.md)
    llm_prompt: str = "hybrid"
    # token budget of one hybrid answer (a reason of at most 200 characters, a phase, a factor)
    max_tokens_hybrid: int = 120

    def __post_init__(self) -> None:
        if not 0.0 < self.band <= 1.0:
            raise ValueError(f"band must be in (0, 1], got {self.band}")
        if self.retries < 0 or self.max_keyframes < 0:
            raise ValueError("retries and max_keyframes must be >= 0")
        if self.ties not in ("name", "episode"):
            raise ValueError(f"ties must be 'name' or 'episode', got {self.ties!r}")
        if self.llm_prompt not in ("hybrid", "alone"):
            raise ValueError(f"llm_prompt must be 'hybrid' or 'alone', got {self.llm_prompt!r}")


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
    # what the LLM training writer writes: "stage", one subgoal staging the diagnosed phase, inserted into
    # the family's program where the model says (`agents.writers.answers.StageOut`); "subgoals", the whole
    # ordered list (`SubgoalsOut`). Measured in docs/benchmarks.md ("The writers")
    training_form: str = "stage"
    # a written stage must be reached before the next one on at least this share of the expert's
    # demonstrations, else the answer is refused with what the expert's read-outs were (0: not checked)
    stage_reached: float = 0.5
    # ...and when it is not, its comparisons' thresholds are first moved to the expert's quartiles on the way
    # (the model's read-outs kept), before the answer is refused
    stage_repair: bool = True
    # token budgets: an edit spec, a new source, a subgoal list, one stage
    max_tokens_edit: int = 400
    max_tokens_source: int = 4000
    max_tokens_subgoals: int = 1000
    max_tokens_stage: int = 200

    def __post_init__(self) -> None:
        if not 0.0 <= self.stage_reached <= 1.0:
            raise ValueError(f"stage_reached must be in [0, 1], got {self.stage_reached}")
        if self.training_form not in ("stage", "subgoals"):
            raise ValueError(f"training_form must be 'stage' or 'subgoals', got {self.training_form!r}")
        if not 0.0 < self.band <= 1.0 or self.retries < 0 or self.examples < 0:
            raise ValueError("band must be in (0, 1], retries and examples >= 0")


@dataclass(frozen=True, kw_only=True)
class VerifyConfig:
    """The verification test and its control edit (`agents.critic.verify`): one class for the loop and for
    standalone callers. The defaults are a standalone caller's (α = 0.05); a run's are `RunConfig.verify`
    (α = 0.1, what every run has used), and the loop's `verify` node sets the batch size and the critic
    (`agents.critic.verify.loop_config`)."""

    # significance level of the one-sided test
    alpha: float = 0.05
    # fewer counted episodes than this in either batch: inconclusive (the loop caps it at its batch size:
    # a batch of n can only be judged if n episodes may count)
    min_valid: int = 4
    # the smallest failure-rate increase a difficulty mode is worth: "refuted" needs the data to bound the
    # increase below it, and a control failing more often than 1 - min_effect is a ceiling (inconclusive)
    min_effect: float = 0.25
    # the control factor, or None to pick one (another number factor of a different kind, at random)
    control_factor: str | None = None
    # groups a control factor may come from ("task" factors change the task itself)
    control_groups: tuple[str, ...] = ("spatial", "attribute")
    # which failures count: in "any" phase (the factor claim; FINDINGS #16) or only the diagnosis's "named"
    count: Literal["any", "named"] = "any"
    # the control batch: "other" — another factor moved by the same amount; "moveback" — the diagnosed
    # factor left at the program's own (in-distribution) values, everything else as in the targeted batch
    control: Literal["other", "moveback"] = "other"
    # a diagnosis held under a context (its failing scene's other OOD factors) whose control batch fails at
    # its ceiling: "inconclusive" as it stands, or "without_context" — test the factor again alone, on the
    # seed distribution, and take that verdict (the diagnosis then stands without its context)
    at_ceiling: Literal["inconclusive", "without_context"] = "inconclusive"
    # edit bounds and band width, as the critic uses them (in a run: the run's `critic`, set by the loop)
    critic: CriticConfig = field(default_factory=CriticConfig)

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"verify.alpha must be in (0, 1), got {self.alpha}")
        if self.min_valid < 1:
            raise ValueError("min_valid must be >= 1")
        if not 0.0 < self.min_effect < 1.0:
            raise ValueError(f"verify.min_effect must be in (0, 1), got {self.min_effect}")
        if self.count not in ("any", "named"):
            raise ValueError(f"verify.count must be 'any' or 'named', got {self.count!r}")
        if self.control not in ("other", "moveback"):
            raise ValueError(f"verify.control must be 'other' or 'moveback', got {self.control!r}")
        if self.at_ceiling not in ("inconclusive", "without_context"):
            raise ValueError(f"verify.at_ceiling must be 'inconclusive' or 'without_context', got "
                             f"{self.at_ceiling!r}")


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
