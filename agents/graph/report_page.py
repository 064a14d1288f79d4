"""runs/<name>/report.html: the run as a researcher reads it, rebuilt at the end of every round.

One page, readable offline: the per-round summary; plots embedded as PNG (held-out success per round and
family, success on each arm's measurement scenes before and after the round's training, the critic and
memory per round, seconds per node per round); every diagnosis with the critic's words, its targeted and
control batches, the p-value and the verdict, what it produced (mode, program pair) and the failing
episode's keyframe strip (start, every phase change, end); every accepted scene's thumbnail per round and
family, linked to its scene file; every program written, linked. Images of scenes and keyframes are files
of the run directory, linked relatively, so the page works wherever the run directory is copied.

Keyframes are rendered when the run renders images (`RunConfig.thumbnails`), once per diagnosis, by
re-simulating the recorded episode (`sim.render.save_keyframes`, about a second per episode); a render
that fails is shown on the page with its error, never silently left out.
"""

from __future__ import annotations

import base64
import html
import io
import json
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agents.config import RunConfig
from agents.graph.display import COLUMNS, LEGEND, _num
from agents.graph.rundir import RunDir, read_metrics

CSS = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}td,th{padding:3px 8px;"
       "vertical-align:top}table{border-collapse:collapse}tr:nth-child(even){background:#f4f4f4}"
       "th{text-align:left;background:#e8e8e8}figure{display:inline-block;margin:4px;font-size:11px;"
       "max-width:140px;overflow-wrap:anywhere;vertical-align:top}.strip img{margin-right:2px}"
       ".strip{display:flex;flex-wrap:wrap;width:350px}.strip figure{margin:1px}"
       ".validated{color:#070;font-weight:bold}.refuted{color:#a00}.inconclusive{color:#a60}"
       "nav a{margin-right:1em}.plots img{max-width:100%}.small{font-size:12px;color:#555}")
VERDICTS = ("validated", "refuted", "inconclusive", "unverified")


# ---- plots --------------------------------------------------------------------------------------------
def _png(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _figure(draw: Callable[[Any], None], size: tuple[float, float]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=size, layout="constrained")
    draw(fig)
    return _png(fig)


def plot_heldout(rows: Sequence[dict[str, Any]]) -> str | None:
    """Held-out success per round, per family: ID solid, OOD dashed."""
    fams = list(dict.fromkeys(f for r in rows for f in r.get("eval", {})))
    if not fams:
        return None

    def draw(fig: Any) -> None:
        ax = fig.add_subplot()
        for i, f in enumerate(fams):
            for split, style in (("id", "-"), ("ood", "--")):
                pts = [(r["round"], 100 * r["eval"][f][split]) for r in rows
                       if split in r.get("eval", {}).get(f, {})]
                if pts:
                    ax.plot(*zip(*pts, strict=True), style, marker="o", color=f"C{i}", label=f"{f} {split}")
        ax.set(xlabel="round", ylabel="held-out success (%)", ylim=(-5, 105), title="held-out success")
        ax.set_xticks([r["round"] for r in rows])
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))

    return _figure(draw, (7, 3.6))


def plot_arms(rows: Sequence[dict[str, Any]]) -> str | None:
    """Success on each arm's measurement scenes before and after the round's training, per round."""
    rounds = [r for r in rows if r["round"] > 0 and r.get("arms")]
    if not rounds:
        return None

    def draw(fig: Any) -> None:
        axes = fig.subplots(1, len(rounds), squeeze=False)[0]
        for ax, r in zip(axes, rounds, strict=True):
            arms = r["arms"]
            names = [f"{a['mode']}|{a['family']}" for a in arms]
            y = range(len(arms))
            before = [100 * a["before"] if a["before"] is not None else 0 for a in arms]
            ax.barh([i + 0.2 for i in y], before, height=0.4, label="before", color="C7")
            after = [100 * a["after"] for a in arms]
            ax.barh([i - 0.2 for i in y], after, height=0.4, label="after", color="C0")
            ax.set_yticks(list(y), names, fontsize=7)
            ax.set(xlim=(0, 100), xlabel="success (%)", title=f"round {r['round']}")
            ax.invert_yaxis()
        axes[-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))

    return _figure(draw, (5.2 * len(rounds) + 1, 0.28 * max(len(r["arms"]) for r in rounds) + 1.2))


