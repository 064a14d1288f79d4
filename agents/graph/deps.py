"""What the nodes depend on, injected: the run's config and directory, the LLM, the sandbox and episode
pools, memory, the trainer, the critic/writer agents, the progress reporter, a cost meter and a clock.

`open_deps` builds the real ones (and closes them); a test builds `Deps` itself with any part swapped,
e.g. a trainer without torch or agents that answer from a script.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agents.config import CriticConfig, RunConfig, VerifyConfig, WriterConfig
from agents.graph.rundir import RunDir

if TYPE_CHECKING:  # the real types, for readers and type checkers; importing them here would be heavy
    import numpy as np

    from agents.llm import LLM, CallLog
    from memory import Diagnosis, DifficultyMode, Ledger, Memory, Verdict
    from programs.model import GenerationProgram, TrainingProgram
    from sandbox import SandboxPool
    from sim.episode import Episode
    from sim.pool import EpisodePool
    from sim.ray_pool import RayEpisodePool

# `run_batch(items) -> outcomes`: each item (`agents.critic.verify.BatchItem`: program, factors, seed)
# generated in the sandbox and rolled out with the current policy; outcomes have `success`,
# `failing_phase`, `error`
RunBatch = Callable[[Sequence[Any]], Sequence[Any]]


class Trainer(Protocol):
    """Policy training as the graph needs it (`agents.graph.trainer.PolicyTrainer` is the real one)."""

    def factory(self, policy: Path, seed: int) -> Any:
        """A picklable `factory(scene) -> policy` for `sim.pool.EpisodeJob`."""
        ...

    def initial(self, demos: Sequence[Path], out: Path) -> dict[str, Any]:
        """The untrained starting policy (zero-shot) → `out`."""
        ...

    def bootstrap(self, demos: Sequence[Path], out: Path, steps: int | None = None) -> dict[str, Any]:
        """SFT on seed demonstrations → `out` (`steps` in place of the config's `sft_steps`)."""
        ...

    def finetune(self, policy: Path, demos: Sequence[Path], out: Path) -> dict[str, Any]:
        """A round's SFT update → `out`."""
        ...

    def aw_update(self, policy: Path, groups: Sequence[tuple[Any, Sequence[Path]]], out: Path, *,
                  shaping: str, seed: int) -> dict[str, Any]:
        """Advantage-weighted update; `groups` pairs a training program with the episodes it shapes."""
        ...


class Agents(Protocol):
    """The critic, verifier and writers (`HelperAgents`: agents.critic and agents.writers)."""

    def diagnose(self, episode: Episode, program: GenerationProgram, llm: LLM | None, *, critic: str,
                 episode_id: str, feedback: str | None,
                 peers: Sequence[tuple[dict[str, Any], bool]] = ()) -> Diagnosis:
        """A failed episode → `memory.Diagnosis`, in one attempt (the node retries, feeding the previous
        error back as `feedback`); `peers` are the (factor values, success) of the round's other episodes
        of the family. Malformed LLM output raises `LLMOutputError`, a rules critic without an answer
        `programs.errors.ProgramRejected`."""
        ...

    def verify(self, diagnosis: Diagnosis, program: GenerationProgram, run_batch: RunBatch, *, n: int,
               alpha: float, rng: np.random.Generator) -> Verdict:
        """Targeted vs control batch → `memory.Verdict`."""
        ...

    def write_generation_program(self, mode: DifficultyMode, base: GenerationProgram, llm: LLM | None,
                                 feedback: str | None, *, round_no: int, diagnosis: Diagnosis | None = None,
                                 examples: Sequence[str] = ()) -> GenerationProgram:
        """A generation program for a difficulty mode, derived from `base`, in one attempt; `feedback` is
        the error of the previous attempt; `diagnosis` the validated diagnosis the mode came from, when
        there is one; `examples` worked examples from procedural memory (`agents.writers.examples`).
        Expected failures: see `agents.graph.nodes.work.agent_failures`."""
        ...

    def write_training_program(self, diagnosis: Diagnosis, base: TrainingProgram, llm: LLM | None, *,
                               mode_id: str, round_no: int, demos: Sequence[Episode],
                               feedback: str | None) -> TrainingProgram:
        """A training program for a diagnosis, in one attempt (a written stage checked to be reached on
        `demos`; refinement is the compile step's)."""
        ...


class Reporter(Protocol):
    """Live progress: nodes starting and ending, episode batches ticking, a table per round."""

    def node_start(self, round_no: int, node: str) -> None: ...

    def node_end(self, round_no: int, node: str, summary: str, cost: dict[str, float]) -> None: ...

    def progress(self, what: str, total: int) -> Callable[[Any], None]: ...

    def log(self, message: str) -> None: ...

    def round_end(self, row: dict[str, Any]) -> None: ...


class QuietReporter:
    """Reports nothing (tests, or `--quiet`)."""

    def node_start(self, round_no: int, node: str) -> None:
        pass

    def node_end(self, round_no: int, node: str, summary: str, cost: dict[str, float]) -> None:
        pass

    def progress(self, what: str, total: int) -> Callable[[Any], None]:
        return lambda _=None: None

    def log(self, message: str) -> None:
        pass

    def round_end(self, row: dict[str, Any]) -> None:
        pass


@dataclass
class Meter:
    """Counters a node adds to while it works; the graph's node wrapper reads the difference."""

    sim_steps: int = 0  # control steps simulated (rollouts, expert demos, verification batches)
    episodes: int = 0  # episodes run
    sandbox_runs: int = 0  # generation-program runs in the sandbox

    def snapshot(self) -> dict[str, int]:
        return {"sim_steps": self.sim_steps, "episodes": self.episodes, "sandbox_runs": self.sandbox_runs}


class HelperAgents:
    """`Agents` backed by agents.critic and agents.writers (imported on first use), configured by the run's
    `critic`, `writer`, `verify` and `compile` settings (`from_config`; the defaults are `RunConfig`'s)."""

    def __init__(self, *, critic: CriticConfig | None = None, writer: WriterConfig | None = None,
                 verify: VerifyConfig | None = None, agreement_threshold: float | None = None,
                 background: str = "seed", dr_widen: float = 0.5) -> None:
        defaults = RunConfig()
        self.background, self.dr_widen = background, dr_widen  # RunConfig's: what the critic's context omits
        self.critic = critic or defaults.critic
        self.writer = writer or defaults.writer
        self.verify_config = verify or defaults.verify
        self.agreement_threshold = (defaults.compile.agreement_threshold if agreement_threshold is None
                                    else agreement_threshold)

    @classmethod
    def from_config(cls, config: RunConfig) -> HelperAgents:
        """The agents as a run configures them."""
        return cls(critic=config.critic, writer=config.writer, verify=config.verify,
                   agreement_threshold=config.compile.agreement_threshold, background=config.background,
                   dr_widen=config.dr_widen)

    def diagnose(self, episode: Episode, program: GenerationProgram, llm: LLM | None, *, critic: str,
                 episode_id: str, feedback: str | None,
                 peers: Sequence[tuple[dict[str, Any], bool]] = ()) -> Diagnosis:
        from agents.critic.diagnose import diagnose

        background = None
        if self.background != "seed":
            from programs.seeds import background_program

            background = background_program(program.family, self.background, self.dr_widen)
        return diagnose(episode, program, llm, critic=critic, config=self.critic, episode_id=episode_id,
                        feedback=feedback, peers=peers, background=background)

    def verify(self, diagnosis: Diagnosis, program: GenerationProgram, run_batch: RunBatch, *, n: int,
               alpha: float, rng: np.random.Generator) -> Verdict:
        from agents.critic.verify import loop_config, verify

        config = loop_config(self.verify_config, self.critic, alpha=alpha, n=n)
        return verify(diagnosis, program, run_batch, n=n, rng=rng, config=config)

    def write_generation_program(self, mode: DifficultyMode, base: GenerationProgram, llm: LLM | None,
                                 feedback: str | None, *, round_no: int, diagnosis: Diagnosis | None = None,
                                 examples: Sequence[str] = ()) -> GenerationProgram:
        from agents.writers.generation import write_generation_program

        return write_generation_program(mode, base, llm, feedback, round_no=round_no, diagnosis=diagnosis,
                                        config=self.writer, examples=examples)

    def write_training_program(self, diagnosis: Diagnosis, base: TrainingProgram, llm: LLM | None, *,
                               mode_id: str, round_no: int, demos: Sequence[Episode],
                               feedback: str | None) -> TrainingProgram:
        from agents.writers.training import write_training_program
        from programs.refine import Evidence

        evidence = Evidence(list(demos), self.agreement_threshold) if demos else None
        return write_training_program(diagnosis, base, llm, mode_id=mode_id, round_no=round_no,
                                      evidence=evidence, feedback=feedback, config=self.writer)


@dataclass
class Deps:
    """Everything a node may use besides the state."""

    config: RunConfig
    run: RunDir
    sandbox: SandboxPool  # started
    episodes: EpisodePool | RayEpisodePool  # started
    trainer: Trainer
    agents: Agents = field(default_factory=HelperAgents)
    llm: LLM | None = None  # None for the rules critic and writer
    memory: Memory | None = None  # for methods with memory
    ledger: Ledger | None = None  # learning progress (the memory's own when there is one)
    reporter: Reporter = field(default_factory=QuietReporter)
    meter: Meter = field(default_factory=Meter)
    clock: Callable[[], float] = time.perf_counter
    call_log: CallLog | None = None  # the LLM's calls, read for per-node cost


@contextlib.contextmanager
def open_deps(config: RunConfig, run_dir: str | Path, *, llm: Any = None, call_log: Any = None,
              trainer: Trainer | None = None, agents: Agents | None = None,
              reporter: Reporter | None = None) -> Iterator[Deps]:
    """Start the real dependencies of a run (sandbox and episode pools, memory, ledger) and close them
    at exit. `llm`, `trainer`, `agents` and `reporter` default to the real ones (no LLM = rules)."""
    from memory.ledger import Ledger
    from sandbox import PoolConfig, SandboxPool
    from sim.pool import make_pool

    run = RunDir(run_dir)
    run.root.mkdir(parents=True, exist_ok=True)
    if not run.config.exists():  # the run's record (`agents.run` writes it first; a resume keeps it)
        run.config.write_text(config.to_json())
    if trainer is None:
        from agents.graph.trainer import PolicyTrainer

        trainer = PolicyTrainer(config.learn, config.seed)
    with contextlib.ExitStack() as stack:
        sandbox = stack.enter_context(SandboxPool(PoolConfig(workers=config.sandbox_workers)))
        episodes = make_pool(config.executor, config.workers, address=config.ray_address, job_timeout_s=600)
        stack.callback(episodes.close)
        with ThreadPoolExecutor(1) as ex:  # workers warm up (seconds) while memory loads its embedder
            started = ex.submit(episodes.__enter__)
            memory = None
            if config.method_config.memory:
                from memory import Memory

                memory = stack.enter_context(Memory(run.memory))
            started.result()
        ledger = memory.ledger if memory is not None else Ledger(run.memory / "ledger.json")
        yield Deps(config=config, run=run, sandbox=sandbox, episodes=episodes, trainer=trainer,
                   agents=agents or HelperAgents.from_config(config), llm=llm, memory=memory,
                   ledger=ledger, reporter=reporter or QuietReporter(), call_log=call_log)
