"""Every bad-input case of issue #11 for the command-line tools, with what each must answer.

`tests/test_bad_input.py` runs them in-process (fast); `python -m tests.cli_cases --write docs/bad_input.md`
runs each as a real subprocess, as a user would, and writes the table (command, exit code, message).

A case's command may name `{run}` (a real run directory after its bootstrap, made fresh for the case and
then damaged by the case's `damage`), `{tmp}` (a scratch directory), `{file}` (an ordinary file) and
`{bin}` (a binary file).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from common.cli import command_parser

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Case:
    id: str
    module: str
    args: str  # shell-quoted, with placeholders
    code: int  # expected exit code
    says: str  # a substring the message must contain
    damage: str = ""  # what to do to {run} first (see `_damage`)
    unchanged: bool = False  # {run} must be byte-identical afterwards (nothing written)


CASES = [
    # agents.run: a fresh run
    Case("preset_typo", "agents.run", "--preset defualt --out {tmp}/r", 2, "Did you mean"),
    Case("method_typo", "agents.run", "--preset smoke --method codaa --out {tmp}/r", 2, "Did you mean"),
    Case("family_typo", "agents.run", "--preset smoke --families pick_plac --out {tmp}/r", 2, "Did you mean"),
    Case("config_missing", "agents.run", "--config {tmp}/nope.json --out {tmp}/r", 2, "cannot read"),
    Case("config_not_json", "agents.run", "--config {bin} --out {tmp}/r", 2, "not JSON"),
    Case("config_a_list", "agents.run", "--config {tmp}/list.json --out {tmp}/r", 2, "JSON object"),
    Case("out_is_a_file", "agents.run", "--preset smoke --llm rules --out {file}", 2, "is a file"),
    Case("out_not_writable", "agents.run", "--preset smoke --llm rules --out /proc/coda/run", 2,
         "cannot write the run directory"),
    Case("openai_without_url", "agents.run", "--preset smoke --llm openai --out {tmp}/r", 2, "--base-url"),
    Case("openai_bad_url", "agents.run",
         "--preset smoke --llm openai --base-url ftp://host --model m --out {tmp}/r", 2, "http(s) URL"),
    Case("openai_unreachable", "agents.run",
         "--preset smoke --llm openai --base-url http://127.0.0.1:9/v1 --model m --out {tmp}/r", 2,
         "cannot reach the endpoint"),
    Case("replay_without_file", "agents.run", "--preset smoke --llm replay --out {tmp}/r", 2,
         "--replay-file"),
    Case("replay_file_missing", "agents.run",
         "--preset smoke --llm replay --replay-file {tmp}/none.json --out {tmp}/r", 2, "does not exist"),
    Case("resume_replay_file_missing", "agents.run", "--resume --out {run}", 2, "--replay-file",
         damage="config_replay", unchanged=True),
    Case("workers_negative", "agents.run", "--preset smoke --llm rules --workers -1 --out {tmp}/r", 2,
         "workers >= 0"),
    Case("ray_address_unreachable", "agents.run",
         "--preset smoke --llm rules --ray-address 127.0.0.1:9 --out {tmp}/r", 2, "nothing answers there"),
    Case("ray_address_garbled", "agents.run", "--preset smoke --llm rules --executor ray --ray-address head "
         "--out {tmp}/r", 2, "local, auto or HOST:PORT"),
    Case("executor_typo", "agents.run", "--preset smoke --llm rules --executor rey --out {tmp}/r", 2,
         "unknown executor 'rey'"),
    Case("device_typo", "agents.run", "--preset smoke --llm rules --device gpu --out {tmp}/r", 2,
         "device must be one of cpu, cuda, cuda:N, auto"),
    Case("device_missing", "agents.run", "--preset smoke --llm rules --device cuda:99 --out {tmp}/r", 2,
         "--device: device 'cuda:99' asked for"),
    Case("rollout_device_missing", "agents.run",
         "--preset smoke --llm rules --rollout-device cuda:99 --out {tmp}/r", 2,
         "--rollout-device: device 'cuda:99' asked for"),
    Case("rounds_negative", "agents.run", "--preset smoke --llm rules --rounds -1 --out {tmp}/r", 2,
         "rounds >= 0"),
    Case("init_policy_missing", "agents.run",
         "--preset smoke --llm rules --init-policy {tmp}/p.pt --out {tmp}/r", 2, "no policy checkpoint"),
    Case("init_policy_pickled", "agents.run",
         "--preset smoke --llm rules --init-policy {tmp}/old.pt --out {tmp}/r", 2,
         "convert it once with `python -m coda_policy.convert"),
    Case("init_policy_not_a_checkpoint", "agents.run",
         "--preset smoke --llm rules --init-policy {bin} --out {tmp}/r", 2,
         "is not a .safetensors checkpoint"),
    Case("init_policy_without_room_for_the_extended_space", "agents.run",
         "--preset quickstart --llm rules --space extended --out {tmp}/r", 2,
         "has room for 16 object tokens, and a scene of the extended space can hold 20"),
    Case("out_holds_a_run", "agents.run", "--preset smoke --llm rules --out {run}", 2, "--resume",
         unchanged=True),
    # agents.run --resume: nothing is rewritten unless everything can be read
    Case("resume_without_out", "agents.run", "--resume", 2, "--out"),
    Case("resume_missing_dir", "agents.run", "--resume --out {tmp}/none", 2, "does not exist"),
    Case("resume_config_a_list", "agents.run", "--resume --rounds 2 --out {run}", 2, "JSON object",
         damage="config_list", unchanged=True),
    Case("resume_config_garbage", "agents.run", "--resume --rounds 2 --out {run}", 2, "not JSON",
         damage="config_garbage", unchanged=True),
    Case("resume_trace_truncated", "agents.run", "--resume --rounds 2 --out {run}", 2,
         "not a readable checkpoint database", damage="trace_truncated", unchanged=True),
    Case("resume_policy_deleted", "agents.run", "--resume --rounds 2 --out {run}", 2,
         "policy/round_00.safetensors", damage="policy_deleted", unchanged=True),
    Case("resume_changes_method", "agents.run", "--resume --method scalar --out {run}", 2, "only --rounds",
         unchanged=True),
    # a run written when its method name meant another configuration (FINDINGS #28 made `coda` sparse)
    Case("resume_method_redefined", "agents.run", "--resume --rounds 2 --out {run}", 2,
         'set "method": "coda_text2potential"', damage="method_redefined", unchanged=True),
    # agents.replay
    Case("replay_missing_dir", "agents.replay", "{tmp}/none", 2, "not a run directory"),
    Case("replay_not_a_run", "agents.replay", "{tmp}", 2, "no checkpoints"),
    Case("replay_trace_garbage", "agents.replay", "{run}", 2, "not a readable checkpoint database",
         damage="trace_truncated", unchanged=True),
    Case("replay_config_garbage", "agents.replay", "{run}", 2, "not JSON", damage="config_garbage",
         unchanged=True),
    Case("replay_unknown_step", "agents.replay", "{run} --show 999", 2, "no checkpoint", unchanged=True),
    Case("replay_fork_into_existing", "agents.replay", "{run} --fork 2 --out {tmp}", 2, "exists",
         unchanged=True),
    # sandbox.run
    Case("sandbox_missing_file", "sandbox.run", "{tmp}/nope.py", 2, "no program"),
    Case("sandbox_directory", "sandbox.run", "{tmp}", 2, "is a directory"),
    Case("sandbox_binary", "sandbox.run", "{bin}", 2, "not UTF-8"),
    Case("sandbox_factors_not_json", "sandbox.run", "{file} --factors {{bad", 2, "not JSON"),
    Case("sandbox_factors_a_list", "sandbox.run", "{file} --factors [1]", 2, "JSON object"),
    Case("sandbox_preset_typo", "sandbox.run", "{file} --preset defualt", 2, "Did you mean"),
    # experiments.table.table1
    Case("table_preset_typo", "experiments.table.table1", "--preset defualt", 2, "Did you mean"),
    Case("table_method_typo", "experiments.table.table1", "--preset smoke --methods codaa", 2,
         "Did you mean"),
    Case("table_workers_zero", "experiments.table.table1", "--preset smoke --workers 0", 2, "at least 1"),
    Case("table_ray_unreachable", "experiments.table.table1", "--preset smoke --ray-address 127.0.0.1:9", 2,
         "nothing answers there"),
    # studies.bootstrap_cost
    Case("bootcost_preset_typo", "studies.bootstrap_cost", "--preset timd", 2, "Did you mean"),
    Case("bootcost_no_kept_bootstrap", "studies.bootstrap_cost",
         "--preset smoke --seeds 0, --results {tmp}", 2, "no kept bootstrap for seed 0"),
    Case("convert_not_a_checkpoint", "coda_policy.convert", "{bin}", 2, "not a torch checkpoint"),
    Case("convert_missing", "coda_policy.convert", "{tmp}/none.pt", 2, "no such file"),
]

PROGRAM = '''
from sim.scene import ObjectSpec, Predicate, SceneSpec

def generate(rng, **factors):
    cube = ObjectSpec(name="cube", kind="box", category="cube", size=(0.02, 0.02, 0.02), pos=(0.0, 0.0))
    return SceneSpec(family="pick_place", instruction="lift the cube", objects=(cube,),
                     goal=(Predicate(fn="lifted", args=("cube", 0.1)),))
'''


def make_run(root: Path) -> Path:
    """A real run directory after its bootstrap (smoke preset, the torch-free test trainer): config.json,
    trace.sqlite with checkpoints, policy/round_00.safetensors."""
    from agents.graph.deps import open_deps
    from tests.agents.graphkit import config, run_graph
    from tests.fakes.trainer import FakeTrainer

    cfg = dataclasses.replace(config("sft"), rounds=0)
    root.mkdir(parents=True)
    with open_deps(cfg, root, trainer=FakeTrainer(1.0)) as deps:
        run_graph(deps)
    (root / "config.json").write_text(cfg.to_json())
    return root


def _damage(run: Path, how: str) -> None:
    if how == "config_list":
        (run / "config.json").write_text("[1, 2, 3]")
    elif how == "config_garbage":
        (run / "config.json").write_text('{"rounds": 2, "fami')
    elif how == "trace_truncated":
        data = (run / "trace.sqlite").read_bytes()
        for extra in ("trace.sqlite-wal", "trace.sqlite-shm"):
            (run / extra).unlink(missing_ok=True)
        (run / "trace.sqlite").write_bytes(data[:100])
    elif how == "config_replay":
        cfg = json.loads((run / "config.json").read_text())
        (run / "config.json").write_text(json.dumps({**cfg, "llm": "replay"}))
    elif how == "method_redefined":  # as if written when `coda` meant the Text2potential configuration
        from agents.config import METHODS

        then = {**dataclasses.asdict(METHODS.get("coda")), "shaping": "text2potential"}
        cfg = json.loads((run / "config.json").read_text())
        (run / "config.json").write_text(json.dumps({**cfg, "method": "coda", "method_config": then}))
    elif how == "policy_deleted":
        (run / "policy" / "round_00.safetensors").unlink()
    elif how:
        raise ValueError(f"unknown damage {how!r}")


def tree_digest(root: Path) -> str:
    """A digest of every file's path and bytes under `root` (to show nothing was written)."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(root)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


