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

start_runner

log "starting the web server"
node --no-node-snapshot --import tsx server/index.ts
