"""The engine's HTTP API: OpenAI-compatible chat completions, model list, health, and the trainer's routes.

The model loads in the background after the server starts listening, so /health answers `loading` at once
and the runner can poll it; other routes answer 503 until the model is ready.

POST /v1/chat/completions, in order: the body is read up to ROLLBOOK_MAX_REQUEST_BYTES (413 beyond), validated
(400 naming the field), the prompt rendered and bounded by length before it is tokenised (prompt.py), then
sampled, plain (request_io cancels the generation if the client goes away first) or as server-sent events
(streaming.py; closing the stream cancels it). Errors are OpenAI's shape: {"error": {message, type, param, code}}.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import time
from collections.abc import Callable
from typing import Any, Literal

import psutil
import torch
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from . import tool_formats
from .auth import BearerAuth, authorized
from .backends.base import GenerationRequest, InferenceBackend
from .contracts.chat import EngineHealth, EngineMemory
from .errors import RequestError
from .model_loader import DEFAULT_MODEL
from .model_store import ModelStore, UnknownModelError
from .ownership import owned_checkpoints, request_workspace
from .prompt import build_prompt
from .request_io import parse_request, read_body, unless_disconnected
from .responses import chat_response
from .served_prompts import ServedPrompts
from .settings import EngineSettings, engine_settings
from .streaming import sse_events

log = logging.getLogger(__name__)


def select_backend_name() -> str:
    """ROLLBOOK_BACKEND=auto|transformers|vllm; auto takes vLLM only with CUDA and vllm importable."""
    choice = engine_settings().backend
    use_vllm = choice == "vllm" or (
        choice == "auto" and torch.cuda.is_available() and importlib.util.find_spec("vllm") is not None
    )
    return "vllm" if use_vllm else "transformers"


def select_backend(store: ModelStore) -> InferenceBackend:
    if select_backend_name() == "vllm":
        from .backends.vllm_backend import VllmBackend  # imported only here: vllm is optional

        return VllmBackend(store)
    from .backends.transformers_backend import TransformersBackend

    return TransformersBackend(store)


def _loaded_checkpoints(backend: InferenceBackend, store: ModelStore) -> list[str]:
    """The checkpoints the backend holds for serving: vLLM loads its LoRAs itself (VllmBackend.loaded_models),
    the transformers backend serves the store's."""
    loaded = getattr(backend, "loaded_models", None)
    return loaded() if loaded is not None else store.loaded_adapters()


def _error(status: int, message: str, param: str | None = None) -> JSONResponse:
    kind = {400: "invalid_request_error", 404: "not_found_error", 413: "invalid_request_error",
            503: "service_unavailable"}.get(status, "server_error")
    return JSONResponse({"error": {"message": message, "type": kind, "param": param, "code": status}}, status)


