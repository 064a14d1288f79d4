"""Simulator throughput: `python -m bench.sim [--quick] [--json PATH]`.

(a) control steps/s of `SimEnv.step` beside raw `mujoco.mj_step` on the same compiled model and the same
    trajectory (the expert's actions, replayed; raw replays the torques the controller computed), and the
    overhead per control step = (t_ctrl - SUBSTEPS * t_raw) / (SUBSTEPS * t_raw), for every family;
(b) render ms/frame at 128x128, when `sim.render` exists;
(c) episodes/s of `EpisodePool` with 1 and 2 workers (and in-process) on the same expert episodes.
Every figure is a median over repeats, and the compared measurements are interleaved, because the
cores are shared and noisy.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import mujoco
import numpy as np

from common.cli import command_parser
from sim.builder import SUBSTEPS
from sim.env import SimEnv
from sim.episode import ExpertPolicy, make_observation, run_episode
from sim.families import get_family, our_families
from sim.pool import EpisodeJob, EpisodePool
from sim.scene import SceneSpec


@dataclass(frozen=True, kw_only=True)
class BenchConfig:
    repeats: int = 5  # measurements per figure; the median is reported
    passes: int = 3  # trajectory replays inside one step-rate measurement (longer = less timer noise)
    frames: int = 50  # rendered frames per render measurement
    episodes: int = 8  # expert episodes per pool batch
    pool_repeats: int = 3  # batches per pool size
    families: tuple[str, ...] | None = None  # None = every registered family


PRESETS = {"default": BenchConfig(), "quick": BenchConfig(repeats=3, passes=1, frames=20, episodes=4,
                                                          pool_repeats=2)}


def default_scene(family: str) -> SceneSpec:
    fam = get_family(family)
    return fam.make_scene(fam.default_factors())


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Median wall-clock and CPU seconds of `fn()`. CPU time of this (single-threaded) process hardly
    moves when other processes share the cores, so the step-rate figures use it."""
    wall, cpu = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return statistics.median(wall), statistics.median(cpu)


def median_time(fn: Callable[[], object], repeats: int) -> float:
    return timed(fn, repeats)[0]


# ---- (a) step rate -------------------------------------------------------------------------------------
def record_trajectory(env: SimEnv) -> tuple[np.ndarray, np.ndarray]:
    """Run the expert once; return its actions (T, 7) and every torque command the controller wrote."""
    policy = ExpertPolicy(env.spec)
    ctrls: list[np.ndarray] = []
    apply = env.controller.apply

    def logged(d: mujoco.MjData) -> None:
        apply(d)
        ctrls.append(d.ctrl.copy())

    env.controller.apply = logged  # type: ignore[method-assign] - instance-level hook, removed below
    try:
        s, actions = env.reset(), []
        for t in range(env.spec.max_steps):
            a = policy(make_observation(env.spec, s, t))[0]
            s = env.step(a)
            actions.append(a)
            if policy.finished or env.success(s):
                break
    finally:
        del env.controller.apply
    return np.array(actions), np.array(ctrls)


def control_pass(env: SimEnv, actions: np.ndarray) -> np.ndarray:
    env.reset()
    for a in actions:
        env.step(a)
    return env.data.qpos.copy()


def raw_pass(env: SimEnv, ctrls: np.ndarray) -> np.ndarray:
    m, d, chunk = env.model, env.data, env.controller.cfg.update_every
    env.reset()
    for c in ctrls:
        d.ctrl[:] = c
        mujoco.mj_step(m, d, chunk)
    return d.qpos.copy()


def component_pass(env: SimEnv, actions: np.ndarray) -> tuple[float, float]:
    """CPU seconds per control step of reading the state and of computing torques, measured by one
    extra call of each on the states along the trajectory (both cost more once contacts appear)."""
    read = osc = 0.0
    env.reset()
    clock = time.process_time
    for a in actions:
        env.step(a)
        t0 = clock()
        env.reader.read(env.data)
        t1 = clock()
        env.controller.torques(env.data)
        read, osc = read + t1 - t0, osc + clock() - t1
    return read / len(actions), osc / len(actions) * SUBSTEPS / env.controller.cfg.update_every


