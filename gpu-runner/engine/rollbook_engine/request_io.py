"""Reading a chat request off the wire, and noticing when its client has gone away.

- The body is capped (413) from its Content-Length, or as soon as more than the limit has arrived.
- Validation errors name the field at fault, as zod's issue paths do (`continue_from.message_count`).
- A plain (non-streamed) request runs beside a watch on the connection: if the client goes away (the runner
  aborted a rollout), the generation is cancelled, and the backend drops its rows from the queue and the
  running batch (streamed requests get the same from the streaming response, which is closed).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from fastapi import Request
from pydantic import ValidationError

from .contracts.chat import ChatCompletionRequest, NestedFieldError
from .errors import RequestError

T = TypeVar("T")
R = TypeVar("R", bound=ChatCompletionRequest)


def _validation_message(err: ValidationError) -> tuple[str, str]:
    first = err.errors()[0]
    path = [str(p) for p in first["loc"]]
    message = first["msg"]
    cause = (first.get("ctx") or {}).get("error")
    if isinstance(cause, ValueError):  # our validators' own words, without pydantic's "Value error, "
        message = str(cause)
    if isinstance(cause, NestedFieldError):  # an error about a field inside the validated one
        path.append(cause.path)
    field = ".".join(path) or "body"
    return f"invalid request: {field}: {message}", field


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refused (413) from its Content-Length or as soon as more than `limit` bytes have arrived.
    Not FastAPI's max_body_size: that applies to every route (the trainer's /train bodies are legitimately
    large) and answers in plain text where OpenAI clients expect an error object."""
    too_large = RequestError(f"invalid request: body larger than {limit} bytes (ROLLBOOK_MAX_REQUEST_BYTES)", None, 413)
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large
    parts, size = [], 0
    async for part in request.stream():
        size += len(part)
        if size > limit:
            raise too_large
        parts.append(part)
    return b"".join(parts)


def parse_request(body: bytes) -> ChatCompletionRequest:
    return parse_as(ChatCompletionRequest, body)


def parse_as(model: type[R], body: bytes) -> R:
    """`model` (a chat completion request, or one built on it: POST /tokenize's) from a body; errors name the field."""
    try:
        return model.model_validate_json(body)
    except ValidationError as err:
        if err.errors()[0]["type"] == "json_invalid":
            raise RequestError("invalid request: body is not valid JSON") from err
        message, field = _validation_message(err)
        raise RequestError(message, field) from err


async def _disconnected(request: Request) -> None:
    """Returns when the client has gone away. Once the body has been read, the server's receive() answers
    only that (uvicorn: "http.disconnect" when the connection closes)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def unless_disconnected(request: Request, work: Awaitable[T]) -> T | None:
    """`work`'s result, or None (with `work` cancelled) if the client goes away first: a rollout the runner
    aborted must not keep its rows in the queue or the batch."""
    task = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
        return task.result() if task.done() else None
    finally:
        for t in (task, watch):
            if not t.done():
                t.cancel()
