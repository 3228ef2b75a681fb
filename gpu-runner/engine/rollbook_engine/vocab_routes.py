"""POST /detokenize: the text piece of each token id, as the engine's tokenizer decodes it.

The runner's token view (gpu-runner/src/http/rollout-tokens.ts) shows a rollout's tokens one by one; the
runner has no tokenizer of its own, and only this process knows the model's vocabulary. A piece is
`tokenizer.decode([id])`: special tokens as written, byte-level pieces as text (a piece holding part of a
UTF-8 character decodes to U+FFFD, as OpenAI's logprobs `token` does).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from .contracts.detokenize import MAX_DETOKENIZE_IDS, DetokenizeRequest, DetokenizeResponse
from .request_io import RequestError, read_body

router = APIRouter()
# Room for MAX_DETOKENIZE_IDS ids of up to 7 digits plus commas; anything bigger is refused before parsing.
_MAX_BODY_BYTES = MAX_DETOKENIZE_IDS * 8 + 1024


def _field(loc: tuple) -> str:
    return ".".join(str(p) for p in loc) or "(root)"


@router.post("/detokenize")
async def detokenize(request: Request):
    store = getattr(request.app.state, "store", None)
    if store is None:
        return JSONResponse(status_code=503, content={"detail": "model is loading"})
    try:
        req = DetokenizeRequest.model_validate_json(await read_body(request, _MAX_BODY_BYTES))
    except RequestError as e:
        return JSONResponse(status_code=e.status, content={"detail": e.message})
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        return JSONResponse(status_code=422, content={"detail": f"{_field(err['loc'])}: {err['msg']}", "field": _field(err["loc"])})
    vocab = store.vocab
    bad = next((i for i, t in enumerate(req.token_ids) if t >= vocab.size), None)
    if bad is not None:
        field = f"token_ids.{bad}"
        return JSONResponse(
            status_code=422,
            content={"detail": f"{field}: token id {req.token_ids[bad]} ≥ vocabulary size {vocab.size}", "field": field},
        )
    return DetokenizeResponse(pieces=[vocab.token_text(t) for t in req.token_ids]).model_dump()
