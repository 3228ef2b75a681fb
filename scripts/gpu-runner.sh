#!/usr/bin/env bash
# A GPU box's part of Rollbook: the engine (one process, or a torchrun worker group of ROLLBOOK_TRAIN_NPROC
# ranks) and the runner in front of it; no web server, no database. The web server registers this runner
# by URL and RUNNER_TOKEN (docs/deploy.md).
#
#   bash scripts/gpu-runner.sh            # or: npm run gpu-runner
#
# Settings (environment or .env; docs/deploy.md lists them all): RUNNER_HOST/RUNNER_PORT (where the web
# server reaches the runner), RUNNER_TOKEN (generated into DATA_DIR/runner-token when unset), ENGINE_PORT,
# ENGINE_MODEL, ROLLBOOK_TRAIN_NPROC (ranks of the training step: a number, or "auto" = one per visible GPU;
# default 1), ROLLBOOK_TRAIN_PARALLEL (ddp|fsdp), ROLLBOOK_BACKEND (vllm: the engine runs in a venv of its own
# with vLLM's CUDA build, made here once: scripts/lib.sh ensure_vllm_venv), ROLLBOOK_VLLM_TENSOR_PARALLEL.
#
# The engine is started here rather than by the runner's supervisor because a worker group is a torchrun
# job, not one Python process; the runner then attaches to it through ENGINE_URL + ENGINE_TOKEN. If the
# engine exits, this script stops the runner too (and the other way round), so a supervisor such as systemd
# restarts the pair.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

ensure_node
load_env
ENGINE_PORT="${ENGINE_PORT:-8100}"
ensure_tokens # RUNNER_TOKEN and ENGINE_TOKEN, generated once under DATA_DIR unless set
ensure_node_modules
ensure_engine_venv
ensure_model
# The engine's interpreter: ENGINE_PYTHON when set (load_env made it absolute from the repository), else the
# vLLM venv with ROLLBOOK_BACKEND=vllm, else the engine's (the runner's own defaults, env.ts).
engine_python="$ENGINE_DIR/.venv/bin/python"
if [ "${ROLLBOOK_BACKEND:-auto}" = vllm ]; then
  ensure_vllm_venv
  engine_python="$ENGINE_DIR/.venv-vllm/bin/python"
fi
engine_python="${ENGINE_PYTHON:-$engine_python}"

nproc="${ROLLBOOK_TRAIN_NPROC:-1}"
if [ "$nproc" = auto ]; then
  nproc=$("$engine_python" -c 'import torch; print(max(torch.cuda.device_count(), 1))')
fi
case "$nproc" in
  '' | *[!0-9]* | 0) echo "ROLLBOOK_TRAIN_NPROC must be a positive number or auto, not '$nproc'" >&2; exit 2 ;;
esac
model="${ENGINE_MODEL:-SmolLM2-135M-Instruct}"
engine_args=(--host 127.0.0.1 --port "$ENGINE_PORT" --model "$model")
if [ "$nproc" -gt 1 ]; then
  log "starting the engine: a torchrun worker group of $nproc ranks (${ROLLBOOK_TRAIN_PARALLEL:-ddp}) on port $ENGINE_PORT"
  engine_cmd=("$engine_python" -m torch.distributed.run --standalone --nproc-per-node "$nproc"
    -m rollbook_engine.trainer.distributed_worker "${engine_args[@]}")
else
  log "starting the engine on port $ENGINE_PORT"
  engine_cmd=("$engine_python" -m rollbook_engine "${engine_args[@]}")
fi
(cd "$ENGINE_DIR" && ROLLBOOK_RUNS_DIR="${ROLLBOOK_RUNS_DIR:-$ROOT/runs}" exec "${engine_cmd[@]}") &
ENGINE_PID=$!
RUNNER_PID=""
cleanup() {
  [ -n "$RUNNER_PID" ] && kill -TERM "$RUNNER_PID" 2>/dev/null
  kill -TERM "$ENGINE_PID" 2>/dev/null
  wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 143' INT TERM

# The runner attaches to this engine instead of spawning its own.
export ENGINE_URL="http://127.0.0.1:$ENGINE_PORT"
log "starting the runner on ${RUNNER_HOST:-127.0.0.1}:${RUNNER_PORT:-4100}"
node --no-node-snapshot --import tsx gpu-runner/src/server.ts &
RUNNER_PID=$!

# Either process ending ends the pair (wait -n: the first of them to exit).
set +e
wait -n "$ENGINE_PID" "$RUNNER_PID"
status=$?
log "the engine or the runner exited (status $status): stopping the other"
exit "$status"
