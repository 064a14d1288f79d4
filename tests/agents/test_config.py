"""The run's configuration: every knob (the critic's, the writers', the verification test's, compile's)
is a nested field of `RunConfig`, recorded in config.json and read back; the graph's agents are built
from it; one retry budget; one torch-thread setting for training."""

from __future__ import annotations

import dataclasses
import importlib
import json
from typing import Any

import pytest

from agents.config import (
    PRESETS,
    CompileConfig,
    CriticConfig,
    LearnConfig,
    RunConfig,
    VerifyConfig,
    WriterConfig,
    get_preset,
)
from agents.graph.deps import HelperAgents

CUSTOM = RunConfig(
    critic=CriticConfig(allow_ood=True, band=0.3, retries=0, max_keyframes=1, max_tokens=300),
    writer=WriterConfig(allow_ood=True, band=0.2, allow_source=True, emphasis=False, max_tokens_edit=300),
    verify=VerifyConfig(alpha=0.1, min_valid=2, control_factor="obj_x", control_groups=("spatial",)),
    compile=CompileConfig(agreement_threshold=0.8, max_demos=3))


@pytest.mark.parametrize("name", PRESETS.names())
def test_every_preset_round_trips_through_config_json_with_its_nested_configs(name: str) -> None:
    cfg = get_preset(name)
    back = RunConfig.from_json(cfg.to_json())
    assert back == cfg
    for field in ("critic", "writer", "verify", "compile", "learn", "allocation"):
        assert type(getattr(back, field)) is type(getattr(cfg, field))


def test_non_default_nested_knobs_round_trip_and_are_recorded() -> None:
    back = RunConfig.from_json(CUSTOM.to_json())
    assert back == CUSTOM and back.verify.control_groups == ("spatial",)  # a tuple again, not a list
    data = json.loads(CUSTOM.to_json())
    assert data["critic"]["band"] == 0.3 and data["compile"]["max_demos"] == 3
    assert data["writer"]["allow_source"] is True and data["verify"]["control_factor"] == "obj_x"


def test_a_config_json_from_before_the_nested_configs_still_loads() -> None:
    old: dict[str, Any] = json.loads(get_preset("smoke").to_json())
    for key in ("critic", "writer", "verify", "compile"):
        del old[key]
    old["learn"]["threads"] = 1  # a removed knob (now learn.policy.torch_threads): ignored
    cfg = RunConfig.from_json(json.dumps(old))
    assert cfg == get_preset("smoke")
    assert cfg.critic == RunConfig().critic and cfg.compile == CompileConfig()


def test_one_verification_config_and_a_run_keeps_its_alpha() -> None:
    """The loop's test and a standalone caller's are one class (`VerifyConfig`); a run's α is 0.1, as every
    run's `verify_alpha` was, and a config.json from before `verify.alpha` keeps the α it was run with."""
    from agents.critic.verify import VerifyConfig as VerifiersConfig
    from agents.critic.verify import loop_config

    assert VerifiersConfig is VerifyConfig
    cfg = get_preset("smoke")
    assert cfg.verify.alpha == cfg.verify_alpha == 0.1 and VerifyConfig().alpha == 0.05
    used = loop_config(cfg.verify, cfg.critic, alpha=cfg.verify_alpha, n=3)
    assert (used.alpha, used.min_valid, used.critic, used.control) == (0.1, 3, cfg.critic, "other")
    old: dict[str, Any] = json.loads(cfg.to_json())
    del old["verify"]["alpha"], old["verify"]["control"], old["verify"]["critic"]
    old["verify_alpha"] = 0.05
    back = RunConfig.from_json(json.dumps(old))
    assert back.verify_alpha == 0.05 and dataclasses.replace(back.verify, alpha=0.1) == cfg.verify


def test_one_retry_budget_the_agents_own_retries_must_stay_zero_in_a_run() -> None:
    assert RunConfig().critic.retries == 0 and RunConfig().writer.retries == 0
    assert CriticConfig().retries == 2  # standalone callers of `diagnose` keep their own retries
    with pytest.raises(ValueError, match="max_retries"):
        RunConfig(critic=CriticConfig(retries=1))
    with pytest.raises(ValueError, match="one retry loop"):
        RunConfig(writer=WriterConfig(retries=2))


def test_training_threads_are_one_setting_the_policys_own() -> None:
    assert "threads" not in {f.name for f in dataclasses.fields(LearnConfig)}
    for name in PRESETS.names():
        assert get_preset(name).learn.policy.torch_threads == 1


def test_helper_agents_use_the_runs_critic_writer_verify_and_compile_knobs(monkeypatch) -> None:
    seen: dict[str, Any] = {}
    for module, name in (("agents.critic.diagnose", "diagnose"), ("agents.critic.verify", "verify"),
                         ("agents.writers.generation", "write_generation_program"),
                         ("agents.writers.training", "write_training_program")):
        # the module itself (`agents.critic.diagnose` as an attribute is the function of that name)
        monkeypatch.setattr(importlib.import_module(module), name,
                            lambda *a, _name=name, **kw: seen.__setitem__(_name, kw))
    agents = HelperAgents.from_config(CUSTOM)
    agents.diagnose(None, None, None, critic="rules", episode_id="ep", feedback=None)
    agents.verify(None, None, None, n=6, alpha=0.2, rng=None)
    agents.write_generation_program(None, None, None, None, round_no=1)
    agents.write_training_program(None, None, None, mode_id="m", round_no=1, demos=["demo"], feedback=None)
    assert seen["diagnose"]["config"] is CUSTOM.critic
    v = seen["verify"]["config"]
    assert (v.alpha, v.min_valid, v.control_factor, v.control_groups) == (0.2, 2, "obj_x", ("spatial",))
    assert v.critic is CUSTOM.critic
    assert seen["write_generation_program"]["config"] is CUSTOM.writer
    assert seen["write_training_program"]["config"] is CUSTOM.writer
    assert seen["write_training_program"]["evidence"].threshold == 0.8
    default = HelperAgents.from_config(RunConfig())
    default.verify(None, None, None, n=6, alpha=0.1, rng=None)
    assert seen["verify"]["config"].min_valid == 4
    default.verify(None, None, None, n=3, alpha=0.1, rng=None)  # a batch of 3 is judged on 3 episodes
    assert seen["verify"]["config"].min_valid == 3


