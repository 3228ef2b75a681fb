"""CPU decode, the engine against llama.cpp on the same weights, side by side in one run.

Setup once (builds llama.cpp's server from the source llama-cpp-python ships on PyPI, makes the bench venv,
converts the engine's SmolLM2 weights to GGUF F32):  bash bench/setup_llamacpp.sh
Run:  ~/.cache/rollbook/bench-venv/bin/python bench/cpu_decode_vs_llamacpp.py

Both servers are started here as subprocesses with the same thread count (the machine's cores unless
--threads): the engine (`python -m rollbook_engine`, its own venv, OMP_NUM_THREADS) on --engine-port and
`llama-server` (continuous batching, --parallel 16 slots) on --llama-port. Both are driven through the same
OpenAI chat endpoint with the same prompts, seeds and max_tokens, and measured in alternation (engine rep,
llama.cpp rep, ...) so a change in machine load hits both:
- single stream: one request at a time, completion tokens / wall time, --reps times;
- 16 concurrent: 16 different prompts at once, total completion tokens / wall time, --reps times.
Medians, the ratio engine / llama.cpp, and the load average before and after are printed (and written as
JSON with --json). --with-hf adds a third side, the engine with its transformers forward
(ROLLBOOK_LEAN_DECODE=0, what it ran before the lean path), on --engine-hf-port; --no-llama leaves
llama.cpp out (engine sides only, e.g. before llama.cpp is built).
Ports: each flag, else its environment variable (BENCH_ENGINE_PORT, BENCH_ENGINE_HF_PORT, BENCH_LLAMA_PORT),
else a port free at start, so two of these can run side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
ENGINE_DIR = ROOT / "gpu-runner" / "engine"
CACHE = Path.home() / ".cache" / "rollbook"
MODEL = "SmolLM2-135M-Instruct"
TOKEN = secrets.token_hex(32)
TOPICS = ["the sea", "a cat", "mountains", "coffee", "rain", "the moon", "trains", "a library",
          "winter", "bees", "a lighthouse", "bread", "the desert", "a violin", "autumn", "robots"]


def body(i: int, max_tokens: int, llama: bool) -> dict:
    b = {"model": MODEL, "max_tokens": max_tokens, "temperature": 1.0, "seed": i,
         "messages": [{"role": "user", "content": f"Write a long story about {TOPICS[i % len(TOPICS)]}."}]}
    if llama:
        # llama-server's defaults are top_k 40, top_p 0.95, min_p 0.05, repeat penalties: the engine samples
        # the plain distribution, so llama.cpp is asked to do the same work.
        b.update(top_k=0, top_p=1.0, min_p=0.0, repeat_penalty=1.0)
    return b


def wait_ready(url: str, proc: subprocess.Popen, what: str, timeout_s: float = 600) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before it was ready")
        try:
            if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{what} not ready after {timeout_s}s")


def free_ports(n: int) -> list[int]:
    """n ports the kernel reports free, bound together so none is handed out twice, then released."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def resolve_ports(args) -> None:
    """Replaces each port flag left at 0 (and without its environment variable) by a free port."""
    names = ["engine_port", "engine_hf_port", "llama_port"]
    spare = iter(free_ports(sum(1 for n in names if not getattr(args, n))))
    for n in names:
        if not getattr(args, n):
            setattr(args, n, next(spare))


