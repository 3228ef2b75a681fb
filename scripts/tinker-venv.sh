#!/usr/bin/env bash
# The venv the Tinker tests (features/tinker/wire/*.test.ts, features/tinker/server/tinker-sdk.servertest.ts,
# bench/tinker-learning.ts) run the real Tinker SDK in: built once in
# the user cache, keyed by the pinned version, and reused while its stamp file is there (the pattern of
# scripts/art-venv.sh and scripts/lib.sh's ensure_engine_venv). The first install pulls tinker and its
# dependencies (pydantic, httpx, numpy, protobuf, zstandard…) from PyPI: a minute or two; later runs are instant.
#   bash scripts/tinker-venv.sh        prints the venv's python on the last line
set -euo pipefail

TINKER_VERSION="${TINKER_VERSION:-0.38.0}"
# A loop renders its prompts with the tokenizer's chat template (transformers, which tinker pulls in, needs
# jinja2 for it; tinker-cookbook's renderers do the same): part of the venv's key.
JINJA_PIN="${TINKER_JINJA_PIN:-jinja2>=3.1,<4}"
CACHE_DIR="${ROLLBOOK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/rollbook}"

ensure_tinker_venv() {
  local venv="$CACHE_DIR/tinker-venv-$TINKER_VERSION-jinja2"
  if [ ! -f "$venv/.rollbook-ok" ]; then
    echo "creating the Tinker SDK venv (tinker==$TINKER_VERSION) in $venv" >&2
    rm -rf "$venv"
    mkdir -p "$CACHE_DIR"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check --upgrade pip >&2
    "$venv/bin/pip" install -q --disable-pip-version-check "tinker==$TINKER_VERSION" "$JINJA_PIN" >&2
    touch "$venv/.rollbook-ok"
  fi
  echo "$venv/bin/python"
}

ensure_tinker_venv
