"""Measurement tools, apart from the product: each times or scores a part of the product on its own and
prints (or, with `--json`/`--out`, writes) what it measured. Nothing in the product imports them.

    python -m bench.sim          simulator steps/s, render ms/frame, episode-pool episodes/s (`make bench`)
    python -m bench.experts      expert success per family, in and out of distribution (`make experts`)
    python -m bench.executor     the local pool beside Ray: episodes/s, per-task overhead, N-machine estimate
    python -m bench.programs     potential throughput and agreement of the seed training programs
    python -m bench.sandbox      the sandbox's per-program cost, with and without the kernel boundary
    bench/agents/                the critic against planted causes and counterfactual truth, the writers,
                                 the LLM backends' speed and the server's prompt cache
"""
