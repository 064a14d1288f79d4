"""Two evaluations of one LIBERO-Pro suite side by side: per task, overall, and the difference with its
95 % intervals two ways — over episodes (each episode a coin: the normal interval of a difference of two
rates) and over tasks (the per-task differences as the sample: a t interval, wider, since the tasks are
what varies most) — and, with `--at-least`, whether a target difference is shown.

    python -m experiments.liberopro.compare BASE.json OTHER.json --at-least 20
    python -m experiments.liberopro.compare docs/results/libero/loop/libero_t1/round0_position_50ep.json \\
        docs/results/libero/loop/libero_r1/round3_position_50ep.json --names bootstrap,r1_round3 --at-least 20

Both files must be finished evaluations (`experiments.liberopro --out` or `experiments.liberopro.run`) of the
same (perturbed) suite at the same episodes per task over the same tasks. A target is "shown" when both
intervals lie at or above it, "measured not to hold" when both lie below it, and "not shown" otherwise.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

from common.cli import comma_list, command_parser

# t_{0.975, df}: a suite has 10 tasks; past 20 the nearest tabled df below, past 30 the normal's
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093,
        20: 2.086, 25: 2.060, 30: 2.042}
Z975 = 1.959964


def t975(df: int) -> float:
    """The 0.975 quantile of Student's t with `df` degrees of freedom (from the table above; the nearest
    tabled df below it past 20, the normal's past 30)."""
    if df < 1:
        raise ValueError("a t interval needs at least two tasks")
    if df in T975:
        return T975[df]
    return Z975 if df > 30 else T975[max(k for k in T975 if k <= df)]


def read(path: Path) -> dict[str, Any]:
    """A finished evaluation file, or a ValueError that says what is wrong with it."""
    try:
        rec = json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(rec, dict) or "tasks_run" not in rec or "episodes_per_task" not in rec:
        raise ValueError(f"{path}: not a finished LIBERO-Pro evaluation (no tasks_run); an unfinished one "
                         "has only its .tasks/ folder — finish it with the command that started it")
    return rec


def compare(base: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """The two evaluations' per-task successes and the difference other − base in percentage points."""
    for key in ("suite", "episodes_per_task"):
        if base.get(key) != other.get(key):
            raise ValueError(f"the files differ in {key}: {base.get(key)} against {other.get(key)}; compare "
                             "evaluations of one suite at one size")
    b = {t["name"]: t for t in base["tasks_run"] if not t.get("skipped")}
    o = {t["name"]: t for t in other["tasks_run"] if not t.get("skipped")}
    if set(b) != set(o):
        raise ValueError(f"the files evaluated different tasks: only in the first {sorted(set(b) - set(o))}, "
                         f"only in the second {sorted(set(o) - set(b))}")
    names = [t["name"] for t in base["tasks_run"] if t["name"] in b]
    tasks = [{"task": n, "base": b[n]["successes"], "other": o[n]["successes"], "episodes": b[n]["episodes"]}
             for n in names]
    if any(o[n]["episodes"] != b[n]["episodes"] for n in names):
        raise ValueError("a task ran a different number of episodes in the two files")
    nb = sum(t["episodes"] for t in tasks)
    sb, so = sum(t["base"] for t in tasks), sum(t["other"] for t in tasks)
    pb, po = sb / nb, so / nb
    diff = 100 * (po - pb)
    se_ep = 100 * math.sqrt(pb * (1 - pb) / nb + po * (1 - po) / nb)
    d = [100 * (t["other"] - t["base"]) / t["episodes"] for t in tasks]
    k = len(d)
    mean = sum(d) / k
    se_task = math.sqrt(sum((x - mean) ** 2 for x in d) / (k - 1) / k) if k > 1 else float("nan")
    half = t975(k - 1) * se_task if k > 1 else float("nan")
    return {"suite": base["suite"], "episodes_per_task": base["episodes_per_task"], "tasks": tasks,
            "episodes": nb, "base_successes": sb, "other_successes": so, "diff_pp": round(diff, 2),
            "over_episodes": {"se_pp": round(se_ep, 2),
                              "interval_pp": [round(diff - Z975 * se_ep, 2), round(diff + Z975 * se_ep, 2)]},
            "over_tasks": {"n": k, "mean_pp": round(mean, 2), "se_pp": round(se_task, 2),
                           "interval_pp": [round(mean - half, 2), round(mean + half, 2)]}}


def verdict(result: dict[str, Any], at_least: float) -> str:
    """Whether other − base ≥ `at_least` pp is shown by both intervals, measured not to hold by both, or
    neither."""
    los = [result[w]["interval_pp"][0] for w in ("over_episodes", "over_tasks")]
    his = [result[w]["interval_pp"][1] for w in ("over_episodes", "over_tasks")]
    if all(lo >= at_least for lo in los):
        return "shown"
    if all(hi < at_least for hi in his):
        return "measured not to hold"
    return "not shown"


def pp(x: float, digits: int = 1) -> str:
    """A signed figure with a typographic minus."""
    return f"{x:+.{digits}f}".replace("-", "−")


def markdown(result: dict[str, Any], names: tuple[str, str], at_least: float | None) -> str:
    nb, no = names
    n = result["episodes_per_task"]
    lines = [f"**{result['suite']}, {n} episodes per task: {no} against {nb}**", "",
             f"| task | {nb} | {no} | difference |", "|---|---|---|---|"]
    lines += [f"| {t['task']} | {t['base']} | {t['other']} | {pp(t['other'] - t['base'], 0)} |"
              for t in result["tasks"]]
    total, sb, so = result["episodes"], result["base_successes"], result["other_successes"]
    share = lambda k: f"{k} ({100 * k / total:.1f} %)"  # noqa: E731
    lines.append(f"| **all (of {total})** | **{share(sb)}** | **{share(so)}** | **{pp(so - sb, 0)}** |")
    e, t = result["over_episodes"], result["over_tasks"]
    span = lambda x: f"[{pp(x['interval_pp'][0])}, {pp(x['interval_pp'][1])}]"  # noqa: E731
    lines += ["", f"{pp(result['diff_pp'])} pp: ± {e['se_pp']:.1f} over episodes (95 % interval {span(e)}), "
              f"± {t['se_pp']:.1f} over the {t['n']} tasks (t interval {span(t)})."]
    if at_least is not None:
        lines.append(f"At least {pp(at_least, 0) if at_least == int(at_least) else pp(at_least)} pp: "
                     f"{verdict(result, at_least)}.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("experiments.liberopro.compare", __doc__)
    ap.add_argument("base", type=Path, help="the evaluation compared against (e.g. the bootstrap's)")
    ap.add_argument("other", type=Path, help="the evaluation compared")
    ap.add_argument("--names", type=comma_list(), help="two labels, base first (default: the file names)")
    ap.add_argument("--at-least", type=float, help="a target difference in percentage points (e.g. 20, or -5 "
                    "for 'no lower than 5 pp below')")
    ap.add_argument("--json", type=Path, help="also write the comparison here")
    a = ap.parse_args(argv)
    if a.names is not None and len(a.names) != 2:
        ap.error(f"--names takes two labels, base first (got {len(a.names)})")
    names = tuple(a.names) if a.names else (a.base.stem, a.other.stem)
    try:
        result = compare(read(a.base), read(a.other))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.at_least is not None:
        result["at_least_pp"], result["verdict"] = a.at_least, verdict(result, a.at_least)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps({"base": str(a.base), "other": str(a.other), "names": names, **result},
                                     indent=1) + "\n")
    print(markdown(result, names, a.at_least), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