def plot_critic(rows: Sequence[dict[str, Any]]) -> str | None:
    """Diagnoses by verdict and the memory's modes and programs, per round."""
    rounds = [r for r in rows if r.get("critic", {}).get("diagnoses")]
    if not rounds:
        return None

    def draw(fig: Any) -> None:
        ax = fig.add_subplot()
        xs = [r["round"] for r in rounds]
        bottom = [0.0] * len(rounds)
        colours = {"validated": "C2", "refuted": "C3", "inconclusive": "C1", "unverified": "C7"}
        for v in VERDICTS:
            n = [r["critic"].get("verdicts", {}).get(v, 0) for r in rounds]
            ax.bar(xs, n, bottom=bottom, label=v, color=colours[v], width=0.5)
            bottom = [b + k for b, k in zip(bottom, n, strict=True)]
        for key, style in (("modes", "k-o"), ("programs", "k--s")):
            vals = [r["critic"].get("memory", {}).get(key) for r in rounds]
            if any(v is not None for v in vals):
                ax.plot(xs, [v or 0 for v in vals], style, label=f"{key} in memory")
        ax.set(xlabel="round", ylabel="count", title="diagnoses by verdict; memory")
        ax.set_xticks(xs)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))

    return _figure(draw, (6, 3.2))


def plot_cost(rows: Sequence[dict[str, Any]]) -> str | None:
    """Wall seconds per node per round, stacked."""
    rounds = [r for r in rows if r.get("cost")]
    if not rounds:
        return None
    nodes = list(dict.fromkeys(n for r in rounds for n in r["cost"]))

    def draw(fig: Any) -> None:
        ax = fig.add_subplot()
        xs = [r["round"] for r in rounds]
        bottom = [0.0] * len(rounds)
        for i, n in enumerate(nodes):
            s = [r["cost"].get(n, {}).get("wall_s", 0.0) for r in rounds]
            ax.bar(xs, s, bottom=bottom, label=n, color=f"C{i % 10}", width=0.5)
            bottom = [b + k for b, k in zip(bottom, s, strict=True)]
        ax.set(xlabel="round", ylabel="seconds", title="where each round's time went")
        ax.set_xticks(xs)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))

    return _figure(draw, (6, 3.4))


# ---- diagnoses ----------------------------------------------------------------------------------------
def keyframe_strip(run: RunDir, rec: dict[str, Any], render: bool) -> str:
    """The failing episode's keyframes (rendered once into `<diagnosis>_frames/`), linked."""
    from sim.episode import Episode

    folder = run.abs(rec["_file"]).with_name(Path(rec["_file"]).stem + "_frames")
    pngs = sorted(folder.glob("*.png")) if folder.exists() else []
    if not pngs and render:
        # what a render is expected to meet — no GL stack (RenderError), a missing or unreadable episode, a
        # replay that diverged — is shown on the page; anything else is a bug and stops the run
        try:
            from sim.render import save_keyframes

            save_keyframes(Episode.load(run.abs(rec["episode"])), folder, size=128)
            pngs = sorted(folder.glob("*.png"))
        except (OSError, RuntimeError, ValueError, zipfile.BadZipFile) as e:
            why = html.escape(f"{type(e).__name__}: {e}")
            return f'<span class="small">keyframes not rendered: {why}</span>'
    if not pngs:
        return '<span class="small">no keyframes (images are off in this run: thumbnails=false)</span>'
    frames = "".join(f'<figure><a href="{run.rel(p)}"><img src="{run.rel(p)}" width="112" alt="{p.stem}"></a>'
                     f"<figcaption>{html.escape(p.stem.replace('_', ' ', 1))}</figcaption></figure>"
                     for p in pngs)
    return f'<div class="strip">{frames}</div>'


def _batches(v: dict[str, Any] | None) -> str:
    if not v or v.get("targeted_failure_rate") is None:
        return "-"
    n = v.get("n", "?")
    p = v.get("p_value")
    t, c = 100 * v["targeted_failure_rate"], 100 * v["control_failure_rate"]
    where = "" if v.get("counted") != "named" else " in the diagnosed phase"
    seen = (f"; targeted failures mostly in {v['observed_phase']} ({100 * v['phase_share']:.0f}% in the "
            "diagnosed phase)") if v.get("observed_phase") and v.get("phase_share") is not None else ""
    return (f"targeted {t:.0f}% vs control {c:.0f}% "
            f"failures{where} (n = {n} each)" + (f", p = {p:.3g}" if p is not None else "") + seen)


def _link(run: RunDir, rel: str | None, label: str | None = None) -> str:
    if not rel:
        return ""
    path = run.abs(rel)
    shown = html.escape(label or Path(rel).name)
    return f'<a href="{html.escape(rel)}">{shown}</a>' if path.exists() else shown


