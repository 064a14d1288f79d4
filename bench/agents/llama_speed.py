"""How fast the installed llama.cpp build evaluates the critic's prompt and writes its answer, in-process
(no server), so two builds compare on the same text: the hybrid critic's recorded system and user prompt
(~440 tokens, `bench/agents/fixtures/`), then N answer tokens, greedy, 2 threads, repeated.

    python -m bench.agents.llama_speed --label avx512 --out docs/results/llm_build/avx512_1.json
    PYTHONPATH=/path/to/other/build python -m bench.agents.llama_speed --label avx2 --out ...

Alternate the builds' runs on an otherwise idle machine; the file records which build answered (its path
and llama.cpp's system info, which lists the vector extensions it was compiled for).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from agents.llm.gguf import MODELS, ensure_model
from agents.llm.local import LocalConfig
from common.cli import UsageError, command_parser, run_cli

FIXTURES = Path(__file__).parent / "fixtures"


def measure(model_path: Path, *, answer: int, repeats: int, threads: int) -> dict:
    import llama_cpp

    system = (FIXTURES / "critic_hybrid_system.txt").read_text()
    user = (FIXTURES / "critic_hybrid_user.txt").read_text()
    prompt = (f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
              "<|im_start|>assistant\n")
    llm = llama_cpp.Llama(model_path=str(model_path), n_threads=threads, n_threads_batch=threads, n_ctx=2048,
                          verbose=False, seed=0)
    tokens = llm.tokenize(prompt.encode(), special=True)
    runs = []
    for _ in range(repeats):
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(tokens)
        t1 = time.perf_counter()
        n = 0
        for _tok in llm.generate([], temp=0.0, reset=False):
            n += 1
            if n >= answer:
                break
        t2 = time.perf_counter()
        runs.append({"prompt_tok_s": round(len(tokens) / (t1 - t0), 1),
                     "answer_tok_s": round(n / (t2 - t1), 1)})
    info = llama_cpp.llama_print_system_info().decode().strip()
    return {"llama_cpp": llama_cpp.__file__, "system_info": info, "model": model_path.name,
            "threads": threads, "prompt_tokens": len(tokens), "answer_tokens": answer, "runs": runs}


def main(argv: list[str] | None = None) -> int:
    p = command_parser("bench.agents.llama_speed", __doc__)
    p.add_argument("--label", required=True, help="what this build is (recorded)")
    p.add_argument("--out", type=Path, required=True, help="JSON file to write")
    p.add_argument("--model", default="qwen2.5-coder-1.5b", choices=sorted(MODELS))
    p.add_argument("--answer", type=int, default=40, help="answer tokens to write")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args(argv)

    def body() -> int:
        try:
            import llama_cpp  # noqa: F401
        except ImportError:
            raise UsageError("llama-cpp-python is not installed: run `bash scripts/setup.sh --llm`") from None
        path = ensure_model(MODELS[a.model], LocalConfig().cache_dir.expanduser())
        result = {"label": a.label, **measure(path, answer=a.answer, repeats=a.repeats, threads=a.threads)}
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps({"label": a.label, "runs": result["runs"]}))
        return 0

    return run_cli(body)


if __name__ == "__main__":
    raise SystemExit(main())
