"""Benchmarks, apart from product code: `python -m agents.bench.critic` (how often each critic names the
factor that caused a failure) and `python -m agents.bench.llm` (the embedded models on the agents'
structured calls)."""
