"""The `local` backend, CoDA's embedded default: a llama.cpp OpenAI-compatible server on 127.0.0.1,
started by us with a GGUF model assembled from PyPI part packages, and spoken to through the same
ChatOpenAI path as any hosted endpoint (`OpenAICompleter`).

The server is our child process. It is stopped (SIGTERM, then SIGKILL) on `close()`, on context exit and
at interpreter exit, so a finished or crashed run never leaves a model hogging the cores.
"""

from __future__ import annotations

import atexit
import dataclasses
import importlib.util
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agents.llm.base import Completion, LLMBackendError, Request
from agents.llm.gguf import MODELS, ensure_model
from agents.llm.openai_chat import OpenAICompleter, OpenAIConfig

LLAMA_PIP = ('make setup-llm   (= bash scripts/setup.sh --llm: a portable build of llama-cpp-python[server] '
             'and the model wheels)')


@dataclass(frozen=True, kw_only=True)
class LocalConfig:
    """The embedded model server."""

    # key of `agents.llm.gguf.MODELS` (measured in agents/llm/README.md: the 1.5B coder is the default)
    model: str = "qwen2.5-coder-1.5b"
    # where the assembled GGUF is kept (reused across runs once verified)
    cache_dir: Path = Path("~/.cache/coda/models")
    # CPU threads for decoding; 1 when the simulator shares the two cores, 2 when the LLM runs alone
    n_threads: int = 2
    # context window in tokens (prompt + answer)
    n_ctx: int = 4096
    # interface to bind; loopback only, the server has no authentication
    host: str = "127.0.0.1"
    # port to bind; 0 picks a free one
    port: int = 0
    # seconds to wait for the server to load the model and answer /v1/models
    startup_timeout_s: float = 180.0
    # seconds one request may take before it is abandoned. The server is our own child, checked alive, so
    # this only catches a hung one: generous, because on a loaded 2-core machine (other jobs sharing the
    # cores) a training-program call of ~1,500 prompt tokens and up to 800 answer tokens took over 600 s
    request_timeout_s: float = 1800.0
    # sampling temperature (0: deterministic, so the cache and replays are meaningful)
    temperature: float = 0.0
    # server log file; None = a temporary file (its tail is quoted when the server fails)
    log_path: Path | None = None
    # llama.cpp's extra weight buffers (AMX, CPU repacking): faster, but a build made with
    # GGML_NATIVE=ON on a VM that advertises AMX segfaults on the first token. None = auto: off for
    # builds that use AMX, on otherwise (a GGML_NATIVE=OFF build keeps its AVX2 repacking)
    extra_buffers: bool | None = None
    # keep the model's state after each call in a RAM cache and start a new call from the cached state
    # with the longest common prefix (llama-cpp-python's `LlamaRAMCache`). Without it the server reuses
    # only the previous call's KV cache, so a critic call after a writer call evaluates its whole prompt
    # again; with it, each prompt kind's static prefix (system text and function schema) is evaluated
    # once per server life. `python -m bench.agents.prompt_cache` measures both on recorded prompts: no
    # gain on the demo's calls (FINDINGS #15). Off by default because it leaks: llama-cpp-python bounds
    # the cache by the KV state's size (45–67 MB an entry) while each entry also keeps a copy of the
    # logits array (~1 GB here), so 14 critic calls grew a server to 15 GB and the kernel killed it
    # (FINDINGS #17). With it on, keep `prompt_cache_mib` at a few entries' KV size
    prompt_cache: bool = False
    # capacity of that cache in MiB as llama-cpp-python counts it (KV state only; see above)
    prompt_cache_mib: int = 128
    # how structured answers are asked for (`OpenAIConfig.structured`): "grammar" decodes under the
    # schema's grammar without showing the schema (the default: ~300 fewer prompt tokens a critic call);
    # "tools", a forced function call with the schema in the prompt, as before (kept to measure against)
    structured: Literal["grammar", "tools"] = "grammar"

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"unknown local model {self.model!r}; known: {', '.join(MODELS)}")
        if self.n_threads < 1 or self.n_ctx < 512:
            raise ValueError("n_threads must be >= 1 and n_ctx >= 512")
        if self.prompt_cache_mib < 1:
            raise ValueError("prompt_cache_mib must be >= 1")


