"""Offscreen rendering of scenes and episodes: camera frames as uint8 arrays, PNGs, thumbnails, and
keyframes at an episode's phase changes.

Headless by default: unless `MUJOCO_GL` is set, `import sim` sets it to EGL (or OSMesa when only that
is installed); `Renderer` makes its GL context from that variable itself, so the import order of mujoco
does not matter. Sites and doubled geometry (collision hulls under visual meshes) are not drawn.

Cost per 128×128 frame (scene update + draw + read back), from `.venv/bin/python -m sim.render`:
pick_place default scene, best of 5×50 frames, EGL on Mesa llvmpipe, 2 CPU cores shared with other jobs
(load ~4): `detail="fast"` (default) front 3.1, top 2.7, wrist 2.0 ms; `detail="full"` 11.5, 11.4, 7.7 ms.
Making a `Renderer` costs a few hundred ms (GL context, mesh and texture upload): reuse one.
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import os
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import mujoco
import numpy as np

from sim.env import SETTLE_STEPS, SimEnv
from sim.records import Episode
from sim.scene import SceneSpec

Detail = Literal["fast", "full"]
CAMERA_ALIASES = {"front": "front", "top": "top", "wrist": "robot_eye_in_hand"}
REPLAY_TOL = 0.01  # m; a replayed keyframe state further than this from the recorded one is an error
APT_HINT = ("Headless rendering needs EGL (apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri, or the "
            "NVIDIA driver's EGL) or OSMesa (apt-get install libosmesa6, then set MUJOCO_GL=osmesa)")


class RenderError(RuntimeError):
    """No OpenGL context could be created; the message says what to install or set."""


class Renderer:
    """Draws one model at a fixed size; `render(data, camera)` → uint8 (H, W, 3). `detail="fast"` draws
    the robot's collision meshes, `"full"` its visual meshes (see `_visual_copy`).

    The same calls as `mujoco.Renderer`, but the GL context is chosen from `MUJOCO_GL` when the renderer
    is made rather than when mujoco was first imported, so importing mujoco before `sim` still renders
    headless."""

    def __init__(self, model: mujoco.MjModel, width: int = 128, height: int = 128, *,
                 detail: Detail = "fast") -> None:
        self.model = _visual_copy(model, width, height, detail)
        self.width, self.height = width, height
        self._gl = _gl_context(width, height)
        try:
            self._con = mujoco.MjrContext(self.model, mujoco.mjtFontScale.mjFONTSCALE_150)
        except Exception as e:  # mujoco raises FatalError when GL functions cannot be loaded
            self._gl.free()
            raise RenderError(f"OpenGL context made but unusable with MUJOCO_GL={_backend()!r}: {e}. "
                              f"{APT_HINT}") from e
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self._con)
        self._scene = mujoco.MjvScene(self.model, maxgeom=10_000)
        self._opt = mujoco.MjvOption()
        self._opt.sitegroup[:] = 0  # robosuite's grip-site markers would cross the image
        self._cam = mujoco.MjvCamera()
        self._cam.type = mujoco.mjtCamera.mjCAMERA_FIXED
        self._rect = mujoco.MjrRect(0, 0, width, height)
        self._buf = np.empty((height, width, 3), np.uint8)
        self._cams: dict[str, int] = {}
        _track(self)

    def camera_id(self, camera: str) -> int:
        """Resolve "front", "top", "wrist" or any camera name of the model."""
        if camera not in self._cams:
            name = CAMERA_ALIASES.get(camera, camera)
            cid = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_CAMERA, name)
            if cid < 0:
                known = sorted(set(CAMERA_ALIASES) | {self.model.cam(i).name for i in range(self.model.ncam)})
                raise ValueError(f"unknown camera {camera!r}; cameras: {', '.join(known)}")
            self._cams[camera] = cid
        return self._cams[camera]

    def render(self, data: mujoco.MjData, camera: str = "front") -> np.ndarray:
        """One RGB frame of `data` (which must belong to the model this renderer was made for)."""
        if self._con is None:
            raise RuntimeError("render called after close")
        self._cam.fixedcamid = self.camera_id(camera)
        self._gl.make_current()  # several renderers may share a thread
        mujoco.mjv_updateScene(self.model, data, self._opt, None, self._cam, mujoco.mjtCatBit.mjCAT_ALL,
                               self._scene)
        mujoco.mjr_render(self._rect, self._scene, self._con)
        mujoco.mjr_readPixels(self._buf, None, self._rect, self._con)
        return self._buf[::-1].copy()  # OpenGL rows run bottom-up

    def close(self) -> None:
        if self._con is not None:
            self._gl.make_current()
            self._con.free()
            self._gl.free()
            self._con = None

    def __enter__(self) -> Renderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_con", None) is not None:
            with contextlib.suppress(Exception):  # a destructor must not raise; the GL driver may be gone
                self.close()


def _backend() -> str:
    return (os.environ.get("MUJOCO_GL") or "glfw").lower()  # unset: MuJoCo's own default


def _preload_llvm_users() -> None:
    """Load triton (it bundles its own LLVM; torch's CUDA build pulls it in) before Mesa's llvmpipe makes a
    GL context: loaded the other way round, the process segfaults (seen with .venv-pi05's torch 2.14.1
    whenever torch._dynamo or transformers' generation utilities are first imported after a render)."""
    import importlib.util

    if importlib.util.find_spec("triton") is not None:
        import triton  # noqa: F401


def _gl_context(width: int, height: int) -> Any:
    """A current GL context (mujoco.egl/osmesa/glfw.GLContext: they share no base class)."""
    _preload_llvm_users()
    backend = _backend()
    try:
        if backend == "egl":
            from mujoco.egl import GLContext
        elif backend == "osmesa":
            from mujoco.osmesa import GLContext
        elif backend in ("glfw", "glx"):
            from mujoco.glfw import GLContext
        else:
            raise RenderError(f"MUJOCO_GL={backend!r} is not supported here; use egl, osmesa or glfw")
        ctx = GLContext(width, height)
        ctx.make_current()
        return ctx
    except RenderError:
        raise
    except Exception as e:  # EGL/OSMesa/GLFW raise assorted types when no context is available
        raise RenderError(f"could not create an OpenGL context with MUJOCO_GL={backend!r}: "
                          f"{type(e).__name__}: {e}. {APT_HINT}") from e


def _visual_copy(model: mujoco.MjModel, width: int, height: int, detail: Detail) -> mujoco.MjModel:
    """A copy for drawing, with the offscreen buffer sized to the image. Each body shows one of its two
    geom sets (alpha-0 geoms are skipped): visual meshes for scanned objects; for the robot, visual
    meshes when `detail == "full"`, else its collision meshes (a tenth of the triangles, which is what a
    software renderer spends its time on)."""
    m = copy.deepcopy(model)
    colliding = (m.geom_contype | m.geom_conaffinity) > 0
    visual = ~colliding & (m.geom_group == 1)
    robot = np.array([m.body(b).name.startswith("robot_") for b in range(m.nbody)])
    has_vis, has_col = np.zeros(m.nbody, bool), np.zeros(m.nbody, bool)
    has_vis[m.geom_bodyid[visual]] = True
    has_col[m.geom_bodyid[colliding]] = True
    simplify = robot & has_col if detail == "fast" else np.zeros(m.nbody, bool)
    body = m.geom_bodyid
    m.geom_rgba[colliding & has_vis[body] & ~simplify[body], 3] = 0.0
    m.geom_rgba[visual & simplify[body], 3] = 0.0
    m.vis.global_.offwidth, m.vis.global_.offheight = width, height
    return m


# A renderer still open at interpreter exit would be freed after MuJoCo's atexit hook has terminated the
# EGL display, which prints a traceback; close them first (atexit runs hooks last-registered first, and
# ours is registered after the first GL context, hence after MuJoCo's).
_LIVE: weakref.WeakSet[Renderer] = weakref.WeakSet()


def _close_all() -> None:
    for r in list(_LIVE):
        r.close()


def _track(r: Renderer) -> None:
    if not _LIVE:
        atexit.unregister(_close_all)
        atexit.register(_close_all)
    _LIVE.add(r)


class PolicyFrames:
    """The frames a policy asks for (its `cameras` and `image_size` attributes), rendered from an episode's
    env at each query; a policy without `cameras` gets none and costs no renderer."""

    def __init__(self, env: SimEnv, policy: object) -> None:
        self.cameras = tuple(getattr(policy, "cameras", ()) or ())
        self.renderer = None
        if self.cameras:
            size = int(policy.image_size)
            self.renderer = Renderer(env.model, size, size)
        self.env = env

    def __call__(self) -> dict[str, np.ndarray]:
        if self.renderer is None:
            return {}
        return {c: self.renderer.render(self.env.data, c) for c in self.cameras}

    def close(self) -> None:
        if self.renderer is not None:
            self.renderer.close()


def save_png(img: np.ndarray, path: str | Path) -> Path:
    """Write a uint8 (H, W, 3) image as PNG; creates the parent folder."""
    from PIL import Image  # only image writers need Pillow

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.asarray(img, np.uint8)).save(path)
    return path


def thumbnail(spec: SceneSpec, path: str | Path, camera: str = "front", size: int = 256) -> Path:
    """Render the scene's initial state to a `size`×`size` PNG (full detail)."""
    env = SimEnv(spec)
    env.reset()
    with Renderer(env.model, size, size, detail="full") as r:
        return save_png(r.render(env.data, camera), path)


@dataclass(frozen=True)
class Keyframe:
    step: int  # control step of the frame (the last one is after the final settle)
    phase: str  # phase label from that step on
    image: np.ndarray  # uint8 (H, W, 3)


def keyframes(episode: Episode, *, camera: str = "front", size: int = 128, detail: Detail = "full",
              env: SimEnv | None = None, renderer: Renderer | None = None) -> list[Keyframe]:
    """Frames at the start, at every phase change and at the end of an episode.

    Re-simulates: replays `episode.actions` from a reset (MuJoCo is deterministic, so this retraces the
    recorded run; checked against the recorded states) and renders at the steps where the phase timeline
    changes. Works for loaded episodes and costs nothing while recording; phase changes are as fine as the
    episode's `record_every`. `env` and `renderer` (for that env's model) may be passed in for reuse."""
    env = env or SimEnv(episode.scene)
    r = renderer or Renderer(env.model, size, size, detail=detail)
    T = episode.steps
    change = {int(step): phase for step, phase in episode.meta()["phase_timeline"] if step < T}
    recorded = {int(t): s for t, s in zip(episode.state_steps, episode.states, strict=True)}
    out: list[Keyframe] = []
    try:
        s = env.reset()
        for t in range(T + 1):
            if t > 0:
                s = env.step(episode.actions[t - 1])
            if t in change:
                if t in recorded:
                    _check_replay(recorded[t].obj_pos, s.obj_pos, t)
                out.append(Keyframe(t, change[t], r.render(env.data, camera)))
        s = env.hold(SETTLE_STEPS)
        _check_replay(episode.states[-1].obj_pos, s.obj_pos, T)
        out.append(Keyframe(T, episode.phases[-1], r.render(env.data, camera)))
    finally:
        if renderer is None:
            r.close()
    return out


def frames_at(episode: Episode, steps: Sequence[int], cameras: Sequence[str], size: int) -> np.ndarray:
    """uint8 (len(steps), len(cameras), size, size, 3): what each camera saw at each control step (0 = after
    the reset), drawn as `sim.episode.run_episode` draws a policy's `cameras` (detail "fast"). Replays the
    episode's actions from a reset, checked against its recorded states."""
    want = sorted({int(t) for t in steps})
    if want and not 0 <= want[0] <= want[-1] <= episode.steps:
        raise ValueError(f"steps must lie in [0, {episode.steps}], got {want[0]}..{want[-1]}")
    recorded = {int(t): s for t, s in zip(episode.state_steps, episode.states, strict=True)}
    env = SimEnv(episode.scene)
    got: dict[int, np.ndarray] = {}
    with Renderer(env.model, size, size) as r:
        s = env.reset()
        for t in range(want[-1] + 1 if want else 0):
            if t > 0:
                s = env.step(episode.actions[t - 1])
            if t in recorded and t < episode.steps:
                _check_replay(recorded[t].obj_pos, s.obj_pos, t)
            if t in want:
                got[t] = np.stack([r.render(env.data, c) for c in cameras])
    if not len(steps):
        return np.zeros((0, len(cameras), size, size, 3), np.uint8)
    return np.stack([got[int(t)] for t in steps])


def _check_replay(want: np.ndarray, got: np.ndarray, t: int) -> None:
    err = float(np.abs(want - got).max(initial=0.0))
    if err > REPLAY_TOL:
        raise RuntimeError(f"replaying the episode diverged at step {t} by {err * 1000:.1f} mm; were its "
                           "actions recorded with a different simulator build or controller gains?")


def save_keyframes(episode: Episode, folder: str | Path, *, camera: str = "front", size: int = 128,
                   detail: Detail = "full") -> list[str]:
    """Render `keyframes` to `<folder>/<step>_<phase>.png`; returns the paths (for `Episode.keyframes`)."""
    return [str(save_png(k.image, Path(folder) / f"{k.step:04d}_{k.phase}.png"))
            for k in keyframes(episode, camera=camera, size=size, detail=detail)]


def benchmark(spec: SceneSpec, *, size: int = 128, frames: int = 50, repeats: int = 5,
              detail: Detail = "fast") -> dict[str, float]:
    """Milliseconds per frame (scene update + draw + read back) for each camera: the best of `repeats`
    timings of `frames` frames, since other processes on the machine only ever add time."""
    env = SimEnv(spec)
    env.reset()
    out = {}
    with Renderer(env.model, size, size, detail=detail) as r:
        for cam in CAMERA_ALIASES:
            r.render(env.data, cam)  # warm-up: the first draw uploads meshes and textures
            best = np.inf
            for _ in range(repeats):
                t = time.perf_counter()
                for _ in range(frames):
                    r.render(env.data, cam)
                best = min(best, (time.perf_counter() - t) / frames * 1000)
            out[cam] = best
    return out


if __name__ == "__main__":  # prints the render cost quoted in the module docstring
    from sim.families import get_family

    fam = get_family("pick_place")
    scene = fam.make_scene(fam.default_factors())
    for level in ("fast", "full"):
        ms = benchmark(scene, detail=level)
        print(f"MUJOCO_GL={os.environ.get('MUJOCO_GL')} 128x128 detail={level} ms/frame: "
              + ", ".join(f"{k} {v:.2f}" for k, v in ms.items()))
