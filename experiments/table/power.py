"""The verification test's power, exactly: the probability that the one-sided Fisher exact test of the
`verify` node (`agents.critic.verify.decide`) validates a diagnosis whose targeted batch truly fails at rate
`pt` and whose control batch at rate `pc`, with `n` episodes each, at significance `alpha` — and the
probability it labels it *refuted* (the increase bounded below `VerifyConfig.min_effect`). Binomial
outcomes are enumerated through the node's own `decide`; nothing is simulated.

    python -m experiments.table.power [--alpha 0.1] [--n 3,6,12,24]
"""

from __future__ import annotations

from math import comb

from agents.critic.verify import VerifyConfig, decide
from common.cli import comma_list, command_parser

# real contrasts, then true nulls (no effect: "validated" here is the test's false-positive rate)
CONTRASTS = ((0.9, 0.1), (0.8, 0.3), (0.7, 0.4), (0.6, 0.5), (0.3, 0.3), (0.1, 0.1), (1.0, 1.0), (0.0, 0.0))


def binom(k: int, n: int, p: float) -> float:
    return comb(n, k) * p**k * (1 - p) ** (n - k)


def verdict_rates(pt: float, pc: float, n: int, alpha: float) -> dict[str, float]:
    """P(validated), P(refuted), P(inconclusive) for true failure rates `pt` (targeted), `pc` (control)."""
    v = VerifyConfig()
    cfg = VerifyConfig(alpha=alpha, min_valid=max(1, min(v.min_valid, n)), min_effect=v.min_effect)
    out = {"validated": 0.0, "refuted": 0.0, "inconclusive": 0.0}
    for t in range(n + 1):
        for c in range(n + 1):
            out[decide("d", t, n, c, n, cfg).status] += binom(t, n, pt) * binom(c, n, pc)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("experiments.table.power", __doc__)
    ap.add_argument("--alpha", type=float, default=0.1, help="significance (the loop's verify_alpha: 0.1)")
    ap.add_argument("--n", type=comma_list(int), default=[3, 6, 12, 24],
                    help="episodes per batch, comma-separated (default 3,6,12,24)")
    a = ap.parse_args(argv)
    head = "| true targeted vs control failure | " + " | ".join(f"n = {n}" for n in a.n) + " |"
    print(f"P(validated) / P(refuted), one-sided Fisher exact, alpha = {a.alpha}\n")
    print(head + "\n|---|" + "---|" * len(a.n))
    for pt, pc in CONTRASTS:
        cells = []
        for n in a.n:
            r = verdict_rates(pt, pc, n, a.alpha)
            cells.append(f"{r['validated']:.2f} / {r['refuted']:.2f}")
        print(f"| {pt:.1f} vs {pc:.1f} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