def _produced(run: RunDir, rec: dict[str, Any], compiled: Sequence[dict[str, Any]]) -> str:
    mode = rec.get("mode_id")  # written by `remember` when the verdict made or joined a mode
    if not mode:
        return "-"
    mine = [c for c in compiled if c.get("family") == rec["family"] and c.get("mode") == mode]
    parts = [f"mode <b>{html.escape(mode)}</b>" + ("" if mine else " (no program compiled this round)")]
    for c in mine:
        links = [_link(run, c.get(k), k) for k in ("generation", "training") if c.get(k)]
        links += [_link(run, c[k].removesuffix(".json") + ".py", f"{k}.py")
                  for k in ("generation", "training") if c.get(k)]
        agree = c.get("agreement_refined", c.get("agreement"))
        fallback = f" <span class=small>{html.escape(c['fallback'])}</span>" if c.get("fallback") else ""
        shown = f" (agreement {agree:.2f})" if agree is not None else ""
        parts.append(" · ".join(links) + shown + fallback)
    return "<br>".join(parts)


def diagnoses_section(run: RunDir, rows: Sequence[dict[str, Any]], render: bool) -> str:
    compiled = {r["round"]: r.get("critic", {}).get("compiled", []) for r in rows}
    out = []
    for d in sorted((run.root / "diagnoses").glob("round_*")) if (run.root / "diagnoses").exists() else []:
        round_no = int(d.name.split("_")[1])
        recs = []
        for f in sorted(d.glob("*.json")):
            rec = json.loads(f.read_text())
            if "diagnosis" in rec:
                recs.append({**rec, "_file": run.rel(f)})
        if not recs:
            continue
        body = []
        for rec in recs:
            dx, v = rec["diagnosis"], rec.get("verdict") or {}
            status = v.get("status", "unverified")
            edit = ", ".join(f"{k} → {val}" for k, val in (dx.get("edit") or {}).items())
            body.append(
                "<tr>"
                f"<td>{html.escape(rec['family'])}<br>"
                f"<span class=small>{html.escape(rec.get('slot', ''))}</span></td>"
                f"<td><b>{html.escape(dx['factor'])}</b> ({html.escape(dx.get('factor_group', ''))})<br>"
                f"phase {html.escape(dx.get('phase', ''))}, "
                f"side {html.escape(str(dx.get('side') or '-'))}<br>"
                f"<span class=small>edit {html.escape(edit or '-')}</span></td>"
                f"<td>{html.escape(dx.get('explanation', ''))}<br><span class=small>critic "
                f"{html.escape(str(dx.get('critic_id', '')))}, "
                f"confidence {_num(dx.get('confidence'))}</span></td>"
                f"<td><span class={status}>{status}</span><br>{html.escape(_batches(v))}<br>"
                f"<span class=small>{html.escape(v.get('reason', ''))}; verified on "
                f"{html.escape(str(rec.get('verified_on', '-')))}</span></td>"
                f"<td>{_produced(run, rec, compiled.get(round_no, []))}</td>"
                f"<td>{keyframe_strip(run, rec, render)}<span class=small>"
                f"{_link(run, rec['episode'], 'episode')} · {_link(run, rec.get('program'), 'program')} · "
                f"{_link(run, rec['_file'], 'record')}</span></td></tr>")
        out.append(f"<h3 id=dx{round_no}>Round {round_no}: {len(recs)} diagnoses</h3><table><tr>"
                   "<th>family, arm</th><th>diagnosis</th><th>the critic's words</th><th>verification</th>"
                   "<th>produced</th><th>failing episode</th></tr>" + "".join(body) + "</table>")
    return "".join(out) or "<p>No diagnoses in this run (the method does not run the critic, or no rollout " \
                           "failed).</p>"


# ---- scenes and programs ------------------------------------------------------------------------------
def _family_of(stem: str, families: Sequence[str]) -> str:
    """The family a scene file belongs to (its name starts with the family's)."""
    hits = [f for f in families if stem.startswith(f + "_")]
    return max(hits, key=len) if hits else "other"


def scenes_section(run: RunDir, rows: Sequence[dict[str, Any]], families: Sequence[str]) -> str:
    out = []
    for r in rows:
        d = run.root / "scenes" / f"round_{r['round']:02d}"
        if not d.exists():
            continue
        by_family: dict[str, list[Path]] = {}
        for js in sorted(d.glob("*.json")):
            by_family.setdefault(_family_of(js.stem, families), []).append(js)
        parts = []
        for fam, files in by_family.items():
            figs = []
            for js in files:
                png = js.with_suffix(".png")
                img = (f'<img src="{run.rel(png)}" width="128" alt="{html.escape(js.stem)}">' if png.exists()
                       else "<span class=small>no thumbnail</span>")
                figs.append(f'<figure><a href="{run.rel(js)}">{img}</a>'
                            f"<figcaption>{html.escape(js.stem)}</figcaption></figure>")
            parts.append(f"<h4>{html.escape(fam)} ({len(files)} scenes)</h4>{''.join(figs)}")
        out.append(f"<h3>Round {r['round']}</h3>{''.join(parts)}")
    return "".join(out) or "<p>No scene files.</p>"


