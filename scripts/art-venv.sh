#!/usr/bin/env bash
# The venv the ART client test (features/art/server/art-client.servertest.ts) runs the real openpipe-art in:
# built once in the user cache, keyed by the pinned version, and reused while its stamp file is there (the
# pattern of scripts/lib.sh's ensure_engine_venv). The first install pulls openpipe-art and its
# dependencies from PyPI (litellm, weave, polars, openai…): minutes; later runs are instant.
#   bash scripts/art-venv.sh        prints the venv's python on the last line
set -euo pipefail

ART_VERSION="${ART_VERSION:-0.5.18}"
# openai 3.x (what pip picks beside openpipe-art 0.5.18 today) breaks `model.openai_client()`: ART hands an
# httpx.Timeout to openai's new transport ("unsupported operand type(s) for +: 'float' and 'Timeout'").
# Pinned to the 2.x line ART was written against; the pin is part of the venv's key.
OPENAI_PIN="${ART_OPENAI_PIN:-openai>=2,<3}"
# ServerlessBackend.train() imports wandb (to record provenance on a W&B run; without WANDB_API_KEY it does
# nothing with it), and openpipe-art lists wandb only in its heavy "backend" extra: the version that extra pins.
WANDB_PIN="${ART_WANDB_PIN:-wandb==0.25.0}"
CACHE_DIR="${ROLLBOOK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/rollbook}"

ensure_art_venv() {
  local venv="$CACHE_DIR/art-venv-$ART_VERSION-openai2-wandb"
  if [ ! -f "$venv/.rollbook-ok" ]; then
    echo "creating the ART client venv (openpipe-art==$ART_VERSION) in $venv" >&2
    rm -rf "$venv"
    mkdir -p "$CACHE_DIR"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check --upgrade pip >&2
    "$venv/bin/pip" install -q --disable-pip-version-check "openpipe-art==$ART_VERSION" "$OPENAI_PIN" "$WANDB_PIN" >&2
    touch "$venv/.rollbook-ok"
  fi
  echo "$venv/bin/python"
}

ensure_art_venv
