#!/usr/bin/env bash
# One command from a fresh clone: set everything up, then start the runner (which supervises the engine)
# and the web server on the embedded defaults (PGlite unless DATABASE_URL is set, CPU, SmolLM2-135M).
source "$(dirname "$0")/lib.sh"
setup_all
cd "$ROOT"

# `npm start` serves the production build (built once, rebuilt when the sources change); `npm run dev`
# (ROLLBOOK_DEV=1) serves Next's dev server with hot reload instead.
if [ "${ROLLBOOK_DEV:-0}" = 1 ]; then
  export NODE_ENV=development
else
  export NODE_ENV=production
  ensure_web_build
fi

# The web server finds the runner started here, on whatever port it was given.
export RUNNER_URL="${RUNNER_URL:-http://127.0.0.1:${RUNNER_PORT:-4100}}"

log "starting the runner"
node --no-node-snapshot --import tsx gpu-runner/src/server.ts &
RUNNER_PID=$!
cleanup() { kill -TERM "$RUNNER_PID" 2>/dev/null || true; wait "$RUNNER_PID" 2>/dev/null || true; }
trap cleanup EXIT INT TERM

log "starting the web server"
node --no-node-snapshot --import tsx server/index.ts
