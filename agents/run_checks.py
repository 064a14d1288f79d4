"""The checks `agents.run` makes before it writes anything (exit code 2, one line saying what to do): the
devices, the executor (workers that fit this machine, a Ray cluster that answers), the LLM backend's
endpoint or recordings, a --config or config.json file, the run directory, and on --resume its checkpoint
database and the files its last checkpoint needs.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path

from agents.config import RunConfig, check_method
from agents.graph.rundir import RunDir
from common.cli import UsageError
from sim.pool import EXECUTORS


def check_devices(cfg: RunConfig) -> None:
    """The run's devices exist on this machine, before any work (`auto` always does)."""
    from coda_policy.device import DeviceUnavailable, resolve_device

    for flag, spec in (("--device", cfg.learn.device), ("--rollout-device", cfg.learn.rollout_device)):
        try:
            resolve_device(spec)
        except DeviceUnavailable as e:
            raise UsageError(f"{flag}: {e}") from None


def check_executor(cfg: RunConfig) -> None:
    """The run's executor can take it, before any work: its workers fit this machine (`--workers 100000`
    would spawn until the machine stalls), the Ray cluster it joins answers."""
    try:
        EXECUTORS.get(cfg.executor).preflight(cfg.workers, cfg.ray_address)
    except ValueError as e:
        raise UsageError(str(e)) from None


def check_backend(cfg: RunConfig, a: argparse.Namespace, run_root: Path) -> None:
    """The LLM backend has what it needs (an endpoint and a model, a recordings file), before any work."""
    if cfg.llm == "openai" or (cfg.llm == "replay" and a.record and a.record_backend == "openai"):
        url = cfg.llm_base_url or os.environ.get("OPENAI_BASE_URL", "")
        model = cfg.llm_model or os.environ.get("OPENAI_MODEL", "")
        if not url or not model:
            missing = " and ".join(x for x, v in (("--base-url", url), ("--model", model)) if not v)
            raise UsageError(f"--llm openai needs {missing} (or $OPENAI_BASE_URL / $OPENAI_MODEL); the key, "
                             "if the endpoint needs one, comes from $OPENAI_API_KEY")
        if not url.startswith(("http://", "https://")):
            raise UsageError(f"--base-url must be an http(s) URL such as http://localhost:8080/v1, "
                             f"got {url!r}")
        probe_endpoint(url, model, os.environ.get("OPENAI_API_KEY", ""))
    if cfg.llm == "replay" and not a.record:
        path = a.replay_file or run_root / "llm_replay.json"  # the file make_llm reads
        if not path.is_file():
            given = f"--replay-file {path} does not exist" if a.replay_file else \
                f"--llm replay needs --replay-file FILE (recorded answers; {path} does not exist)"
            raise UsageError(f"{given}; record one with --record")


def probe_endpoint(url: str, model: str, key: str, timeout: float = 10.0) -> None:
    """Before any work: the endpoint answers, accepts the key, and (when it lists its models) serves
    `model`. An endpoint without `GET /models` is taken as it is."""
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url.rstrip("/") + "/models",
                                 headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            listed = json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        if e.code in (401, 403):
            raise UsageError(f"the endpoint {url} refused the request (HTTP {e.code}): set $OPENAI_API_KEY "
                             "to a key it accepts") from None
        return  # no model list here (404, 405, ...): nothing more to check
    except (urllib.error.URLError, OSError, ValueError) as e:
        why = getattr(e, "reason", e)
        raise UsageError(f"cannot reach the endpoint {url} ({why}); is the server running, and is "
                         "--base-url its OpenAI-compatible root (ending in /v1)?") from None
    ids = [m.get("id") for m in listed.get("data", []) if isinstance(m, dict)] if isinstance(listed, dict) \
        else []
    if ids and model not in ids:
        raise UsageError(f"the endpoint {url} does not serve --model {model!r}; it lists: "
                         f"{', '.join(map(str, ids[:10]))}")


