#!/usr/bin/env bash
# One command for a machine with one NVIDIA GPU (the `device` tool's H100/H200): the engine's GPU tests
# (`pytest -m gpu`) and bench/gpu_check.py (a bf16 GRPO step, Rollbook vs TRL on the same batch when TRL is
# there: wall time and peak GPU memory; probs_corr; sampling throughput at 1 and 16 streams), printed as one
# table, in well under 8 minutes. Installs nothing (those machines reach no registry): it uses the engine's
# venv when there is one, else the machine's python with torch, transformers and peft.
#
#   bash scripts/gpu-check.sh [--model-dir DIR] [--cpu]
#
# --model-dir  SmolLM2's config and tokenizer files, when the converted model is not in the model cache (a
#              device call cannot carry its weights): a same-shape model with random weights is used
#              (docs/benchmarks.md "GPU" says how to carry the files)
# --cpu        the same on the CPU, fewer tokens: to check this script on a machine without a GPU
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -x "$ROOT/gpu-runner/engine/.venv/bin/python" ]; then PY="$ROOT/gpu-runner/engine/.venv/bin/python"; else PY=python3; fi
fi
cpu=0
for a in "$@"; do [ "$a" = "--cpu" ] && cpu=1; done

echo "== machine"
if command -v nvidia-smi >/dev/null; then nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; else echo "no nvidia-smi"; fi
"$PY" -c 'import torch, transformers, peft; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), "transformers", transformers.__version__, "peft", peft.__version__)'
uptime

if [ "$cpu" = 0 ]; then
  echo "== engine GPU tests (pytest -m gpu)"
  # Their own time budget: the figures below matter more than waiting on one stuck test.
  (cd "$ROOT/gpu-runner/engine" && timeout 240 "$PY" -m pytest -m gpu -q -p no:cacheprovider) || echo "GPU tests: FAILED or timed out (exit $?)"
fi

echo "== figures (bench/gpu_check.py)"
timeout 300 "$PY" "$ROOT/bench/gpu_check.py" "$@"
