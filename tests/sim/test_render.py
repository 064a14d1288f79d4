"""Offscreen rendering: frames are real images, cameras differ, PNGs and keyframes are written."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from sim.env import SimEnv
from sim.episode import run_episode
from sim.families import get_family
from sim.render import Renderer, RenderError, frames_at, keyframes, save_keyframes, save_png, thumbnail

FAM = get_family("pick_place")
SPEC = FAM.make_scene(FAM.default_factors())


@pytest.fixture(scope="module")
def env() -> SimEnv:
    e = SimEnv(SPEC)
    e.reset()
    return e


@pytest.fixture(scope="module")
def renderer(env: SimEnv):
    try:
        r = Renderer(env.model, 128, 128)
    except RenderError as e:  # a machine without EGL/OSMesa; the message says what to install
        pytest.skip(str(e))
    yield r
    r.close()


@pytest.mark.parametrize("camera", ["front", "top", "wrist"])
def test_frame_is_a_real_image(renderer: Renderer, env: SimEnv, camera: str):
    img = renderer.render(env.data, camera)
    assert img.shape == (128, 128, 3) and img.dtype == np.uint8
    assert img.reshape(-1, 3).std(0).mean() > 10, "blank frame"


def test_cameras_see_different_things(renderer: Renderer, env: SimEnv):
    front, top, wrist = (renderer.render(env.data, c).astype(int) for c in ("front", "top", "wrist"))
    assert np.abs(front - top).mean() > 10
    assert np.abs(front - wrist).mean() > 10


def test_frame_follows_the_state(renderer: Renderer, env: SimEnv):
    before = renderer.render(env.data, "front")
    assert np.array_equal(before, renderer.render(env.data, "front"))  # deterministic
    env.step(np.array([0, 0, 0, 0, 0, 0, 1.0]))  # close the gripper: the wrist view changes
    env.hold(5)
    try:
        assert not np.array_equal(renderer.render(env.data, "wrist"), before)
    finally:
        env.reset()


def test_unknown_camera_lists_the_cameras(renderer: Renderer, env: SimEnv):
    with pytest.raises(ValueError, match="front, robot_eye_in_hand, robot_robotview, top, wrist"):
        renderer.render(env.data, "side")


def test_full_detail_draws_the_visual_meshes(renderer: Renderer, env: SimEnv):
    with Renderer(env.model, 128, 128, detail="full") as full:
        a, b = renderer.render(env.data, "front"), full.render(env.data, "front")
    assert a.shape == b.shape and not np.array_equal(a, b)


def test_png_and_thumbnail_are_written(renderer: Renderer, env: SimEnv, tmp_path):
    path = save_png(renderer.render(env.data, "top"), tmp_path / "sub" / "top.png")
    with Image.open(path) as im:
        assert im.size == (128, 128) and im.mode == "RGB"
    thumb = thumbnail(SPEC, tmp_path / "thumb.png", camera="front", size=256)
    with Image.open(thumb) as im:
        assert im.size == (256, 256)
        assert np.asarray(im).std() > 10


def test_keyframes_follow_the_phase_timeline(renderer: Renderer, tmp_path):
    ep = run_episode(SPEC)
    assert ep.success
    frames = keyframes(ep, size=96)
    timeline = ep.meta()["phase_timeline"]
    assert [(k.step, k.phase) for k in frames] == [tuple(x) for x in timeline]
    assert frames[0].step == 0 and frames[-1].step == ep.steps and frames[-1].phase == "done"
    assert all(k.image.shape == (96, 96, 3) for k in frames)
    assert np.abs(frames[0].image.astype(int) - frames[-1].image).mean() > 1  # the arm moved
    paths = save_keyframes(ep, tmp_path / "kf", size=64)
    assert len(paths) == len(frames) and all(os.path.exists(p) for p in paths)
    assert paths[-1].endswith("_done.png")


def test_unknown_backend_is_a_clear_error(env: SimEnv, monkeypatch):
    monkeypatch.setenv("MUJOCO_GL", "bogus")
    with pytest.raises(RenderError, match="MUJOCO_GL='bogus' is not supported here; use egl, osmesa"):
        Renderer(env.model, 32, 32)


def test_renders_headless_even_if_mujoco_is_imported_first(renderer: Renderer):
    code = ("import mujoco, sim\nfrom sim.families import get_family\nfrom sim.env import SimEnv\n"
            "from sim.render import Renderer\nf = get_family('pick_place')\n"
            "e = SimEnv(f.make_scene(f.default_factors())); e.reset()\n"
            "print(Renderer(e.model, 32, 32).render(e.data).shape)")
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM", "DISPLAY")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "(32, 32, 3)"
    assert "Traceback" not in out.stderr  # nothing printed at exit either


def test_frames_at_replays_what_the_runner_showed_the_policy(renderer: Renderer):
    """A policy that declares `cameras` gets frames in `obs.images`; replaying the episode renders the
    very same frames at the same steps (what π0.5 trains on is what it saw)."""
    seen: dict[int, np.ndarray] = {}

    class Looking:
        cameras, image_size = ("front", "wrist"), 24

        def __init__(self) -> None:
            self.expert = FAM.expert(SPEC)

        def __call__(self, obs):
            assert set(obs.images) == {"front", "wrist"}
            seen[obs.step] = np.stack([obs.images["front"], obs.images["wrist"]])
            return self.expert(obs.state)[None]

    ep = run_episode(SPEC, Looking(), max_steps=30)
    steps = sorted(seen)[::7]
    frames = frames_at(ep, steps, ("front", "wrist"), 24)
    assert frames.shape == (len(steps), 2, 24, 24, 3) and frames.dtype == np.uint8
    for k, t in enumerate(steps):
        np.testing.assert_array_equal(frames[k], seen[t])
    assert not np.array_equal(frames[0, 0], frames[0, 1])  # two cameras, two views
    with pytest.raises(ValueError, match="steps must lie"):
        frames_at(ep, [ep.steps + 1], ("front",), 24)


def test_a_policy_without_cameras_gets_no_frames():
    got = []

    def blind(obs):
        got.append(obs.images)
        return np.zeros((4, 7))

    run_episode(SPEC, blind, max_steps=8)
    assert got and all(g == {} for g in got)