@dataclass
class Prepared:
    argv: list[str]
    run: Path | None


def prepare(case: Case, tmp: Path, make: Callable[[Path], Path] = make_run) -> Prepared:
    """The scratch files a case names, and the argv with placeholders filled in."""
    (tmp / "list.json").write_text("[1, 2, 3]")
    (tmp / "program.py").write_text(PROGRAM)
    (tmp / "blob.bin").write_bytes(bytes(range(256)) * 8)
    (tmp / "old.pt").write_bytes(b"PK\x03\x04" + bytes(60))  # what torch.save wrote: a zip container
    run = None
    if "{run}" in case.args:
        run = make(tmp / "run")
        _damage(run, case.damage)
    text = case.args.replace("{tmp}", str(tmp)).replace("{file}", str(tmp / "program.py")).replace(
        "{bin}", str(tmp / "blob.bin")).replace("{run}", str(run))
    return Prepared(shlex.split(text), run)


def run_subprocess(case: Case, argv: list[str]) -> tuple[int, str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(Path.home()), "COLUMNS": "200"}
    done = subprocess.run([sys.executable, "-m", case.module, *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=env)
    return done.returncode, (done.stderr.strip() or done.stdout.strip())


def write_table(path: Path) -> int:
    """Run every case as a subprocess and write the markdown table; returns the number of cases that did
    not answer as expected."""
    rows, bad = [], 0
    for case in CASES:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            prep = prepare(case, tmp)
            before = tree_digest(prep.run) if prep.run else ""
            code, text = run_subprocess(case, prep.argv)
            kept = (tree_digest(prep.run) == before) if prep.run else None
            shown = " ".join(a.replace(str(tmp), "$TMP") for a in prep.argv)
            message = text.replace(str(tmp), "$TMP").replace("\n", " ⏎ ")
        ok = code == case.code and case.says in text and "Traceback" not in text and (
            kept is not False or not case.unchanged)
        bad += not ok
        flag = "" if ok else " **(unexpected)**"
        kept_txt = "" if kept is None else ("unchanged" if kept else "changed")
        rows.append(f"| `{case.id}` | `python -m {case.module} {shown}` | {code}{flag} | {kept_txt} | "
                    f"{message.replace('|', '/')[:400]} |")
    head = ("# Bad input to the command-line tools\n\n"
            "Every case of issue #11, run as a subprocess by `python -m tests.cli_cases --write "
            "docs/bad_input.md` (and in-process by `tests/test_bad_input.py`). Exit code 2: usage (nothing "
            "was written); 1: a run that failed. \"run dir\": whether the run directory given to the "
            "command is byte-identical afterwards. `$TMP` is the case's scratch directory.\n\n"
            "| case | command | exit | run dir | message |\n|---|---|---|---|---|\n")
    path.write_text(head + "\n".join(rows) + "\n")
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = command_parser("tests.cli_cases", __doc__)
    ap.add_argument("--write", type=Path, default=ROOT / "docs" / "bad_input.md")
    a = ap.parse_args(argv)
    bad = write_table(a.write)
    print(json.dumps({"cases": len(CASES), "unexpected": bad, "table": str(a.write)}))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
