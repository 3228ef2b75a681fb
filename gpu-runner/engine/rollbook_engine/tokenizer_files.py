"""GET /tokenizer/files/{name}: the base model's tokenizer as files, for clients that load it themselves.

The Tinker SDK's `get_tokenizer()` calls transformers' `AutoTokenizer.from_pretrained(<base model>)`, which
fetches files from a Hugging Face hub; Rollbook's web server answers the hub's file route with these
(features/tinker/server/tinker-hub.ts), so the client loads exactly the tokenizer this engine samples with,
offline. The files are what `save_pretrained` writes for the loaded tokenizer (its config, vocabulary, chat
template) plus the model's config.json (transformers reads the model type from it), written once per process
into a temporary folder. Only those names are served: `name` is looked up in that folder's listing, never
joined onto a path.
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

router = APIRouter()
_lock = threading.Lock()
_files: dict[int, dict[str, bytes]] = {}


def tokenizer_files(store) -> dict[str, bytes]:
    """name → bytes of the store's tokenizer files (made once per store)."""
    with _lock:
        cached = _files.get(id(store))
        if cached is not None:
            return cached
        with tempfile.TemporaryDirectory(prefix="rollbook-tokenizer-") as tmp:
            store.tokenizer.save_pretrained(tmp)
            config = getattr(getattr(store, "model", None), "config", None)
            if config is not None and hasattr(config, "to_json_string"):
                Path(tmp, "config.json").write_text(config.to_json_string())
            files = {p.name: p.read_bytes() for p in Path(tmp).iterdir() if p.is_file()}
        _files[id(store)] = files
        return files


@router.get("/tokenizer/files/{name}")
async def tokenizer_file(name: str, request: Request):
    store = getattr(request.app.state, "store", None)
    if store is None:
        return JSONResponse(status_code=503, content={"detail": "model is loading"})
    files = await asyncio.to_thread(tokenizer_files, store)
    data = files.get(name)
    if data is None:
        return JSONResponse(status_code=404, content={"detail": f"name: the tokenizer has no file {name!r}", "field": "name"})
    return Response(content=data, media_type="application/octet-stream")
