"""The engine's HTTP API: OpenAI-compatible chat completions, model list, health, and the trainer's routes.

The model loads in the background after the server starts listening, so /health answers `loading` at once
and the runner can poll it; other routes answer 503 until the model is ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import os
import time
import uuid
from typing import Any, Callable

import psutil
import torch
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from . import chat_format
from .backends.base import GenerationRequest, InferenceBackend
from .contracts.chat import (
    AssistantMessage, ChatChoice, ChatCompletionRequest, ChatCompletionResponse, ChoiceLogprobs, EngineHealth,
    EngineMemory, TokenLogprob, Usage,
)
from .model_loader import DEFAULT_MODEL
from .model_store import ModelStore, UnknownModelError

log = logging.getLogger(__name__)


def select_backend(store: ModelStore) -> InferenceBackend:
    """ROLLBOOK_BACKEND=auto|transformers|vllm; auto takes vLLM only with CUDA and vllm importable."""
    choice = os.environ.get("ROLLBOOK_BACKEND", "auto")
    use_vllm = choice == "vllm" or (
        choice == "auto" and torch.cuda.is_available() and importlib.util.find_spec("vllm") is not None
    )
    if use_vllm:
        from .backends.vllm_backend import VllmBackend  # imported only here: vllm is optional

        return VllmBackend(store)
    from .backends.transformers_backend import TransformersBackend

    return TransformersBackend(store)


def _error(status: int, message: str, param: str | None = None) -> JSONResponse:
    kind = {400: "invalid_request_error", 404: "not_found_error", 503: "service_unavailable"}.get(status, "server_error")
    return JSONResponse({"error": {"message": message, "type": kind, "param": param, "code": status}}, status)


def _validation_message(err: ValidationError) -> tuple[str, str]:
    first = err.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or "body"
    return f"invalid request: {field}: {first['msg']}", field


def create_app(
    model_name: str = DEFAULT_MODEL,
    store_factory: Callable[[str], ModelStore] | None = None,
    on_ready: Callable[[], None] | None = None,
    on_error: Callable[[str], None] | None = None,
) -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        app.state.loader = asyncio.create_task(load())
        yield
        app.state.loader.cancel()
        if app.state.backend is not None:
            await app.state.backend.close()

    app = FastAPI(title="Rollbook engine", lifespan=lifespan)
    app.state.store = None
    app.state.backend = None
    app.state.load_error = None
    factory = store_factory or (lambda name: ModelStore(name))

    async def load() -> None:
        try:
            store = await asyncio.to_thread(factory, model_name)
            app.state.backend = select_backend(store)
            app.state.store = store
            log.info("model %s loaded on %s (%s backend)", model_name, store.device, app.state.backend.name)
            if on_ready:
                on_ready()
        except Exception as exc:  # noqa: BLE001 - reported by /health
            log.exception("model load failed")
            app.state.load_error = f"{type(exc).__name__}: {exc}"
            if on_error:
                on_error(app.state.load_error)

    def not_ready() -> JSONResponse | None:
        if app.state.store is None:
            return _error(503, app.state.load_error or "model is loading")
        return None

    @app.get("/health")
    async def health() -> dict[str, Any]:
        store: ModelStore | None = app.state.store
        status = "ok" if store else ("error" if app.state.load_error else "loading")
        cuda = torch.cuda.is_available()
        body = EngineHealth(
            status=status,
            backend=app.state.backend.name if app.state.backend else "none",
            device=str(store.device) if store else ("cuda" if cuda else "cpu"),
            model=model_name,
            max_context_tokens=store.max_context_tokens if store else 0,
            memory=EngineMemory(
                rss_bytes=psutil.Process().memory_info().rss,
                gpu_allocated_bytes=torch.cuda.memory_allocated() if cuda else None,
            ),
            error=app.state.load_error,
        ).model_dump()
        # Extra key (ignored by the zod schema): batching statistics, e.g. how many batches served how many rows.
        body["stats"] = app.state.backend.health() if app.state.backend else {}
        return body

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        if (resp := not_ready()) is not None:
            return resp  # type: ignore[return-value]
        store: ModelStore = app.state.store
        now = int(time.time())
        data = [{"id": store.base_model_name, "object": "model", "created": now, "owned_by": "rollbook"}]
        data += [{"id": key, "object": "model", "created": now, "owned_by": "rollbook", "parent": store.base_model_name}
                 for key in store.loaded_adapters()]
        return {"object": "list", "data": data}

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        if (resp := not_ready()) is not None:
            return resp
        store: ModelStore = app.state.store
        try:
            req = ChatCompletionRequest.model_validate(await request.json())
        except ValidationError as err:
            message, field = _validation_message(err)
            return _error(400, message, field)
        except ValueError:
            return _error(400, "invalid request: body is not valid JSON")
        try:
            store.parse_model_name(req.model)
        except UnknownModelError as err:
            return _error(404, str(err), "model")
        try:
            prompt = chat_format.render_prompt(store.tokenizer, req.messages, req.tools)
        except Exception as err:  # noqa: BLE001 - template errors (jinja raise_exception) are the caller's input
            return _error(400, f"invalid request: messages: chat template failed: {err}", "messages")
        room = store.max_context_tokens - len(prompt)
        if room < 1:
            return _error(400, f"invalid request: messages: prompt is {len(prompt)} tokens, the model's context is "
                               f"{store.max_context_tokens}", "messages")
        stop = [req.stop] if isinstance(req.stop, str) else list(req.stop or [])
        gen = GenerationRequest(
            model=req.model, prompt_token_ids=prompt,
            # Clamped to the context left (vLLM would refuse); a clamped answer ends with finish_reason "length".
            max_tokens=min(req.max_tokens or room, room),
            temperature=1.0 if req.temperature is None else req.temperature,
            top_p=1.0 if req.top_p is None else req.top_p,
            n=req.n or 1, seed=req.seed, stop=[s for s in stop if s],
        )
        try:
            results = (await app.state.backend.generate([gen]))[0]
        except UnknownModelError as err:
            return _error(404, str(err), "model")
        return _response(req, prompt, results, store.tokenizer)

    try:
        # The trainer's routes (POST /train); they reach the store through request.app.state.store.
        from .train_routes import router as train_router
    except ImportError as err:
        log.warning("train routes not available: %s", err)
    else:
        app.include_router(train_router)
    return app


def _response(req: ChatCompletionRequest, prompt: list[int], results, tokenizer) -> JSONResponse:
    choices = []
    for index, r in enumerate(results):
        text, calls = (chat_format.parse_tool_calls(r.text) if req.tools else (r.text, []))
        choices.append(ChatChoice(
            index=index,
            message=AssistantMessage(content=text, tool_calls=calls or None),
            finish_reason="tool_calls" if calls and r.finish_reason == "stop" else r.finish_reason,
            logprobs=ChoiceLogprobs(content=[
                TokenLogprob(token=tokenizer.decode([t]), logprob=lp) for t, lp in zip(r.token_ids, r.logprobs)
            ]) if req.logprobs else None,
            token_ids=list(r.token_ids) if req.return_token_ids else None,
        ))
    completion = sum(len(r.token_ids) for r in results)
    body = ChatCompletionResponse(
        id=f"chatcmpl-{uuid.uuid4().hex}", created=int(time.time()), model=req.model, choices=choices,
        usage=Usage(prompt_tokens=len(prompt), completion_tokens=completion, total_tokens=len(prompt) + completion),
        prompt_token_ids=prompt if req.return_token_ids else None,
    )
    # exclude_none: zod's .optional() fields reject null, so absent fields must be left out, not nulled.
    # Nothing required-but-nullable is ever None here (content is a string, finish_reason is set).
    return JSONResponse(body.model_dump(exclude_none=True))
