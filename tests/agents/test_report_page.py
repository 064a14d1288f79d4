"""report.html as a researcher opens it: plots embedded, every diagnosis with its verdict, batches, p-value,
produced mode and programs and the failing episode's keyframes, thumbnails per family not truncated, and
no broken link; then the page in a real headless browser (Debian's Chromium, installed by
scripts/setup.sh): it renders to a non-blank screenshot."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from agents.config import RunConfig
from agents.graph.report_page import write_report
from agents.graph.rundir import RunDir
from sim.episode import run_episode
from sim.families import get_family

FAM = get_family("pick_place")


def _row(r: int, verdicts: dict | None = None, compiled: list | None = None) -> dict:
    row = {"round": r, "method": "coda", "eval": {"pick_place": {"id": 0.5 + 0.1 * r, "ood": 0.1 * r}},
           "eval_id": 0.5, "eval_ood": 0.1 * r, "arms": [], "cost": {"train": {"wall_s": 3.0 + r}},
           "cost_total": {"wall_s": 3.0 + r}}
    if r:
        row.update(arms=[{"mode": "seed", "family": "pick_place", "n": 2, "before": 0.5, "after": 1.0}],
                   generation={"accepted": {"pick_place": 2}, "arms": ["seed|pick_place×2"],
                               "slots_failed": []},
                   critic={"diagnoses": 1, "verdicts": verdicts or {}, "compiled": compiled or [],
                           "memory": {"modes": 1, "programs": 1}})
    return row


def _run(tmp_path: Path) -> tuple[RunDir, RunConfig]:
    run = RunDir(tmp_path / "run")
    spec = FAM.make_scene(FAM.default_factors(), seed=3)
    scenes = run.root / "scenes" / "round_01"
    scenes.mkdir(parents=True)
    for k in range(30):  # more than the old page's 24-thumbnail cut
        (scenes / f"pick_place_seed_{k:012d}.json").write_text(spec.to_json())
    Image.new("RGB", (8, 8), (200, 50, 50)).save(scenes / "pick_place_seed_000000000000.png")
    ep = run_episode(spec, max_steps=40)  # the expert, stopped early: a failed approach
    ep.save(run.root / "episodes" / "round_01" / "roll_abc")
    progs = run.root / "programs" / "round_01"
    progs.mkdir(parents=True)
    for name in ("gen_obj_x_approach_1", "train_obj_x_approach_2"):
        (progs / f"{name}.json").write_text("{}")
        (progs / f"{name}.py").write_text("# program\n")
    verdict = {"diagnosis_id": "dx_1", "status": "validated", "targeted_failure_rate": 0.75,
               "control_failure_rate": 0.25, "p_value": 0.0123, "n": 12, "reason": "significant"}
    rec = {"diagnosis": {"episode_id": "roll_abc", "factor_group": "spatial", "factor": "obj_x",
                         "phase": "approach", "side": "high", "explanation": "fails reaching far objects",
                         "edit": {"obj_x": [0.1, 0.15]}, "critic_id": "rules", "confidence": 0.6,
                         "id": "dx_1"},
           "family": "pick_place", "slot": "seed|pick_place", "episode": "episodes/round_01/roll_abc.npz",
           "program": "programs/round_01/gen_obj_x_approach_1.json", "verdict": verdict,
           "verified_on": "seed", "mode_id": "obj_x_approach_high"}
    (run.root / "diagnoses" / "round_01").mkdir(parents=True)
    (run.root / "diagnoses" / "round_01" / "roll_abc.json").write_text(json.dumps(rec))
    compiled = [{"mode": "obj_x_approach_high", "family": "pick_place", "agreement": 0.8,
                 "agreement_refined": 0.95, "generation": "programs/round_01/gen_obj_x_approach_1.json",
                 "training": "programs/round_01/train_obj_x_approach_2.json"}]
    rows = [_row(0), _row(1, {"validated": 1}, compiled)]
    run.metrics.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = dataclasses.replace(RunConfig(), families=("pick_place",), thumbnails=True, llm="rules")
    return run, cfg


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for k, v in attrs:
            if k in ("href", "src") and v:
                self.links.append(v)


def _broken(run: RunDir, page: str) -> list[str]:
    parser = _Links()
    parser.feed(page)
    local = [x for x in parser.links if not x.startswith(("#", "data:", "http:", "https:"))]
    assert local, "the page links nothing of the run directory"
    return [x for x in local if not (run.root / x).exists()]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunDir, str]:
    run, cfg = _run(tmp_path_factory.mktemp("report"))
    return run, write_report(run, cfg).read_text()


def test_diagnosis_shows_verdict_batches_mode_programs_and_keyframes(report: tuple[RunDir, str]):
    run, page = report
    assert "fails reaching far objects" in page and '<span class=validated>validated</span>' in page
    assert "targeted 75% vs control 25% failures (n = 12 each), p = 0.0123" in page
    assert "mode <b>obj_x_approach_high</b>" in page and "(agreement 0.95)" in page
    assert 'href="programs/round_01/train_obj_x_approach_2.py"' in page
    frames = sorted((run.root / "diagnoses" / "round_01" / "roll_abc_frames").glob("*.png"))
    assert len(frames) >= 2 and all(f'src="{run.rel(f)}"' in page for f in frames)
    img = np.asarray(Image.open(frames[0]))
    assert img.std() > 5  # a rendered scene, not a blank frame


def test_plots_scenes_and_links(report: tuple[RunDir, str]):
    run, page = report
    assert page.count('src="data:image/png;base64,') == 4  # held-out, arms, critic/memory, cost
    assert page.count("<figcaption>pick_place_seed_") == 30  # every scene, caption whole
    assert "pick_place (30 scenes)" in page
    assert _broken(run, page) == []


def test_a_failed_render_is_shown_not_hidden(tmp_path: Path):
    run, cfg = _run(tmp_path)
    (run.root / "episodes" / "round_01" / "roll_abc.npz").unlink()
    page = write_report(run, cfg).read_text()
    assert "keyframes not rendered: FileNotFoundError" in page


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(_chromium() is None, reason="Chromium is not installed (scripts/setup.sh installs it)")
def test_the_page_renders_in_a_headless_browser(report: tuple[RunDir, str], tmp_path: Path):
    run, _ = report
    shot = tmp_path / "shot.png"
    profile = tmp_path / "profile"
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", "--window-size=1280,2400", f"--screenshot={shot}",
           run.report.resolve().as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    img = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert img.shape[0] >= 1000 and img.std() > 10  # text, tables and images, not an empty page
    dom = subprocess.run([*cmd[:-2], "--dump-dom", run.report.resolve().as_uri()], capture_output=True,
                         text=True, timeout=120, check=False).stdout
    assert re.search(r"<h2 id=\"?diagnoses\"?>Diagnoses</h2>", dom) and "obj_x_approach_high" in dom
