#!/usr/bin/env bash
# One-time setup for bench/cpu_decode_vs_llamacpp.py (never run by CI: it compiles llama.cpp for minutes).
#  1. llama.cpp's source as PyPI ships it: the llama-cpp-python sdist vendors it (vendor/llama.cpp). Its
#     `llama-server` (continuous batching over parallel slots) is built natively for this CPU with cmake.
#     Why the server binary rather than llama-cpp-python's own server: that one runs one request at a time,
#     which would understate llama.cpp's 16-concurrent throughput.
#  2. A bench venv (~/.cache/rollbook/bench-venv) with httpx for the bench client; the engine's venv stays
#     untouched.
#  3. The engine's SmolLM2 weights (the transformers checkpoint model_loader.py converts once) to GGUF F32
#     with the convert script and gguf-py of that same source, run by the engine's python (it needs torch
#     and transformers, which the engine venv already has; nothing is installed into it). The script also
#     imports sentencepiece, which goes into a separate --target folder on its PYTHONPATH.
# Idempotent: each step is skipped when its output exists. LLAMA_CPP_PYTHON_VERSION pins the sdist.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${HOME}/.cache/rollbook"
WORK="${CACHE}/llama.cpp"
VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
ENGINE_PY="${ROOT}/gpu-runner/engine/.venv/bin/python"
MODEL_DIR="${ROLLBOOK_MODEL_CACHE:-${CACHE}/models}/SmolLM2-135M-Instruct"
GGUF="${WORK}/SmolLM2-135M-Instruct-f32.gguf"
JOBS="$(nproc)"

mkdir -p "${WORK}"
if [[ ! -x "${CACHE}/bench-venv/bin/python" ]]; then
  python3 -m venv "${CACHE}/bench-venv"
fi
"${CACHE}/bench-venv/bin/pip" install -q "httpx==$("${ENGINE_PY}" -c 'import httpx; print(httpx.__version__)')"

if [[ ! -d "${WORK}/src" ]]; then
  "${CACHE}/bench-venv/bin/pip" download -q --no-deps --no-binary :all: "llama-cpp-python==${VERSION}" -d "${WORK}/sdist"
  tar xzf "${WORK}/sdist/llama_cpp_python-${VERSION}.tar.gz" -C "${WORK}/sdist"
  cp -r "${WORK}/sdist/llama_cpp_python-${VERSION}/vendor/llama.cpp" "${WORK}/src"
fi

if [[ ! -x "${WORK}/build/bin/llama-server" ]]; then
  # GGML_NATIVE: -march=native for this CPU (as a local llama.cpp build does). No web UI download, no
  # OpenSSL / curl (nothing is fetched at run time).
  cmake -S "${WORK}/src" -B "${WORK}/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF
  cmake --build "${WORK}/build" --target llama-server -j "${JOBS}"
fi

if [[ ! -f "${GGUF}" ]]; then
  if [[ ! -f "${MODEL_DIR}/config.json" ]]; then
    # The engine converts its bundled model on first load; do that once here.
    (cd "${ROOT}/gpu-runner/engine" && HF_HUB_OFFLINE=1 "${ENGINE_PY}" -c \
      'from rollbook_engine import model_loader; model_loader.ensure_local(model_loader.DEFAULT_MODEL)')
  fi
  "${CACHE}/bench-venv/bin/pip" install -q --target "${WORK}/convert-deps" "sentencepiece==0.2.3"
  PYTHONPATH="${WORK}/src/gguf-py:${WORK}/convert-deps" HF_HUB_OFFLINE=1 "${ENGINE_PY}" "${WORK}/src/convert_hf_to_gguf.py" \
    "${MODEL_DIR}" --outtype f32 --outfile "${GGUF}.tmp"
  mv "${GGUF}.tmp" "${GGUF}"
fi
echo "llama-server: ${WORK}/build/bin/llama-server"
echo "GGUF F32:     ${GGUF}"
