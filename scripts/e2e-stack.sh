#!/usr/bin/env bash
# The whole stack for the browser tests, isolated from a developer's own instance: its own ports, a
# fresh Postgres database, its own runs folder. Started (and stopped with SIGTERM) by playwright.config.ts.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

# The production build (test.sh builds it first): what users run, and no clash with a developer's
# own `next dev` in the same checkout, which Next refuses.
export NODE_ENV=production
export PORT="${E2E_PORT:-3100}"
export RUNNER_PORT="${E2E_RUNNER_PORT:-4200}"
export ENGINE_PORT="${E2E_ENGINE_PORT:-8200}"
export RUNNER_URL="http://127.0.0.1:$RUNNER_PORT"
# Its own random tokens (64 hex characters), never the developer's.
export RUNNER_TOKEN="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export ENGINE_TOKEN="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
DB="${E2E_DB_NAME:-rollbook_e2e_$(date +%s)_$RANDOM}"
PGURL="${E2E_PG_URL:-postgresql://postgres@127.0.0.1:5432}"
psql "$PGURL/postgres" -qc "CREATE DATABASE $DB" >/dev/null
export DATABASE_URL="$PGURL/$DB"
export ROLLBOOK_RUNS_DIR="$(mktemp -d)/runs"
export DATA_DIR="$(mktemp -d)"

node --no-node-snapshot --import tsx gpu-runner/src/server.ts &
RUNNER_PID=$!
node --no-node-snapshot --import tsx server/index.ts &
WEB_PID=$!

cleanup() {
  kill -TERM "$WEB_PID" "$RUNNER_PID" 2>/dev/null || true
  wait "$WEB_PID" "$RUNNER_PID" 2>/dev/null || true
  psql "$PGURL/postgres" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
}
trap cleanup EXIT INT TERM
wait -n "$WEB_PID" "$RUNNER_PID"