def rounds_section(rows: Sequence[dict[str, Any]]) -> str:
    """Per round: the arms and their budget, failed slots, and the raw metrics row."""
    out = []
    for r in rows:
        gen = r.get("generation", {})
        out.append(f"<h3>Round {r['round']}</h3><p>arms: {html.escape(', '.join(gen.get('arms', [])) or '-')}"
                   f"</p><p>failed slots: {html.escape('; '.join(gen.get('slots_failed', [])) or 'none')}</p>"
                   f"<details><summary>metrics row</summary><pre>{html.escape(json.dumps(r, indent=1))}</pre>"
                   "</details>")
    return "".join(out)


def programs_section(run: RunDir, rows: Sequence[dict[str, Any]]) -> str:
    out = []
    for r in rows:
        d = run.root / "programs" / f"round_{r['round']:02d}"
        progs = sorted(d.glob("*.py")) if d.exists() else []
        if progs:
            links = " · ".join(f'<a href="{run.rel(p)}">{html.escape(p.name)}</a>' for p in progs)
            out.append(f"<p><b>round {r['round']}</b>: {links}</p>")
    return "".join(out) or "<p>No programs written.</p>"


# ---- the page -----------------------------------------------------------------------------------------
def write_report(run: RunDir, config: RunConfig) -> Path:
    """Write runs/<name>/report.html from metrics.jsonl and the run directory's files."""
    rows = read_metrics(run.metrics)
    head = "".join(f"<th>{html.escape(n)}</th>" for n, _ in COLUMNS)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(fn(r))}</td>" for _, fn in COLUMNS) + "</tr>"
                   for r in rows)
    plots = [(name, make(rows)) for name, make in (("held-out success", plot_heldout),
                                                  ("arms before and after", plot_arms),
                                                  ("critic and memory", plot_critic),
                                                  ("cost per node", plot_cost))]
    imgs = "".join(f'<figure style="max-width:none"><img alt="{name}" src="data:image/png;base64,{b64}">'
                   f"<figcaption>{name}</figcaption></figure>" for name, b64 in plots if b64)
    totals = {v: sum(r.get("critic", {}).get("verdicts", {}).get(v, 0) for r in rows) for v in VERDICTS}
    lead = (f"{len(rows) - 1 if rows else 0} round(s) after the bootstrap · diagnoses: "
            + ", ".join(f"{n} {v}" for v, n in totals.items() if n) if any(totals.values())
            else f"{max(len(rows) - 1, 0)} round(s) after the bootstrap · no diagnoses")
    page = (f"<!doctype html><html lang=en><meta charset=utf-8><title>CoDA run {html.escape(run.root.name)}"
            f"</title><style>{CSS}</style>"
            f"<h1>CoDA run {html.escape(run.root.name)} · {html.escape(config.method)}</h1>"
            f"<p>preset {html.escape(config.preset)} · llm {html.escape(config.llm)} · families "
            f"{html.escape(', '.join(config.families))} · budget {config.budget}/family/round · "
            f"{html.escape(lead)}"
            "</p><nav><a href=#summary>summary</a><a href=#plots>plots</a><a href=#diagnoses>diagnoses</a>"
            "<a href=#rounds>rounds</a><a href=#scenes>scenes</a><a href=#programs>programs</a>"
            "<a href=#config>config</a></nav>"
            f"<h2 id=summary>Summary</h2><table><tr>{head}</tr>{body}</table>"
            f"<p class=small>{html.escape(LEGEND)}</p>"
            f"<h2 id=plots>Plots</h2><div class=plots>{imgs or '<p>No rounds yet.</p>'}</div>"
            f"<h2 id=diagnoses>Diagnoses</h2>{diagnoses_section(run, rows, config.thumbnails)}"
            f"<h2 id=rounds>Rounds</h2>{rounds_section(rows)}"
            f"<h2 id=scenes>Scenes</h2>{scenes_section(run, rows, config.families)}"
            f"<h2 id=programs>Programs</h2>{programs_section(run, rows)}"
            f"<h2 id=config>Config</h2><pre>{html.escape(config.to_json())}</pre></html>")
    run.report.write_text(page)
    return run.report
