"""What a person watches: `RichReporter` (live progress per node, a line per finished node with its cost, a
summary table per round) and the console tables; the columns are shared with report.html
(`agents.graph.report_page`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from common.cli import console as cli_console

COLUMNS = (  # (header, row → text) of the per-round summary, console and HTML alike
    ("rnd", lambda r: str(r["round"])),
    ("ID", lambda r: _pct(r.get("eval_id"))),
    ("OOD", lambda r: _pct(r.get("eval_ood"))),
    ("b→a", lambda r: f"{_pct(r.get('held_before'))}→{_pct(r.get('held_after'))}"),
    ("acc", lambda r: _accepted(r)),
    ("fail", lambda r: str(len(r["generation"]["slots_failed"])) if "generation" in r else "-"),
    ("dx", lambda r: str(r.get("critic", {}).get("diagnoses", "-"))),
    ("valid", lambda r: str(r.get("critic", {}).get("verdicts", {}).get("validated", "-"))),
    ("ref%", lambda r: _num(r.get("critic", {}).get("refuted_pct"))),
    ("modes", lambda r: str(r.get("critic", {}).get("memory", {}).get("modes", "-"))),
    ("llm/tok", lambda r: _llm(r.get("cost_total", {}))),
    ("steps", lambda r: _num(r.get("cost_total", {}).get("sim_steps"))),
    ("s", lambda r: f"{r.get('cost_total', {}).get('wall_s', 0):.0f}"),
)
LEGEND = ("ID/OOD: held-out success · b→a: success on the arms' measurement scenes before→after the "
          "round's training · acc: accepted training scenes per family · fail: failed slots · dx: "
          "diagnoses · valid: validated · ref%: refuted share · llm/tok: LLM calls/tokens · steps: simulated "
          "control steps · s: wall seconds")


def _llm(c: dict[str, Any]) -> str:
    tok = c.get("tokens_in", 0) + c.get("tokens_out", 0)
    calls = int(c.get("llm_calls", 0))
    return f"{calls}/{tok / 1000:.1f}k" if tok >= 1000 else f"{calls}/{tok}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.1f}" if isinstance(x, float) and not float(x).is_integer() else f"{int(x)}"


def _accepted(r: dict[str, Any]) -> str:
    acc = r.get("generation", {}).get("accepted")
    return "-" if acc is None else "/".join(f"{v}" for v in acc.values())


class RichReporter:
    """Live progress on the console. Use as a context manager around the run."""

    def __init__(self, console: Any = None) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self.console = console or cli_console()
        self.bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                            MofNCompleteColumn(), TimeElapsedColumn(), console=self.console, transient=True)
        self._tasks: list[Any] = []

    def __enter__(self) -> RichReporter:
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()

    def node_start(self, round_no: int, node: str) -> None:
        self._tasks.append(self.bar.add_task(f"round {round_no} · {node}", total=None))

    def progress(self, what: str, total: int) -> Callable[[Any], None]:
        task = self.bar.add_task(f"  {what}", total=total)
        self._tasks.append(task)
        return lambda _=None: self.bar.advance(task)

    def node_end(self, round_no: int, node: str, summary: str, cost: dict[str, float]) -> None:
        for t in self._tasks:
            self.bar.remove_task(t)
        self._tasks.clear()
        parts = [f"{cost.get('wall_s', 0):6.1f} s"]
        if cost.get("llm_calls"):
            tok = int(cost.get("tokens_in", 0) + cost.get("tokens_out", 0))
            parts.append(f"{int(cost['llm_calls'])} LLM calls, {tok} tok")
        if cost.get("sim_steps"):
            parts.append(f"{int(cost['sim_steps'])} sim steps")
        done = " · ".join(parts)
        self.console.print(f"[green]✓[/] round {round_no} · [bold]{node:<9}[/] {done}  [dim]{summary}[/]")

    def log(self, message: str) -> None:
        self.console.print(f"[yellow]![/] {message}")

    def round_end(self, row: dict[str, Any]) -> None:
        self.console.print(summary_table([row]))


def summary_table(rows: list[dict[str, Any]], title: str = "") -> Any:
    """A rich Table of round rows."""
    from rich import box
    from rich.table import Table

    r0 = rows[-1] if rows else {}
    t = Table(title=title or f"{r0.get('method', '')} · round {r0.get('round', '')}", box=box.SIMPLE_HEAD,
              pad_edge=False, padding=(0, 1), collapse_padding=True, show_edge=False,
              caption=LEGEND if title else None, caption_justify="left")
    for name, _ in COLUMNS:
        t.add_column(name, justify="right", no_wrap=True, min_width=max(len(name), 3))
    for r in rows:
        t.add_row(*(fn(r) for _, fn in COLUMNS))
    return t


def cost_table(rows: list[dict[str, Any]]) -> Any:
    """Where each round's time went: a row per node, a column per round, "seconds (LLM calls/tokens,
    simulated steps)" in each cell."""
    from rich import box
    from rich.table import Table

    rounds = [r for r in rows if r.get("cost")]
    nodes = list(dict.fromkeys(n for r in rounds for n in r["cost"]))
    t = Table(title="cost per node: seconds · LLM calls/tokens · sim steps", box=box.SIMPLE_HEAD,
              pad_edge=False, padding=(0, 1), collapse_padding=True, show_edge=False)
    t.add_column("node", no_wrap=True)
    for r in rounds:
        t.add_column(f"round {r['round']}", justify="right", no_wrap=True)
    for node in nodes:
        cells = []
        for r in rounds:
            c = r["cost"].get(node)
            if c is None:
                cells.append("-")
                continue
            parts = [f"{c.get('wall_s', 0):.1f} s"]
            if c.get("llm_calls"):
                parts.append(_llm(c))
            if c.get("sim_steps"):
                parts.append(f"{int(c['sim_steps'])} st")
            cells.append(" · ".join(parts))
        t.add_row(node, *cells)
    return t
