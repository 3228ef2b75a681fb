#!/usr/bin/env bash
# Generates the Prisma client (generated/prisma) offline.
# `prisma generate` never runs the schema engine, but it tries to download one first and fails without
# network; pointing PRISMA_SCHEMA_ENGINE_BINARY at any executable skips the download. We create a stub that
# refuses to run (so a command that really needs the native engine fails loudly instead of silently), unless
# the caller already set PRISMA_SCHEMA_ENGINE_BINARY to a real engine.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${PRISMA_SCHEMA_ENGINE_BINARY:-}" ]; then
  stub_dir="node_modules/.cache/rollbook"
  stub="$stub_dir/schema-engine-stub"
  mkdir -p "$stub_dir"
  if [ ! -x "$stub" ]; then
    cat >"$stub" <<'STUB'
#!/bin/sh
echo "schema-engine stub: the native Prisma schema engine is not available offline; use scripts/db.ts" >&2
exit 1
STUB
    chmod +x "$stub"
  fi
  export PRISMA_SCHEMA_ENGINE_BINARY="$PWD/$stub"
fi
export PRISMA_HIDE_UPDATE_MESSAGE=1 CHECKPOINT_DISABLE=1

rm -rf generated/prisma
npx --no-install prisma generate "$@"

if [ ! -f generated/prisma/client.ts ]; then
  echo "prisma-generate: generated/prisma/client.ts is missing after prisma generate" >&2
  exit 1
fi
echo "prisma-generate: client written to generated/prisma"
