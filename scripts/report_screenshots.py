"""Screenshots of a run's report.html in headless Chromium: the top, the plots and the diagnoses.

    .venv/bin/python scripts/report_screenshots.py runs/demo --out docs
    # → docs/report_top.png, docs/report_plots.png, docs/report_diagnoses.png

Chromium comes from `scripts/setup.sh` (Debian's `chromium`). A section is shot from a temporary copy of
the page that starts at that section's heading (same folder, so its images load; deleted afterwards):
loading the page at the anchor scrolls before the plots' images have their size, which leaves the shot
blank.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SECTIONS = {"top": None, "plots": "plots", "diagnoses": "diagnoses"}


def section_page(report: Path, section: str) -> Path:
    """A copy of `report` whose body starts at `<h2 id=section>` (the head and its styles kept), beside it."""
    html = report.read_text(encoding="utf-8")
    body = html.index("</style>") + len("</style>")  # the page omits <body>: its content follows the head
    at = html.find(f"<h2 id={section}>")
    if at < 0:
        raise SystemExit(f"{report} has no section {section!r}")
    page = report.with_name(f".shot_{section}.html")
    page.write_text(html[:body] + html[at:], encoding="utf-8")
    return page


def shoot(report: Path, out: Path, width: int = 1280, height: int = 1600) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("Chromium is not installed: bash scripts/setup.sh installs it")
    with tempfile.TemporaryDirectory(prefix="coda-shot-") as profile:
        cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", f"--window-size={width},{height}", f"--screenshot={out}",
               "--virtual-time-budget=10000", report.resolve().as_uri()]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0 or not out.exists():
        raise SystemExit(f"chromium failed on {report}: {done.stderr[-1000:]}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, help="a run directory with report.html")
    ap.add_argument("--out", type=Path, default=Path("docs"), help="where the PNGs go (default docs/)")
    ap.add_argument("--prefix", default="report", help="file name prefix (default report)")
    a = ap.parse_args(argv)
    report = a.run / "report.html"
    if not report.is_file():
        ap.error(f"{report} does not exist: is {a.run} a run directory?")
    a.out.mkdir(parents=True, exist_ok=True)
    for name, section in SECTIONS.items():
        path = a.out / f"{a.prefix}_{name}.png"
        page = section_page(report, section) if section else report
        try:
            shoot(page, path)
        finally:
            if page != report:
                page.unlink(missing_ok=True)
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
