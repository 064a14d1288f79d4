"""`coda`: one command for every entry point (installed by `pip install -e .` as a console script).

    coda run --preset smoke --llm rules --out runs/smoke     # = python -m agents.run ...
    coda replay runs/smoke --show 5                          # = python -m agents.replay ...
    coda table1 --preset smoke                               # = python -m experiments.table ...

`coda COMMAND ...` is exactly `python -m MODULE ...` (same options, same exit codes); `coda --help` lists
the commands.
"""

from __future__ import annotations

import difflib
import importlib
import sys

# command → (module, what it does)
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("agents.run", "run the co-evolution loop (or resume a run)"),
    "replay": ("agents.replay", "list a run's checkpoints, show one step, fork a what-if"),
    "table1": ("experiments.table.table1", "Table 1: every method at equal budget on the frozen suites"),
    "bootstrap-cost": ("studies.bootstrap_cost", "a table's kept bootstraps trained again and timed"),
    "ablations": ("experiments.table.ablations", "the Text2potential ablations inside the loop"),
    "ceiling": ("studies.ceiling", "an oracle generator at Table 1's budget"),
    "update-dev": ("studies.update_dev", "the policy updates compared on development scenes"),
    "suites": ("experiments.table.suites", "check (or rebuild) the frozen evaluation suites"),
    "power": ("experiments.table.power", "the verification test's exact power per batch size"),
    "critic-replay": ("studies.critic_replay", "re-diagnose and re-verify a finished run"),
    "liberopro": ("experiments.liberopro.__main__", "the LIBERO / LIBERO-Pro protocol: tasks, success"),
    "liberopro-run": ("experiments.liberopro.run", "a libero run's round policies under the protocol"),
    "sandbox": ("sandbox.run", "run a generation program in the sandbox"),
    "world": ("sim.demo", "the simulated world alone: scenes, validity, expert demos"),
    "aw-round": ("studies.aw_round", "one advantage-weighted round in isolation"),
    "bench-llm": ("bench.agents.llm", "the LLM backends' contract and speed"),
    "bench-critic": ("bench.agents.critic", "the critic against planted causes"),
    "bench-sandbox": ("bench.sandbox", "the sandbox's cost beside the pool without it"),
    "bench-executors": ("bench.executor", "episodes/s of the local pool beside Ray, N-machine estimate"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {what}  (python -m {module})" for name, (module, what) in COMMANDS.items()]
    return "usage: coda COMMAND [OPTIONS ...]   (coda COMMAND --help for its options)\n\ncommands:\n" + \
        "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        close = difflib.get_close_matches(name, COMMANDS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        print(f"coda: unknown command {name!r}{hint}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
