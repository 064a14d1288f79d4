"""Recorded prompts replayed through the embedded model, with and without the server's prompt cache.

    python -m bench.agents.prompt_cache                                  # the committed demo prompts
    python -m bench.agents.prompt_cache --prompts runs/demo/llm_calls.jsonl [--calls 12]
    python -m bench.agents.prompt_cache --prompts runs/demo/llm_calls.jsonl --save FILE   # a new prompt set

Two servers of the same model run side by side, one with `LocalConfig.prompt_cache` (states kept in RAM,
a call starts from the cached state with the longest common prefix) and one without (llama.cpp then reuses
only the previous call's KV cache). Each recorded call goes to both, alternating which goes first, in the
order the run made them (critic and writer prompts interleaved, as in a round), so both see the same
machine load. Printed per configuration: seconds per call and prompt tokens actually evaluated (read from
the server's log), median and p90, side by side, and whether the two answered alike (temperature 0: a
cached prefix changes the arithmetic's batching, which may change a greedy answer). `--out` writes the
figures as JSON.

A prompt set is JSON lines of `{"prompt_name", "system", "user", "schema", "max_tokens"}`; `--prompts`
also reads a run's `llm_calls.jsonl` (its texts from `llm_texts/` beside it; calls answered from the
response cache are skipped: they never reached the model).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agents.graph.rundir import write_json
from agents.llm.base import Completion, LLMError, Request
from agents.llm.local import LocalCompleter, LocalConfig
from agents.llm.store import CallLog
from common.cli import command_parser
from common.markdown import md_table

PROMPTS = Path(__file__).parent / "fixtures" / "demo_prompts.jsonl"


def schemas() -> dict[str, type[BaseModel]]:
    """The answer schemas of the loop's structured calls, by class name (what a call log records)."""
    from agents.critic.diagnose import DiagnosisOut
    from agents.writers.answers import SubgoalsOut
    from agents.writers.generation import GenerationOut

    return {m.__name__: m for m in (DiagnosisOut, GenerationOut, SubgoalsOut)}


