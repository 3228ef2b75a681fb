"""HTTP routes of the trainer: POST /train (JSON-lines stream) and GET /runs/{run_id}/checkpoints.

Everything that can be checked before the step starts is answered with a real status code and the field
named (422 schema or token-level, 400 wrong model / LoRA target, 409 step out of order). Once the stream has
started the status is 200 and the outcome is its last line: `result` or `error`. The step itself runs in a
worker thread under the store's exclusive lock; a client that disconnects does not stop it (the checkpoint
is still written, and GET /runs/{run_id}/checkpoints shows it).
"""

from __future__ import annotations

import asyncio
import logging

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import ValidationError

from .contracts.train import ErrorLine, ProgressLine, TrainRequest
from .ownership import may_use, request_workspace
from .trainer.batch import BadRequest
from .trainer.checkpoints import CheckpointNotSaved, list_checkpoints
from .trainer.errors import StepConflict, TrainFailure
from .trainer.step_checks import RUN_ID_RULE, check_request, valid_run_id
from .trainer.tenancy import tenants as tenants_report
from .trainer.trainer import train_step

log = logging.getLogger(__name__)
router = APIRouter()


def _field(loc: tuple) -> str:
    return ".".join(str(p) for p in loc) or "(root)"


def _validation_response(e: ValidationError) -> JSONResponse:
    errors = [{"field": _field(err["loc"]), "message": err["msg"]} for err in e.errors(include_url=False)]
    return JSONResponse(
        status_code=422,
        content={"detail": "; ".join(f"{x['field']}: {x['message']}" for x in errors), "errors": errors},
    )


def _error_response(e: Exception) -> JSONResponse:
    if isinstance(e, BadRequest):
        return JSONResponse(status_code=e.status, content={"detail": str(e), "field": e.field})
    return JSONResponse(status_code=409, content={"detail": str(e)})


def _line(model) -> bytes:
    return (model.model_dump_json() + "\n").encode()


def _loading() -> JSONResponse:
    # server.py loads the model in the background; until then app.state.store is None.
    return JSONResponse(status_code=503, content={"detail": "model is loading"})


@router.post("/train")
async def train(request: Request):
    store = getattr(request.app.state, "store", None)
    if store is None:
        return _loading()
    try:
        req = TrainRequest.model_validate_json(await request.body())
    except ValidationError as e:
        return _validation_response(e)
    try:
        # A fork starts from another run's checkpoint: only one of the workspace the request acts for (ownership.py).
        init = req.init_from
        if init is not None and not may_use(store.runs_dir, init.run_id, request_workspace(request.headers)):
            raise BadRequest("init_from.run_id", f"run '{init.run_id}' has no checkpoint for step {init.step}", 404)
        # Reads the model's module names and the checkpoint folder: cheap, but off the event loop anyway.
        await asyncio.to_thread(check_request, store, req)
    except (BadRequest, StepConflict) as e:
        return _error_response(e)

    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[ProgressLine] = asyncio.Queue()

    def on_progress(line: ProgressLine) -> None:  # called from the training thread
        loop.call_soon_threadsafe(queue.put_nowait, line)

    task = asyncio.create_task(train_step(store, req, on_progress))
    # If the client went away nobody awaits the task; read its exception so asyncio does not warn.
    task.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def stream():
        while True:
            getter = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
            if getter in done:
                yield _line(getter.result())
                continue
            getter.cancel()
            break
        # Progress posted just before the step finished may still be queued (call_soon_threadsafe).
        await asyncio.sleep(0)
        while not queue.empty():
            yield _line(queue.get_nowait())
        try:
            yield _line(task.result())
        except (BadRequest, StepConflict, TrainFailure, CheckpointNotSaved) as e:
            # Raced with another request for the same step, or the step failed (nothing saved; a full disk says so).
            yield _line(ErrorLine(message=str(e)))
        except Exception as e:  # the stream must end with a line, never a stack trace
            log.exception("train step %s of run %s failed", req.step, req.run_id)
            yield _line(ErrorLine(message=f"training failed ({type(e).__name__}): {e}"))

    return StreamingResponse(stream(), media_type="application/x-ndjson")


@router.get("/tenants")
async def tenants(request: Request):
    """The per-run memory ledger: resident training states and serving adapters (bytes each, most recently
    used first), the budget, the peak, evictions / spills / restores, and the train queue. Token-protected like
    every route but /health."""
    store = getattr(request.app.state, "store", None)
    if store is None:
        return _loading()
    return tenants_report(store)


@router.get("/runs/{run_id}/checkpoints")
async def checkpoints(run_id: str, request: Request):
    if not valid_run_id(run_id):
        return JSONResponse(status_code=422, content={"detail": f"run_id: must be {RUN_ID_RULE}", "field": "run_id"})
    store = getattr(request.app.state, "store", None)
    if store is None:
        return _loading()
    ckpts = await asyncio.to_thread(list_checkpoints, store, run_id)
    return {
        "run_id": run_id,
        # The next /train for this run must send step = newest_step + 1.
        "newest_step": ckpts[-1].step if ckpts else 0,
        "checkpoints": [c.model_dump() for c in ckpts],
    }