def create_app(
    model_name: str = DEFAULT_MODEL,
    store_factory: Callable[[str], ModelStore] | None = None,
    on_ready: Callable[[], None] | None = None,
    on_error: Callable[[str], None] | None = None,
    settings: EngineSettings | None = None,
) -> FastAPI:
    settings = settings or engine_settings()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        app.state.loader = asyncio.create_task(load())
        yield
        app.state.loader.cancel()
        if app.state.backend is not None:
            await app.state.backend.close()

    app = FastAPI(title="Rollbook engine", lifespan=lifespan)
    app.add_middleware(BearerAuth, token=settings.engine_token)
    if settings.engine_token is None:
        log.warning("ENGINE_TOKEN is not set: every route (chat with any run's checkpoints, /train) is open to "
                    "anyone who can reach this port; the runner sets one for the engines it spawns")
    app.state.settings = settings  # for routes defined outside create_app (tokenize_route.py's body limit)
    app.state.store = None
    app.state.backend = None
    app.state.load_error = None
    # The prompts fed before prefilled (forced-call) replies, for POST /tokenize's sampled_token_ids.
    app.state.served_prompts = ServedPrompts()
    factory = store_factory or (lambda name: ModelStore(name))

    async def load() -> None:
        try:
            store = await asyncio.to_thread(factory, model_name)
            app.state.backend = select_backend(store)
            app.state.store = store
            log.info("model %s loaded on %s (%s backend)", model_name, store.device, app.state.backend.name)
            if on_ready:
                on_ready()
        except Exception as exc:  # reported by /health
            log.exception("model load failed")
            app.state.load_error = f"{type(exc).__name__}: {exc}"
            if on_error:
                on_error(app.state.load_error)

    def not_ready() -> JSONResponse | None:
        if app.state.store is None:
            return _error(503, app.state.load_error or "model is loading")
        return None

    @app.get("/health")
    async def health(request: Request) -> dict[str, Any]:
        store: ModelStore | None = app.state.store
        status: Literal["ok", "loading", "error"] = "ok" if store else ("error" if app.state.load_error else "loading")
        if not authorized(request.scope, settings.engine_token):
            return {"status": status}  # liveness only: model, memory and errors are for the runner
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
            # The runner's fair queue keeps at most this many chat calls on the engine (None: it uses its setting).
            batch_capacity=getattr(app.state.backend, "batch_capacity", None),
            tool_format=tool_formats.for_tokenizer(store.tokenizer).name if store else None,
        ).model_dump()
        # Extra key (ignored by the zod schema): batching statistics, e.g. how many batches served how many rows.
        body["stats"] = app.state.backend.health() if app.state.backend else {}
        # The per-run memory ledger in brief (GET /tenants has every entry).
        if store is not None:
            snap = store.ledger.snapshot()
            body["tenancy"] = {k: snap[k] for k in ("budget_bytes", "used_bytes", "peak_bytes", "evictions",
                                                    "spills", "restores")} | {"resident": len(snap["resident"])}
        return body

    @app.get("/v1/models")
    async def models(request: Request) -> dict[str, Any]:
        if (resp := not_ready()) is not None:
            return resp  # type: ignore[return-value]
        store: ModelStore = app.state.store
        now = int(time.time())
        data = [{"id": store.base_model_name, "object": "model", "created": now, "owned_by": "rollbook"}]
        data += [{"id": key, "object": "model", "created": now, "owned_by": "rollbook", "parent": store.base_model_name}
                 for key in owned_checkpoints(store.runs_dir, _loaded_checkpoints(app.state.backend, store),
                                              request_workspace(request.headers))]
        return {"object": "list", "data": data}

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        if (resp := not_ready()) is not None:
            return resp
        store: ModelStore = app.state.store
        backend: InferenceBackend = app.state.backend
        try:
            req = parse_request(await read_body(request, settings.max_request_bytes))
            try:
                # A checkpoint only for the workspace that owns its run (ownership.py), whatever came before.
                store.parse_model_for(req.model, request_workspace(request.headers))
            except UnknownModelError as err:
                raise RequestError(str(err), "model", 404) from err
            prompt = build_prompt(store.tokenizer, store.vocab, req, store.max_context_tokens, store.eos_token_ids)
        except RequestError as err:
            return _error(err.status, err.message, err.param)
        workspace = request_workspace(request.headers)

        def remember(result) -> None:
            if prompt.unprefilled_ids is not None:
                app.state.served_prompts.record(workspace, list(result.token_ids), prompt.unprefilled_ids,
                                                prompt.token_ids)

        room = store.max_context_tokens - len(prompt.token_ids)
        stop = [req.stop] if isinstance(req.stop, str) else list(req.stop or [])
        limit = req.completion_limit
        gen = GenerationRequest(
            model=req.model, prompt_token_ids=prompt.token_ids,
            # Clamped to the context left (vLLM would refuse); a clamped answer ends with finish_reason "length".
            max_tokens=min(limit or room, room),
            temperature=1.0 if req.temperature is None else req.temperature,
            top_p=1.0 if req.top_p is None else req.top_p,
            n=req.n or 1, seed=req.seed, stop=[s for s in stop if s],
            top_logprobs=(req.top_logprobs or 0) if req.logprobs else 0,
            user=req.user, grammar=prompt.grammar,
        )
        if req.stream:
            return StreamingResponse(sse_events(backend, gen, req, prompt, store.vocab, store.tokenizer, remember),
                                     media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
        try:
            results = await unless_disconnected(request, backend.generate([gen]))
        except UnknownModelError as err:
            return _error(404, str(err), "model")
        except RequestError as err:  # the backend's own refusals (vLLM: an adapter rank above its limit)
            return _error(err.status, err.message, err.param)
        if results is None:
            return Response(status_code=499)  # nobody is listening; nginx's code for "client closed request"
        for result in results[0]:
            remember(result)
        return JSONResponse(chat_response(req, prompt, results[0], store.vocab).model_dump())

    try:
        # The trainer's routes (POST /train); they reach the store through request.app.state.store.
        from .train_routes import router as train_router
    except ImportError as err:
        log.warning("train routes not available: %s", err)
    else:
        app.include_router(train_router)
        # The engine's Tinker primitives (POST /tinker/*): the trainer's state and checkpoints, Tinker's calls.
        from .tinker_routes import router as tinker_router

        app.include_router(tinker_router)
    # POST /detokenize (token ids → text pieces) for the runner's token view.
    from .vocab_routes import router as vocab_router

    app.include_router(vocab_router)
    # GET /tokenizer/files/{name}: the base model's tokenizer files (the Tinker SDK's get_tokenizer, via the web).
    from .tokenizer_files import router as tokenizer_files_router

    app.include_router(tokenizer_files_router)
    # POST /tokenize (a chat request → the ids the engine renders it to) for training on outside samples.
    from .tokenize_route import router as tokenize_router

    app.include_router(tokenize_router)
    return app