def bench_family(family: str, cfg: BenchConfig) -> dict:
    spec = default_scene(family)
    env = SimEnv(spec)
    actions, ctrls = record_trajectory(env)
    T = len(actions)
    q_ctrl, q_raw = control_pass(env, actions), raw_pass(env, ctrls)
    ctrl, raw, ep, over = [], [], [], []
    for _ in range(cfg.repeats):  # interleaved, and the overhead taken per repeat: load hits both alike
        ctrl.append(timed(lambda: control_pass(env, actions), cfg.passes))
        raw.append(timed(lambda: raw_pass(env, ctrls), cfg.passes))
        # both sides run the same T * SUBSTEPS physics steps, so the overhead is a ratio of the two totals
        over.append([(c - r) / r for c, r in zip(ctrl[-1], raw[-1], strict=True)])
        ep.append(tuple(t / T for t in timed(lambda: run_episode(spec, env=env), 1)))
    parts = [component_pass(env, actions) for _ in range(cfg.repeats)]
    t_read, t_osc = (statistics.median(x) for x in zip(*parts, strict=True))
    med = [statistics.median(col) for series in (ctrl, raw, ep, over) for col in zip(*series, strict=True)]
    (c_w, c_c, r_w, r_c, e_w, e_c, o_w, o_c) = med  # wall / cpu pairs
    return {"family": family, "expert_steps": T, "ctrl_steps_per_s": T / c_c,
            "raw_mj_steps_per_s": T * SUBSTEPS / r_c, "raw_ctrl_equiv_per_s": T / r_c,
            "overhead": o_c, "overhead_wall": o_w, "episode_steps_per_s": 1 / e_c,
            "wall": {"ctrl_steps_per_s": T / c_w, "raw_mj_steps_per_s": T * SUBSTEPS / r_w,
                     "episode_steps_per_s": 1 / e_w},
            "read_us": t_read * 1e6, "osc_us_per_ctrl_step": t_osc * 1e6,
            "replay_max_qpos_diff": float(np.abs(q_ctrl - q_raw).max())}


# ---- (b) rendering -------------------------------------------------------------------------------------
def bench_render(cfg: BenchConfig) -> dict:
    try:
        from sim.render import Renderer
    except ImportError as e:
        return {"status": f"not available ({e})"}
    env = SimEnv(default_scene("pick_place"))
    env.reset()
    out: dict = {"status": "ok", "size": [128, 128]}
    try:
        r = Renderer(env.model, 128, 128)
        for cam in ("front", "wrist"):
            r.render(env.data, camera=cam)  # first frame uploads textures
            t = median_time(lambda c=cam: [r.render(env.data, camera=c) for _ in range(cfg.frames)],
                            cfg.repeats)
            out[f"{cam}_ms_per_frame"] = t / cfg.frames * 1e3
    except Exception as e:  # noqa: BLE001 - a missing GL backend is a result to report, not a crash
        return {"status": f"failed: {type(e).__name__}: {e}"}
    return out


# ---- (c) batch throughput ------------------------------------------------------------------------------
def bench_pool(cfg: BenchConfig) -> dict:
    fam = get_family("pick_place")
    jobs = [EpisodeJob(scene=fam.sample_scene(i)) for i in range(cfg.episodes)]
    rates: dict[int, list[float]] = {0: [], 1: [], 2: []}
    busy: dict[int, list[float]] = {0: [], 1: [], 2: []}  # job-seconds per second: ~workers if kept fed
    cpu: dict[int, list[float]] = {0: [], 1: [], 2: []}  # CPU seconds per episode inside the workers
    t0 = time.perf_counter()
    with EpisodePool(1) as p1, EpisodePool(2) as p2:
        startup = time.perf_counter() - t0
        pools = {0: EpisodePool(0), 1: p1, 2: p2}
        for p in (p1, p2):  # untimed: the workers' first compiles of these scenes' meshes
            p.run(jobs)
        failures = 0
        for r in range(cfg.pool_repeats):
            order = (0, 1, 2) if r % 2 == 0 else (2, 1, 0)
            for w in order:
                t = time.perf_counter()
                results = pools[w].run(jobs)
                dt = time.perf_counter() - t
                rates[w].append(len(jobs) / dt)
                busy[w].append(sum(x.wall_s for x in results) / dt)
                cpu[w].append(sum(x.cpu_s for x in results) / len(results))
                failures += sum(not x.ok for x in results)
    med = {w: statistics.median(v) for w, v in rates.items()}
    ratio = statistics.median(b / a for a, b in zip(rates[1], rates[2], strict=True))  # per adjacent pair
    cpu_per_episode = {f"w{w}": statistics.median(v) for w, v in cpu.items()}
    return {"episodes": len(jobs), "startup_s_both_pools": startup, "in_process_eps_per_s": med[0],
            "w1_eps_per_s": med[1], "w2_eps_per_s": med[2], "w2_over_w1": ratio,
            "w2_busy": statistics.median(busy[2]), "cpu_s_per_episode": cpu_per_episode,
            "job_errors": failures}


