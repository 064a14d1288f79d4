"""Torch intra-op threads: one setting per process role, each with the measurement behind it (on the 2
shared CPU cores every role runs on).

- training in the main process: `ObjectTokenConfig.torch_threads`, default `TRAIN_THREADS` — the agents
  loop's `PolicyTrainer` and `coda_policy.sft` read it from the policy config; `studies.aw_round` (a
  separate experiment script) keeps its own `--threads`, with the same default;
- policy inference in episode-pool workers (wherever a policy factory is called: `SeededPolicy`,
  `QSelectFactory`, `CheckpointPolicy`), and the latency `coda_policy.sft` reports: `WORKER_THREADS`
  (`sim.pool` also pins OpenMP/OpenBLAS/MKL to one thread in every worker).
"""

from __future__ import annotations

# 1, not 2: on shared, oversubscribed cores two OpenMP threads measured 10x slower than one (they spin at
# every barrier)
TRAIN_THREADS = 1
# 1, not 2: with two pool workers on the two cores, one policy inference (a fresh `select_action` plan of
# the default policy) measured 18–25 ms per worker with 1 thread each and 69–112 ms with 2 (4–5x slower)
WORKER_THREADS = 1