def test_open_deps_builds_the_agents_from_the_run_config(tmp_path) -> None:
    from agents.graph.deps import open_deps
    from tests.agents.graphkit import config
    from tests.fakes.trainer import FakeTrainer

    cfg = dataclasses.replace(config("sft"), critic=CUSTOM.critic, writer=CUSTOM.writer)
    with open_deps(cfg, tmp_path / "run", trainer=FakeTrainer()) as deps:
        assert isinstance(deps.agents, HelperAgents)
        assert deps.agents.critic is cfg.critic and deps.agents.writer is cfg.writer


@pytest.mark.parametrize("share", [-0.1, 1.0])
def test_a_round_share_outside_zero_to_one_is_refused_with_its_name(share: float) -> None:
    with pytest.raises(ValueError, match="learn.round_share must be in"):
        LearnConfig(round_share=share)


def test_retrain_without_a_bootstrap_sft_is_refused() -> None:
    with pytest.raises(ValueError, match="learn.retrain retrains the bootstrap's SFT"):
        LearnConfig(retrain=True, sft_steps=0, init_policy="p.safetensors")
    assert LearnConfig(retrain=True).retrain  # with the default SFT steps it stands
    with pytest.raises(ValueError, match="retrain_steps must be 'fixed' or 'scaled', got 'scald'"):
        LearnConfig(retrain=True, retrain_steps="scald")  # type: ignore[arg-type]


def test_a_rollout_filter_that_would_change_nothing_is_refused() -> None:
    """With `awr_demo_fraction` 1 (the default) every minibatch of the weighted update is demonstrations, so
    which rollout chunks it may imitate cannot matter: `studies.quickstart_round_dev` measured "success"
    bit-identical to "all" before this check (FINDINGS #45)."""
    from coda_policy.awr import AWRConfig

    with pytest.raises(ValueError, match="awr_rollouts='success' would change nothing"):
        LearnConfig(awr_rollouts="success")
    assert LearnConfig(awr_rollouts="success", awr_demo_fraction=0.5).awr_rollouts == "success"
    with pytest.raises(ValueError, match="changes nothing with demo_fraction=1"):
        AWRConfig(rollouts="success", demo_fraction=1.0)


def test_a_run_written_before_a_method_field_existed_continues_under_its_default() -> None:
    from agents.config import METHODS
    from agents.config.run_config import check_method

    written = dataclasses.asdict(METHODS.get("coda"))
    for new in ("diagnoser", "verify", "allocation", "compose"):  # the loop-link fields of issue #39
        del written[new]
    check_method("coda", written)  # made without them = made with their defaults
    with pytest.raises(ValueError, match="method 'coda_no_verify' has changed since this run was written "
                                         r"\(verify: True → False\); what it was is now called 'coda'"):
        check_method("coda_no_verify", written)


def test_the_research_preset_lays_generated_arms_on_dr_and_the_tables_keep_the_seed() -> None:
    """FINDINGS #53: `--preset default` runs CoDA on DR's program; every recorded table keeps the seed program
    it ran with, except the table that exists to measure DR's (`core_dr`); the other presets keep theirs."""
    from experiments.table.cells import cell_config
    from experiments.table.presets import TABLES

    assert get_preset("default").background == "dr" and RunConfig().background == "seed"
    assert {n for n in PRESETS.names() if get_preset(n).background == "dr"} == {"default"}
    for name in TABLES.names():
        cfg = cell_config(TABLES.get(name), "coda", 0, "rules", 1)
        assert cfg.background == ("dr" if name == "core_dr" else "seed"), name


def test_only_the_libero_presets_retrain_each_round_on_their_128_scenes() -> None:
    """FINDINGS #56: the LIBERO presets' rounds retrain the bootstrap's recipe on 128 training scenes a
    round; every other preset (and every recorded table) keeps the round's update."""
    from experiments.table.cells import cell_config
    from experiments.table.presets import TABLES

    libero = {n for n in PRESETS.names() if n.startswith("libero")}
    assert libero == {"libero", "libero_spatial", "libero_goal"}
    assert {n for n in PRESETS.names() if get_preset(n).learn.retrain} == libero
    assert {get_preset(n).budget for n in libero} == {128} and not LearnConfig().retrain
    # FINDINGS #61: their retraining's steps scale with the demonstrations; the default stays fixed
    assert {get_preset(n).learn.retrain_steps for n in libero} == {"scaled"}
    assert LearnConfig().retrain_steps == "fixed"
    assert not any(cell_config(TABLES.get(n), "coda", 0, "rules", 1).learn.retrain for n in TABLES.names())


def test_agents_run_background_flag_overrides_the_preset_and_is_fixed_on_resume(tmp_path) -> None:
    from agents.run import _same_as_run, make_config, parse_args
    from common.cli import UsageError

    assert make_config(parse_args(["--background", "seed"])).background == "seed"
    assert make_config(parse_args(["--preset", "smoke", "--background", "dr"])).background == "dr"
    with pytest.raises(UsageError, match="--background"):
        _same_as_run(parse_args(["--resume", "--out", str(tmp_path), "--background", "seed"]),
                     get_preset("default"))