def load_prompts(path: Path) -> list[dict[str, Any]]:
    """A prompt set, or the model calls of a run's call log (with their texts)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not rows or "system" in rows[0]:
        return rows
    log = CallLog(path)
    out = []
    for r in rows:
        texts = r.get("texts") or {}
        if r.get("cache_hit") or "system" not in texts or "user" not in texts:
            continue
        system, user = log.text(texts["system"]), log.text(texts["user"])
        if system is None or user is None:
            raise SystemExit(f"{path}: the texts of call {r.get('prompt_hash')} are missing from "
                             f"{log.texts_dir}; a log written before texts were kept cannot be replayed")
        out.append({"prompt_name": r["prompt_name"], "system": system, "user": user,
                    "schema": r.get("schema"),
                    # logs before max_tokens was recorded: twice the answer's length, at least 512
                    "max_tokens": r.get("max_tokens") or max(512, 2 * int(r.get("tokens_out") or 256))})
    return out


def request(row: dict[str, Any], known: dict[str, type[BaseModel]]) -> Request:
    schema = row.get("schema")
    if schema is not None and schema not in known:
        raise SystemExit(f"unknown answer schema {schema!r}; known: {', '.join(known)}")
    return Request(prompt_name=row["prompt_name"], system=row["system"], user=row["user"],
                   schema=known[schema] if schema else None, max_tokens=int(row["max_tokens"]))


def _call(completer: LocalCompleter, req: Request) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        c: Completion | None = completer.complete(req)
        error = None
    except LLMError as e:
        c, error = None, f"{type(e).__name__}: {str(e)[:200]}"
    return {"s": round(time.perf_counter() - t0, 3), "tokens_in": c.tokens_in if c else None,
            "evaluated": c.tokens_evaluated if c else None, "answer": c.text if c else None, "error": error}


def quantiles(xs: Sequence[float]) -> dict[str, float]:
    xs = sorted(xs)
    if not xs:
        return {"median": float("nan"), "p90": float("nan"), "total": 0.0}
    p90 = xs[min(len(xs) - 1, round(0.9 * (len(xs) - 1)))]
    return {"median": float(statistics.median(xs)), "p90": float(p90), "total": float(sum(xs))}


def run(rows: list[dict[str, Any]], threads: int, log: Any = print) -> dict[str, Any]:
    known = schemas()
    reqs = [request(r, known) for r in rows]
    names = ("no_prompt_cache", "prompt_cache")
    completers = {n: LocalCompleter(LocalConfig(n_threads=threads, prompt_cache=n == "prompt_cache"))
                  for n in names}
    calls: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    try:
        for n in names:
            completers[n].start()  # model load is not a call's cost
        for i, req in enumerate(reqs):
            order = names if i % 2 == 0 else names[::-1]
            for n in order:
                calls[n].append(_call(completers[n], req) | {"prompt_name": req.prompt_name})
            a, b = (calls[n][-1] for n in names)
            log(f"{i + 1:3d}/{len(reqs)} {req.prompt_name:22s} tokens {a['tokens_in']}: "
                f"{a['s']:6.1f} s ({a['evaluated']} evaluated) without, {b['s']:6.1f} s "
                f"({b['evaluated']} evaluated) with the prompt cache")
    finally:
        for c in completers.values():
            c.close()
    out: dict[str, Any] = {"calls": len(reqs), "threads": threads, "configs": {}}
    for n in names:
        cs = calls[n]
        out["configs"][n] = {"seconds": quantiles([c["s"] for c in cs]),
                             "evaluated": quantiles([c["evaluated"] for c in cs
                                                     if c["evaluated"] is not None]),
                             "prompt_tokens": quantiles([c["tokens_in"] for c in cs if c["tokens_in"]]),
                             "errors": sum(c["error"] is not None for c in cs), "per_call": cs}
    same = sum(a["answer"] == b["answer"] for a, b in zip(*(calls[n] for n in names), strict=True))
    out["same_answer"] = same
    s0, s1 = (out["configs"][n]["seconds"]["median"] for n in names)
    out["median_speedup"] = round(s0 / s1, 2) if s1 > 0 else None
    return out


def table(res: dict[str, Any]) -> str:
    header = ("configuration", "s/call median", "s/call p90", "total s", "evaluated tokens median", "p90",
              "prompt tokens median", "errors")
    lines = md_table(header, [
        (n, f"{c['seconds']['median']:.1f}", f"{c['seconds']['p90']:.1f}", f"{c['seconds']['total']:.0f}",
         f"{c['evaluated']['median']:.0f}", f"{c['evaluated']['p90']:.0f}",
         f"{c['prompt_tokens']['median']:.0f}", c["errors"])
        for n, c in res["configs"].items()])
    lines.append(f"\n{res['calls']} recorded calls, {res['threads']} threads; median speed-up "
                 f"{res['median_speedup']}×; same answer with and without the cache: {res['same_answer']} of "
                 f"{res['calls']}.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("bench.agents.prompt_cache", __doc__)
    ap.add_argument("--prompts", type=Path, default=PROMPTS,
                    help="a prompt set (JSON lines) or a run's llm_calls.jsonl (default: the committed "
                    "demo set)")
    ap.add_argument("--calls", type=int, help="replay only the first N calls")
    ap.add_argument("--threads", type=int, default=2, help="llama.cpp threads per server (default 2)")
    ap.add_argument("--save", type=Path,
                    help="write the (first N) calls as a self-contained prompt set and stop")
    ap.add_argument("--out", type=Path, help="write the figures as JSON here")
    a = ap.parse_args(argv)
    if not a.prompts.is_file():
        ap.error(f"--prompts {a.prompts} does not exist")
    if a.calls is not None and a.calls < 1:
        ap.error("--calls must be >= 1")
    rows = load_prompts(a.prompts)[: a.calls]
    if not rows:
        ap.error(f"{a.prompts} holds no call that reached the model")
    if a.save:
        a.save.parent.mkdir(parents=True, exist_ok=True)
        a.save.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows), encoding="utf-8")
        print(f"{len(rows)} calls → {a.save}")
        return 0
    res = run(rows, a.threads)
    res["prompts"] = str(a.prompts)
    print(table(res))
    if a.out:
        write_json(a.out, res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
