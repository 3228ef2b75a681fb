#!/usr/bin/env bash
# The whole stack for the browser tests, isolated from a developer's own instance: its own ports, a
# fresh Postgres database, its own runs folder. Started (and stopped with SIGTERM) by playwright.config.ts.
#
# Two web processes share the database, as several web servers behind one URL would: web 1 on E2E_PORT
# (what every spec uses) and web 2 on E2E_PORT2, started once web 1 answers. Each is restarted when it
# dies (as a process manager would), and writes its pid to $E2E_STACK_DIR/web1.pid / web2.pid, so
# e2e/multi-web.spec.ts can kill web 1 mid-run and the specs after it still find it.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

# The production build (test.sh builds it first): what users run, and no clash with a developer's
# own `next dev` in the same checkout, which Next refuses.
export NODE_ENV=production
PORT1="${E2E_PORT:-3100}"
PORT2="${E2E_PORT2:-3101}"
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
# One secret for both web processes: a session signed by one is valid on the other.
export AUTH_SECRET="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
# Every spec signs up fresh users, all from 127.0.0.1: the per-address sign-in/sign-up limit (10 a minute by
# default) refused one once the specs ran fast (CI: "Too many attempts from here"). The limit itself is
# tested in server/auth/accounts.servertest.ts, not here.
export AUTH_SIGNIN_PER_MINUTE="${AUTH_SIGNIN_PER_MINUTE:-1000}"
STACK_DIR="${E2E_STACK_DIR:-$(mktemp -d)}"
mkdir -p "$STACK_DIR"
rm -f "$STACK_DIR"/stopping "$STACK_DIR"/web*.pid "$STACK_DIR"/web*.hold

# One web process on a port, started again whenever it exits, until the stack stops. While
# $STACK_DIR/<name>.hold exists it is not started again (a spec keeps it down while it checks the others).
supervise() {
  local name="$1" port="$2"
  while [ ! -e "$STACK_DIR/stopping" ]; do
    while [ -e "$STACK_DIR/$name.hold" ] && [ ! -e "$STACK_DIR/stopping" ]; do sleep 0.5; done
    [ -e "$STACK_DIR/stopping" ] && break
    PORT="$port" node --no-node-snapshot --import tsx server/index.ts &
    echo $! >"$STACK_DIR/$name.pid"
    wait $! || true
    [ -e "$STACK_DIR/stopping" ] || { echo "[e2e-stack] $name exited; starting it again" >&2; sleep 1; }
  done
}

node --no-node-snapshot --import tsx gpu-runner/src/server.ts &
RUNNER_PID=$!
supervise web1 "$PORT1" &
SUP1=$!
SUP2=""

cleanup() {
  touch "$STACK_DIR/stopping"
  local pids=("$RUNNER_PID")
  for f in "$STACK_DIR/web1.pid" "$STACK_DIR/web2.pid"; do [ -e "$f" ] && pids+=("$(cat "$f")"); done
  kill -TERM "${pids[@]}" 2>/dev/null || true
  wait "$SUP1" $SUP2 "$RUNNER_PID" 2>/dev/null || true
  psql "$PGURL/postgres" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
}
trap cleanup EXIT INT TERM

# Web 2 once web 1 has migrated the database and made the default workspace (two first boots at once
# would race on them).
until curl -sf "http://127.0.0.1:$PORT1/api/health" >/dev/null; do
  kill -0 "$SUP1" 2>/dev/null || exit 1
  sleep 1
done
supervise web2 "$PORT2" &
SUP2=$!
wait -n "$SUP1" "$SUP2" "$RUNNER_PID"