class LocalServer:
    """A running llama.cpp server child process (`llama_cpp.server` under the `agents.llm.serve`
    watchdog), healthy once constructed; a context manager."""

    def __init__(self, model_path: Path, config: LocalConfig) -> None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise LLMBackendError(f"the local backend needs llama-cpp-python; install it with\n  {LLAMA_PIP}")
        self.config = config
        self.model_path = Path(model_path)
        self.port = config.port or _free_port(config.host)
        self._temp_log = config.log_path is None  # ours to delete once a healthy server is stopped
        if config.log_path is None:
            fd, name = tempfile.mkstemp(prefix="coda-llama-server-", suffix=".log")
            os.close(fd)
            self.log_path = Path(name)
        else:
            self.log_path = Path(config.log_path)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 -- held for the child's lifetime, closed in stop()
        self.process: subprocess.Popen[bytes] | None = subprocess.Popen(
            self.command(), stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        atexit.register(self.stop)
        try:
            self._wait_healthy()
        except BaseException:
            self._temp_log = False  # the error names the log: keep it
            self.stop()
            raise

    @property
    def base_url(self) -> str:
        """OpenAI-compatible root, e.g. http://127.0.0.1:PORT/v1."""
        return f"http://{self.config.host}:{self.port}/v1"

    def command(self) -> list[str]:
        """The server's command line."""
        return server_command(self.model_path, self.config, self.port)

    def log_offset(self) -> int:
        """The log's size in bytes now (where the next request's lines start)."""
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0

    def log_since(self, offset: int) -> str:
        """The log text written after `offset`."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def log_tail(self, n_lines: int = 25) -> str:
        """The last lines of the server's log."""
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(lines[-n_lines:])

    def alive(self) -> bool:
        """Whether the process is still running."""
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        """Terminate the server, kill it if it does not exit within 10 s. Idempotent. A temporary log
        is deleted if the server was still healthy, kept (for the person debugging) if it had died."""
        proc, self.process = self.process, None
        healthy = proc is not None and proc.poll() is None
        if healthy:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if not self._log.closed:
            self._log.close()
        if healthy and self._temp_log:
            self.log_path.unlink(missing_ok=True)
        atexit.unregister(self.stop)

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.config.startup_timeout_s
        while time.monotonic() < deadline:
            if not self.alive():
                code = self.process.returncode if self.process else None
                raise LLMBackendError(self.failure_message(f"exited with code {code} while starting"))
            try:
                with urllib.request.urlopen(self.base_url + "/models", timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.25)
        timeout = self.config.startup_timeout_s
        raise LLMBackendError(self.failure_message(f"did not answer within {timeout:.0f} s"))

    def failure_message(self, what: str) -> str:
        """`what` happened, with the command and the log's tail: the error text a person acts on."""
        code = self.process.returncode if self.process else None
        if code == -signal.SIGSEGV:
            what += (" (segmentation fault: if llama-cpp-python was built with GGML_NATIVE=ON on a VM with"
                     " AMX, rebuild it with CMAKE_ARGS=\"-DGGML_NATIVE=OFF\" or leave extra_buffers=None)")
        return (f"local llama.cpp server ({self.model_path.name}, port {self.port}) {what}.\n"
                f"Command: {' '.join(self.command())}\nLog {self.log_path} (tail):\n{self.log_tail()}")


def server_command(model_path: Path, c: LocalConfig, port: int) -> list[str]:
    """The command line of a server of `model_path` on `port` with config `c`."""
    return [
        sys.executable, "-m", "agents.llm.serve", "--parent-pid", str(os.getpid()),
        *{True: [], False: ["--no-extra-buffers"], None: ["--auto-extra-buffers"]}[c.extra_buffers], "--",
        "--model", str(model_path),
        "--host", c.host, "--port", str(port),
        "--n_threads", str(c.n_threads), "--n_threads_batch", str(c.n_threads),
        "--n_ctx", str(c.n_ctx),
        *(["--cache", "true", "--cache_type", "ram", "--cache_size", str(c.prompt_cache_mib << 20)]
          if c.prompt_cache else []),
    ]


_PREFIX_HIT = re.compile(r"prefix-match hit, remaining (\d+) prompt tokens to eval")


def evaluated_tokens(log: str, tokens_in: int | None) -> int | None:
    """Prompt tokens the server evaluated for one request, from its log lines: what remained after a
    prefix match with its KV cache (or a cached state), 0 when the whole prompt was cached, else the whole
    prompt (`tokens_in`; None when the endpoint did not report it)."""
    hits = _PREFIX_HIT.findall(log)
    if hits:
        return int(hits[-1])
    if "full prompt already cached" in log:
        return 0
    return tokens_in


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class LocalCompleter:
    """`Completer` that owns a `LocalServer` and talks to it with `OpenAICompleter`.

    The server starts on the first request, not at construction, so building the graph (or listing
    backends) never loads a model.
    """

    backend = "local"

    def __init__(self, config: LocalConfig | None = None) -> None:
        self.config = config or LocalConfig()
        self.spec = MODELS[self.config.model]
        self.server: LocalServer | None = None
        self._client: OpenAICompleter | None = None
        self._lock = threading.Lock()  # nodes may run in threads: start one server, not one each
        self._call_lock = threading.Lock()

    @property
    def identity(self) -> dict[str, Any]:
        """Model (by content hash), context size and temperature; thread count does not change answers."""
        c = self.config
        return {"backend": self.backend, "model": self.spec.name, "sha256": self.spec.sha256,
                "n_ctx": c.n_ctx, "temperature": c.temperature,
                **({} if c.structured == "grammar" else {"structured": c.structured})}

    @property
    def supports_images(self) -> bool:
        """The embedded models are text-only."""
        return False

    def start(self) -> LocalServer:
        """Assemble the model if needed and start the server (no-op when running)."""
        with self._lock:
            if self.server is not None and self.server.alive():
                return self.server
            self.close()
            return self._start()

    def _start(self) -> LocalServer:
        model_path = ensure_model(self.spec, self.config.cache_dir)
        self.server = LocalServer(model_path, self.config)
        self._client = OpenAICompleter(
            OpenAIConfig(base_url=self.server.base_url, model=self.spec.name,
                         temperature=self.config.temperature, timeout_s=self.config.request_timeout_s,
                         max_retries=0, structured=self.config.structured),
            backend=self.backend,
        )
        return self.server

    def complete(self, request: Request) -> Completion:
        """Answer through the server, starting it first if needed; a crash mid-call quotes its log."""
        server = self.start()
        assert self._client is not None
        # one request at a time (the server serves one anyway), so the log lines read are this request's
        with self._call_lock:
            offset = server.log_offset()
            try:
                completion = self._client.complete(request)
            except LLMBackendError as e:
                if not server.alive():
                    raise LLMBackendError(f"{e}\n{server.failure_message('died')}") from e
                raise
            return dataclasses.replace(
                completion, tokens_evaluated=evaluated_tokens(server.log_since(offset), completion.tokens_in))

    def close(self) -> None:
        """Stop the server; safe to call twice."""
        if self.server is not None:
            self.server.stop()
        self.server = None
        self._client = None
