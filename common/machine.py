"""What this machine can run: its CPUs, its free memory, and from them how many episode workers (one-thread
spawned processes, each with MuJoCo, numpy and a policy loaded) fit at once. Commands refuse a `--workers`
beyond it with one line instead of spawning until the machine stalls."""

from __future__ import annotations

import os

WORKER_MB = 512  # one episode worker's memory: RSS 248 MB warm (MuJoCo, numpy), 479 MB with torch imported
PER_CPU = 4  # one-thread workers per CPU: more only queue for the same cores


def cpu_count() -> int:
    """CPUs this process may run on (its affinity, which a container or `taskset` narrows)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def available_mb() -> int:
    """Memory free for new processes, MB (`MemAvailable`; the total where /proc is not there)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20


def machine_workers() -> int:
    """The most episode workers this machine runs at once: `PER_CPU` per CPU, and no more than free memory
    holds at `WORKER_MB` each (at least 1)."""
    return max(1, min(PER_CPU * cpu_count(), available_mb() // WORKER_MB))