# ---- report ----------------------------------------------------------------------------------------------
RATE_KEYS = ("ctrl_steps_per_s", "raw_mj_steps_per_s", "raw_ctrl_equiv_per_s", "episode_steps_per_s",
             "read_us", "osc_us_per_ctrl_step")


def print_report(res: dict) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        Console = Table = None  # noqa: N806 - plain text below
    cols = ["family", "expert steps", "ctrl steps/s", "raw mj_step/s", "raw as ctrl steps/s", "overhead",
            "overhead (wall)", "episode steps/s", "read µs/ctrl step", "osc µs/ctrl step", "replay Δqpos"]
    rows = []
    for f in res["families"]:
        if "error" in f:
            rows.append([f["family"], f["error"]] + [""] * (len(cols) - 2))
            continue
        over = (f"{f['overhead']:.2f}x", f"{f['overhead_wall']:.2f}x")
        rows.append([f["family"], str(f["expert_steps"]), *(f"{f[k]:.0f}" for k in RATE_KEYS[:3]), *over,
                     *(f"{f[k]:.0f}" for k in RATE_KEYS[3:]),
                     f"{f['replay_max_qpos_diff']:.1e}"])
    title = (f"(a) step rate per CPU-second (SUBSTEPS={SUBSTEPS}; overhead = (t_ctrl - SUBSTEPS*t_mj_step) / "
             "(SUBSTEPS*t_mj_step), target <= 3x; wall-clock rates in --json)")
    if Table is not None:
        table = Table(*cols, title=title)
        for r in rows:
            table.add_row(*r)
        Console(width=160).print(table)
    else:
        print(title)
        for r in [cols, *rows]:
            print("  ".join(f"{c:>14}" for c in r))
    rend = res["render"]
    if rend["status"] != "ok":
        print(f"(b) render: {rend['status']}")
    else:
        print("(b) render 128x128: " + ", ".join(f"{k.split('_')[0]} {v:.2f} ms/frame"
                                                for k, v in rend.items() if k.endswith("ms_per_frame")))
    p = res["pool"]
    print(f"(c) pool, {p['episodes']} expert episodes: in-process {p['in_process_eps_per_s']:.2f} eps/s, "
          f"1 worker {p['w1_eps_per_s']:.2f} eps/s, 2 workers {p['w2_eps_per_s']:.2f} eps/s, "
          f"ratio 2w/1w {p['w2_over_w1']:.2f} (2 workers busy {p['w2_busy']:.2f} of 2); "
          f"CPU s/episode {', '.join(f'{k} {v:.3f}' for k, v in p['cpu_s_per_episode'].items())}; "
          f"startup of both pools {p['startup_s_both_pools']:.1f} s; "
          f"job errors {p['job_errors']}")
    m = res["machine"]
    print(f"machine: {m['cpus']} cpus, 1-min load average {m['load_1min_before']:.1f} before, "
          f"{m['load_1min_after']:.1f} after")


def run_bench(cfg: BenchConfig) -> dict:
    load = os.getloadavg()[0]  # other processes on the same cores explain most of the noise
    families = []
    for name in cfg.families or tuple(our_families()):
        try:
            families.append(bench_family(name, cfg))
        except Exception as e:  # noqa: BLE001 - one broken family should not hide the others' numbers
            families.append({"family": name, "error": f"{type(e).__name__}: {e}"})
    res = {"config": asdict(cfg), "families": families, "render": bench_render(cfg), "pool": bench_pool(cfg)}
    after = os.getloadavg()[0]
    return res | {"machine": {"cpus": os.cpu_count(), "load_1min_before": load, "load_1min_after": after}}


def main(argv: list[str] | None = None) -> None:
    ap = command_parser("bench.sim", __doc__)
    ap.add_argument("--quick", action="store_true", help="fewer repeats and episodes (about a minute)")
    ap.add_argument("--json", type=Path, help="also write the numbers to this file")
    ap.add_argument("--family", action="append", help="only these families (repeatable)")
    args = ap.parse_args(argv)
    cfg = PRESETS["quick" if args.quick else "default"]
    if args.family:
        cfg = replace(cfg, families=tuple(args.family))
    res = run_bench(cfg)
    print_report(res)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
