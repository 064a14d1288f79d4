"""Summaries of a demo run: a table in the terminal, `summary.md`/`summary.json`, `metrics.jsonl`, a
contact sheet of scene thumbnails (`contact_sheet.png`) and a browsable `report.html`."""

from __future__ import annotations

import html
import json
from collections import defaultdict
from pathlib import Path

from common.cli import console as cli_console
from common.markdown import md_table


def family_table(rows: list[dict]) -> list[dict]:
    """Per family and split: scenes, valid, expert success, and the failures with their phase."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["family"], "ood" if r["ood"] else "id")].append(r)
    out = []
    for (fam, split), rs in sorted(groups.items()):
        fails = [f"{r['seed']}:{r.get('failing_phase') or r.get('reason')}" for r in rs if not r["success"]]
        out.append(
            {
                "family": fam,
                "split": split,
                "scenes": len(rs),
                "valid": sum(r["valid"] for r in rs),
                "expert_success": sum(r["success"] for r in rs),
                "failures": fails,
            }
        )
    return out


def write_summary(out: Path, rows: list[dict], seconds: float) -> None:
    from rich.table import Table

    table = family_table(rows)
    t = Table(title=f"{out.name}: scenes validated and solved by the experts ({seconds:.0f} s)")
    for c in ("family", "split", "scenes", "valid", "expert success", "failures (seed:phase)"):
        t.add_column(c)
    for r in table:
        pct = 100.0 * r["expert_success"] / max(r["scenes"], 1)
        t.add_row(
            r["family"],
            r["split"],
            str(r["scenes"]),
            str(r["valid"]),
            f"{r['expert_success']} ({pct:.0f}%)",
            ", ".join(r["failures"]) or "-",
        )
    cli_console().print(t)
    (out / "summary.json").write_text(
        json.dumps({"seconds": round(seconds, 1), "families": table, "scenes": rows}, indent=1)
    )
    md = md_table(("family", "split", "scenes", "valid", "expert success", "failures"),
                  [(r["family"], r["split"], r["scenes"], r["valid"], r["expert_success"],
                    ", ".join(r["failures"]) or "-") for r in table])
    (out / "summary.md").write_text("\n".join(md) + "\n")
    with (out / "metrics.jsonl").open("a") as f:
        for r in table:
            f.write(json.dumps({"round": 0, **r}) + "\n")
    sheet = contact_sheet(out, rows)
    _html(out, table, rows, sheet)
    print(f"wrote {out}/summary.md, report.html" + (f", {sheet.name}" if sheet else ""))


def contact_sheet(out: Path, rows: list[dict], cols: int = 6) -> Path | None:
    """One picture of every scene, captioned with family, split and outcome."""
    shots = [r for r in rows if r.get("thumbnail")]
    if not shots:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    n_rows = (len(shots) + cols - 1) // cols
    fig, axes = plt.subplots(n_rows, cols, figsize=(2.4 * cols, 2.6 * n_rows), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for ax, r in zip(axes.flat, shots, strict=False):
        ax.imshow(Image.open(out / r["thumbnail"]))
        mark = "solved" if r["success"] else f"failed: {r.get('failing_phase') or r.get('reason')}"
        ax.set_title(
            f"{r['family']} {'OOD' if r['ood'] else 'ID'} #{r['seed']}\n{mark}",
            fontsize=8,
            color="black" if r["success"] else "crimson",
        )
    fig.tight_layout()
    path = out / "contact_sheet.png"
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def _html(out: Path, table: list[dict], rows: list[dict], sheet: Path | None) -> None:
    e = html.escape
    trs = "".join(
        f"<tr><td>{e(r['family'])}</td><td>{r['split']}</td><td>{r['scenes']}</td><td>{r['valid']}</td>"
        f"<td>{r['expert_success']}</td><td>{e(', '.join(r['failures']) or '-')}</td></tr>"
        for r in table
    )
    cards = "".join(
        f"<figure><img src='{e(r['thumbnail'])}' width=192><figcaption><b>{e(r['family'])}</b> "
        f"{'OOD' if r['ood'] else 'ID'} #{r['seed']}: {e(r['instruction'])}<br>"
        f"{'solved' if r['success'] else 'failed: ' + e(str(r.get('failing_phase') or r.get('message')))}"
        f"</figcaption></figure>"
        for r in rows
        if r.get("thumbnail")
    )
    (out / "report.html").write_text(
        "<!doctype html><meta charset=utf-8><title>CoDA run</title><style>body{font-family:sans-serif}"
        "figure{display:inline-block;width:200px;vertical-align:top;font-size:12px}"
        "td,th{padding:2px 8px}</style>"
        f"<h1>{e(out.name)}</h1><table><tr><th>family<th>split<th>scenes<th>valid<th>expert success"
        f"<th>failures</tr>{trs}</table>{cards}"
    )