def read_config_file(path: Path, what: str = "--config") -> RunConfig:
    """A RunConfig from JSON; ValueError with what to fix when it cannot be one."""
    try:
        data = json.loads(path.read_text())
    except OSError as e:
        raise ValueError(f"cannot read {what} {path}: {e.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{what} {path} is not JSON ({e})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{what} {path} must hold a JSON object of RunConfig fields, not a "
                         f"{type(data).__name__}")
    written = data.pop("method_config", None)  # what the method meant when the file was written
    unknown = sorted(set(data) - {f.name for f in dataclasses.fields(RunConfig)})
    if unknown:
        raise ValueError(f"{what} {path}: unknown RunConfig fields {unknown}")
    try:
        cfg = RunConfig.from_json(json.dumps(data))
    except (TypeError, AttributeError, KeyError, ValueError) as e:
        raise ValueError(f"{what} {path} is not a valid RunConfig ({e})") from None
    if isinstance(written, dict):
        try:
            check_method(cfg.method, written)
        except ValueError as e:
            raise ValueError(f"{what} {path}: {e}") from None
    return cfg


def check_out(out: Path, *, resume: bool) -> None:
    """The run directory can be used: a directory (or creatable), writable; never a file."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; give a directory for the run")
    if resume:
        if not out.is_dir():
            raise UsageError(f"--resume: {out} does not exist; start the run without --resume")
        return
    probe = out / ".write-test"
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise UsageError(f"cannot write the run directory {out}: {e.strerror or e}; "
                         "choose another --out") from None


@contextlib.contextmanager
def lock_run(out: Path) -> Iterator[None]:
    """One `agents.run` writes a run directory at a time: a second one (a --resume started while the first
    still runs) would write the same round's scenes and checkpoints, and one would read a file the other
    replaced. The lock is on the directory itself (flock), so taking it writes nothing there, and the
    kernel drops it when the process ends, so a killed run never leaves it held."""
    fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(f"{out} is being written by another agents.run; let it finish or stop it, "
                             "then continue with --resume") from None
        yield
    finally:
        os.close(fd)


def check_trace(run: RunDir) -> list[str]:
    """trace.sqlite is a readable LangGraph checkpoint database (UsageError if not); returns the files its
    last checkpoint refers to that are missing from the run directory. Reads a copy: nothing in the run
    directory is touched (SQLite would create -wal/-shm files even for a read-only connection)."""
    import tempfile

    from agents.graph.build import open_checkpointer, thread_config

    with tempfile.TemporaryDirectory(prefix="coda-trace-") as tmp:
        _check_copy(run, Path(tmp))
        with open_checkpointer(tmp) as saver:
            last = saver.get_tuple(thread_config())
    values = dict(last.checkpoint.get("channel_values", {})) if last else {}
    paths = [values.get("policy", "")]
    for slot in values.get("slots", []) or []:
        paths += [slot.get("program", ""), *slot.get("accepted", []), *slot.get("demos", [])]
    paths += list(values.get("rollouts", []) or [])
    return [p for p in paths if p and not run.abs(p).exists()]


def check_trace_db(run: RunDir) -> None:
    """UsageError unless trace.sqlite is a readable LangGraph checkpoint database (checked on a copy)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="coda-trace-") as tmp:
        _check_copy(run, Path(tmp))


def _check_copy(run: RunDir, tmp: Path) -> None:
    import shutil
    import sqlite3

    if not run.trace.is_file():
        raise UsageError(f"no checkpoints at {run.trace}: not a run directory, or a run that never started")
    for suffix in ("", "-wal"):
        src = run.trace.with_name(run.trace.name + suffix)
        if src.exists():
            shutil.copyfile(src, tmp / f"trace.sqlite{suffix}")
    try:
        db = sqlite3.connect(tmp / "trace.sqlite")
        try:
            if db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                raise sqlite3.DatabaseError("quick_check failed")
            db.execute("SELECT count(*) FROM checkpoints").fetchone()
        finally:
            db.close()
    except sqlite3.Error as e:
        raise UsageError(f"{run.trace} is not a readable checkpoint database ({e}); the run directory was "
                         "not changed") from None
