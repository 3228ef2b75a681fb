#!/usr/bin/env bash
# One command for a machine with one NVIDIA GPU (the `device` tool's H100/H200): the engine's GPU tests
# (`pytest -m gpu`) and bench/gpu_check.py (a bf16 GRPO step, Rollbook vs TRL on the same batch when TRL is
# there: wall time and peak GPU memory; probs_corr; sampling throughput at 1 and 16 streams), printed as one
# table, in well under 8 minutes. Installs nothing (those machines reach no registry): it uses the engine's
# venv when there is one, else the machine's python with torch, transformers and peft.
#
#   bash scripts/gpu-check.sh [--wheels DIR] [--model-dir DIR] [--cpu]
#
# --wheels     Python wheels to install first (pip --no-index --no-deps): the engine's and TRL's packages that
#              the lent machine's image lacks or holds in other versions (docs/benchmarks.md "GPU" says how to
#              download them here; they travel with the call)
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
wheels=""
model_dir=""
args=()  # what bench/gpu_check.py gets: everything but --wheels
while [ $# -gt 0 ]; do
  case "$1" in
    --cpu) cpu=1; args+=("$1") ;;
    --wheels) wheels="$2"; shift ;;
    --model-dir) model_dir="$2"; args+=("$1" "$2"); shift ;;
    *) args+=("$1") ;;
  esac
  shift
done

if [ -n "$wheels" ]; then
  echo "== installing the carried wheels ($wheels)"
  "$PY" -m pip install -q --no-index --no-deps "$wheels"/*.whl 2>&1 | tail -3
fi

echo "== machine"
if command -v nvidia-smi >/dev/null; then nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; else echo "no nvidia-smi"; fi
"$PY" -c 'import torch, transformers, peft; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), "transformers", transformers.__version__, "peft", peft.__version__)'
uptime

if [ -n "$model_dir" ]; then
  # The GPU tests load the model from the cache as the engine does: without the converted weights there, build the
  # same-shape random model once and point both the tests and the figures at it.
  ROLLBOOK_MODEL_CACHE="$("$PY" "$ROOT/bench/gpu_check.py" --prepare-model --model-dir "$model_dir" | tail -1)"
  export ROLLBOOK_MODEL_CACHE
fi

if [ "$cpu" = 0 ]; then
  echo "== engine GPU tests (pytest -m gpu)"
  # Their own time budget: the figures below matter more than waiting on one stuck test.
  (cd "$ROOT/gpu-runner/engine" && timeout 240 "$PY" -m pytest -m gpu -q -p no:cacheprovider) || echo "GPU tests: FAILED or timed out (exit $?)"
fi

echo "== figures (bench/gpu_check.py)"
timeout 300 "$PY" "$ROOT/bench/gpu_check.py" "${args[@]}"
