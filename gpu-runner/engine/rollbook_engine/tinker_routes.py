"""HTTP routes of the engine's Tinker primitives: POST /tinker/{forward_backward, optim_step, save, load, sample}.

Bodies are contracts/tinker-engine.ts's (mirrored in contracts/tinker.py). Token-protected like every route
(auth.BearerAuth covers the whole app). Refusals name the field, as /train's do, written `data[0].tokens[3]`:
  422 schema or token-level (lengths, ids ≥ vocabulary, a loss's missing input), {"detail", "field", "errors"?}
  400 what this engine cannot serve (another base model, top_k), 404 a checkpoint or model not found for the
  request's workspace (ownership.py: another workspace's reads "not found"), 409 the run's state refuses (another
  lora_rank, lost gradients, a checkpoint of that step from another history), 413 too large for memory,
  503 the model is loading or the adapter memory budget is full, 507 the disk is full.
The training calls run in the train queue and under store.exclusive() (tinker/locked.py), as /train's steps do.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TypeVar

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ValidationError

from .adapter_ledger import OverBudget
from .contracts.tinker import (
    TinkerForwardBackwardRequest,
    TinkerLoadRequest,
    TinkerOptimStepRequest,
    TinkerSampleRequest,
    TinkerSaveRequest,
)
from .errors import RequestError
from .model_store import UnknownModelError
from .ownership import may_use, request_workspace
from .request_io import unless_disconnected
from .tinker.checkpointing import load_sync, save_sync
from .tinker.checks import check_forward_backward, check_sample
from .tinker.locked import exclusive_call
from .tinker.sampling import sample
from .tinker.training import forward_backward_sync, optim_step_sync
from .trainer.batch import BadRequest
from .trainer.checkpoints import CheckpointNotSaved
from .trainer.errors import StepConflict, TrainFailure

log = logging.getLogger(__name__)
router = APIRouter(prefix="/tinker")
M = TypeVar("M", bound=BaseModel)


def field_path(loc: tuple) -> str:
    """pydantic's ("data", 0, "tokens", 3) as "data[0].tokens[3]", the way the engine's own checks name fields."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(root)"


def _refusal(status: int, detail: str, field: str | None = None) -> JSONResponse:
    return JSONResponse(status_code=status, content={"detail": detail, "field": field})


async def _parse(request: Request, model: type[M]) -> M | JSONResponse:
    try:
        return model.model_validate_json(await request.body())
    except ValidationError as e:
        errors = [{"field": field_path(err["loc"]), "message": err["msg"]} for err in e.errors(include_url=False)]
        return JSONResponse(status_code=422, content={
            "detail": "; ".join(f"{x['field']}: {x['message']}" for x in errors),
            "field": errors[0]["field"] if errors else None, "errors": errors})


def _failure(e: Exception) -> JSONResponse:
    if isinstance(e, BadRequest):
        return _refusal(e.status, str(e), e.field)
    if isinstance(e, (StepConflict, TrainFailure)):
        return _refusal(409, str(e))
    if isinstance(e, OverBudget):
        return _refusal(503, str(e))
    if isinstance(e, CheckpointNotSaved):
        return _refusal(507, str(e))
    raise e


def _store(request: Request):
    return getattr(request.app.state, "store", None)


def _loading() -> JSONResponse:
    return _refusal(503, "model is loading")



async def _train_call(request: Request, model: type[M], run: Callable[[object, M], BaseModel],
                      precheck: Callable[[object, M], object] | None = None, workspace_check=None):
    store = _store(request)
    if store is None:
        return _loading()
    req = await _parse(request, model)
    if isinstance(req, JSONResponse):
        return req
    try:
        if workspace_check is not None:
            workspace_check(store, req, request_workspace(request.headers))
        if precheck is not None:
            # Before queueing: a refusal costs no wait behind other runs' steps (checked again under the lock).
            await asyncio.to_thread(precheck, store, req)
        result = await exclusive_call(store, lambda: run(store, req))
    except (BadRequest, StepConflict, TrainFailure, OverBudget, CheckpointNotSaved) as e:
        return _failure(e)
    return result.model_dump()


@router.post("/forward_backward")
async def forward_backward(request: Request):
    return await _train_call(request, TinkerForwardBackwardRequest, forward_backward_sync, check_forward_backward)


@router.post("/optim_step")
async def optim_step(request: Request):
    return await _train_call(request, TinkerOptimStepRequest, optim_step_sync)


@router.post("/save")
async def save(request: Request):
    return await _train_call(request, TinkerSaveRequest, save_sync)


def _owned_source(store, req: TinkerLoadRequest, workspace: str | None) -> None:
    # A checkpoint only for the workspace that owns its run (ownership.py), the same "not found" otherwise.
    if not may_use(store.runs_dir, req.source_run_id, workspace):
        raise BadRequest("source_run_id", f"run '{req.source_run_id}' has no checkpoint for step {req.step}", 404)


@router.post("/load")
async def load(request: Request):
    return await _train_call(request, TinkerLoadRequest, load_sync, workspace_check=_owned_source)


@router.post("/sample")
async def sample_route(request: Request):
    store, backend = _store(request), getattr(request.app.state, "backend", None)
    if store is None or backend is None:
        return _loading()
    req = await _parse(request, TinkerSampleRequest)
    if isinstance(req, JSONResponse):
        return req
    try:
        room = check_sample(store, req)
        store.parse_model_for(req.model, request_workspace(request.headers))
        result = await unless_disconnected(request, sample(store, backend, req, room))
    except BadRequest as e:
        return _failure(e)
    except UnknownModelError as e:
        return _refusal(404, str(e), "model")
    except RequestError as e:  # the backend's own refusals (vLLM: an adapter rank above its limit)
        return _refusal(e.status, e.message, e.param)
    if result is None:
        return Response(status_code=499)  # the client went away (nginx's "client closed request")
    return result.model_dump()