def start_engine(args, lean: str | None, port: int) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ENGINE_TOKEN": TOKEN, "OMP_NUM_THREADS": str(args.threads),
           **({"ROLLBOOK_LEAN_DECODE": lean} if lean else {})}
    proc = subprocess.Popen([args.engine_python, "-m", "rollbook_engine", "--port", str(port),
                             "--model", MODEL], cwd=ENGINE_DIR, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    url = f"http://127.0.0.1:{port}"
    wait_ready(url, proc, "engine")
    return proc, url


def start_llama(args) -> tuple[subprocess.Popen, str]:
    for path, what in ((args.llama_server, "llama-server"), (args.gguf, "GGUF")):
        if not Path(path).is_file():
            raise SystemExit(f"{what} not found at {path}: run `bash bench/setup_llamacpp.sh` first")
    cmd = [args.llama_server, "-m", args.gguf, "--host", "127.0.0.1", "--port", str(args.llama_port),
           "-t", str(args.threads), "-tb", str(args.threads), "--parallel", str(args.concurrency),
           "-c", str(args.concurrency * 512), "-ngl", "0", "--no-webui"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{args.llama_port}"
    wait_ready(url, proc, "llama-server")
    return proc, url


async def measure(url: str, llama: bool, args) -> tuple[float, float, int, int]:
    """(single-stream tok/s, concurrent tok/s, tokens single, tokens concurrent) for one repetition."""
    headers = {} if llama else {"authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=url, timeout=900, headers=headers) as client:
        async def one(i: int) -> int:
            r = await client.post("/v1/chat/completions", json=body(i, args.max_tokens, llama))
            r.raise_for_status()
            return r.json()["usage"]["completion_tokens"]

        t = time.perf_counter()
        single = await one(0)
        single_s = time.perf_counter() - t
        t = time.perf_counter()
        conc = sum(await asyncio.gather(*[one(i) for i in range(args.concurrency)]))
        conc_s = time.perf_counter() - t
    return single / single_s, conc / conc_s, single, conc


async def warm(url: str, llama: bool, args) -> None:
    headers = {} if llama else {"authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=url, timeout=900, headers=headers) as client:
        (await client.post("/v1/chat/completions", json=body(0, 8, llama))).raise_for_status()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    for flag, env in (("--engine-port", "BENCH_ENGINE_PORT"), ("--engine-hf-port", "BENCH_ENGINE_HF_PORT"),
                      ("--llama-port", "BENCH_LLAMA_PORT")):
        p.add_argument(flag, type=int, default=int(os.environ.get(env) or 0),
                      help=f"default ${env}, else (or 0) a free port")
    p.add_argument("--engine-python", default=str(ENGINE_DIR / ".venv" / "bin" / "python"))
    p.add_argument("--llama-server", default=str(CACHE / "llama.cpp" / "build" / "bin" / "llama-server"))
    p.add_argument("--gguf", default=str(CACHE / "llama.cpp" / f"{MODEL}-f32.gguf"))
    p.add_argument("--lean", choices=["0", "1"], help="ROLLBOOK_LEAN_DECODE for the engine (default: its own)")
    p.add_argument("--with-hf", action="store_true", help="also the engine with ROLLBOOK_LEAN_DECODE=0")
    p.add_argument("--no-llama", action="store_true", help="leave llama.cpp out")
    p.add_argument("--json", help="also write the figures here")
    args = p.parse_args()
    resolve_ports(args)

    load_before = os.getloadavg()
    procs = []
    sides: list[tuple[str, str, bool]] = []  # (name, url, is llama.cpp)
    try:
        engine, url = start_engine(args, args.lean, args.engine_port)
        procs.append(engine)
        sides.append(("engine", url, False))
        if args.with_hf:
            engine_hf, url = start_engine(args, "0", args.engine_hf_port)
            procs.append(engine_hf)
            sides.append(("engine-hf", url, False))
        if not args.no_llama:
            llama, url = start_llama(args)
            procs.append(llama)
            sides.append(("llama.cpp", url, True))
        for _, url, is_llama in sides:
            asyncio.run(warm(url, is_llama, args))
        runs: dict[str, list[tuple[float, float, int, int]]] = {name: [] for name, _, _ in sides}
        for rep in range(args.reps):
            for name, url, is_llama in sides:
                r = asyncio.run(measure(url, is_llama, args))
                runs[name].append(r)
                print(f"rep {rep + 1} {name:9s}: single {r[0]:6.1f} tok/s ({r[2]} tokens)   "
                      f"{args.concurrency} concurrent {r[1]:6.1f} tok/s ({r[3]} tokens)", flush=True)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=30)
    load_after = os.getloadavg()

    med = {name: (statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs))
           for name, rs in runs.items()}
    print(f"\nthreads {args.threads}, max_tokens {args.max_tokens}, {args.reps} reps, medians; "
          f"load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    print(f"{'':10s} {'single tok/s':>13s} {f'{args.concurrency} concurrent tok/s':>22s}")
    for name, (s, c) in med.items():
        print(f"{name:10s} {s:13.1f} {c:22.1f}")
    peer = "engine-hf" if "llama.cpp" not in med else "llama.cpp"
    ratio = None
    if peer in med:
        ratio = (med["engine"][0] / med[peer][0], med["engine"][1] / med[peer][1])
        goal = "; goal >= 1.0x" if peer == "llama.cpp" else ""
        print(f"{'ratio':10s} {ratio[0]:12.2f}x {ratio[1]:21.2f}x   (engine / {peer}{goal})")
    if "engine-hf" in med and peer != "engine-hf":
        print(f"{'lean/hf':10s} {med['engine'][0] / med['engine-hf'][0]:12.2f}x "
              f"{med['engine'][1] / med['engine-hf'][1]:21.2f}x   (engine lean / engine transformers forward)")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "threads": args.threads, "max_tokens": args.max_tokens, "reps": args.reps,
            "concurrency": args.concurrency, "load_before": load_before, "load_after": load_after,
            "runs": runs, "median": med, "ratio": ratio, "ratio_peer": peer}, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
