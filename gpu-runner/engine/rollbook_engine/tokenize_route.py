"""POST /tokenize: the token ids the engine renders a chat completion request to (vLLM's route and shape).

The runner trains on conversations sampled by outside clients (OpenPipe ART sends OpenAI messages and the
sampled Choices): it needs the prompt ids the engine fed the model before each sampled reply, and, for a reply
sampled elsewhere, that reply re-tokenised through the chat template.
- add_generation_prompt true (default): prompt.build_prompt, the function /v1/chat/completions uses, so these
  are exactly the ids it feeds the model for the same body (generation prompt and tool_choice prefill included):
  serving and training cannot drift apart.
  With `sampled_token_ids` (the reply sampled after it): when the engine served that reply after a prefill (a
  tool_choice-forced call, which the messages sent back do not say), the prompt it fed, prefill included, from
  its record (served_prompts.py), `served: true`; otherwise the rendering, `served: false`.
- false: prompt.conversation_ids, the whole conversation rendered without a generation prompt and tokenised
  the same way (no special tokens added: the template wrote them).
Errors are FastAPI's shape, as /detokenize's: `{"detail", "field"}`, 422 for a field at fault.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from .contracts.tokenize import TokenizeRequest, TokenizeResponse
from .errors import RequestError
from .model_store import UnknownModelError
from .ownership import request_workspace
from .prompt import build_prompt, conversation_ids
from .request_io import parse_as, read_body
from .settings import engine_settings

router = APIRouter()


def _refused(err: RequestError) -> JSONResponse:
    # The chat route's 400 (a field at fault) is this route's 422, as /detokenize and /train answer.
    status = 422 if err.status == 400 else err.status
    field = err.param or ("body" if status == 422 else None)
    return JSONResponse(status_code=status, content={"detail": err.message, "field": field})


@router.post("/tokenize")
async def tokenize(request: Request):
    store = getattr(request.app.state, "store", None)
    if store is None:
        return JSONResponse(status_code=503, content={"detail": "model is loading"})
    settings = getattr(request.app.state, "settings", None) or engine_settings()
    try:
        req = parse_as(TokenizeRequest, await read_body(request, settings.max_request_bytes))
        try:
            store.parse_model_for(req.model, request_workspace(request.headers))
        except UnknownModelError as err:
            raise RequestError(str(err), "model", 404) from err
        served = False
        if req.add_generation_prompt:
            ids = build_prompt(store.tokenizer, store.vocab, req, store.max_context_tokens, store.eos_token_ids).token_ids
            records = getattr(request.app.state, "served_prompts", None)
            if req.sampled_token_ids and records is not None:
                fed = records.fed_prompt(request_workspace(request.headers), req.sampled_token_ids, ids)
                if fed is not None:
                    ids, served = fed, True
        elif req.sampled_token_ids is not None:
            raise RequestError("invalid request: sampled_token_ids: only with add_generation_prompt: true (they "
                               "name the reply sampled after a prompt)", "sampled_token_ids")
        elif req.continue_from is not None:
            raise RequestError("invalid request: continue_from: only with add_generation_prompt: true (it continues "
                               "a prompt; the whole conversation is rendered from its messages)", "continue_from")
        else:
            ids = conversation_ids(store.tokenizer, store.vocab, req, store.max_context_tokens)
    except RequestError as err:
        return _refused(err)
    return TokenizeResponse(count=len(ids), max_model_len=store.max_context_tokens, tokens=ids,
                            served=served).model_dump()
