"""Bearer-token check in front of every engine route but /health.

The engine serves every run's checkpoints through its OpenAI endpoint and trains on request, so only its
runner may call it: the runner passes ENGINE_TOKEN when it spawns the engine and sends it on every request.
A plain ASGI middleware rather than Starlette's BaseHTTPMiddleware, which would buffer the streaming routes
(SSE chat, /train progress) and hide client disconnects from them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

# /health stays open: the supervisor polls it while the model loads, and without the token it answers only
# the status (server.py), nothing about the model or the machine.
OPEN_PATHS = frozenset({"/health"})

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def token_matches(presented: str | None, expected: str) -> bool:
    """Constant-time; hashing first makes both sides the same length, so the token's length leaks nothing."""
    if not presented:
        return False
    a = hashlib.sha256(presented.encode("utf-8", "surrogatepass")).digest()
    b = hashlib.sha256(expected.encode("utf-8")).digest()
    return hmac.compare_digest(a, b)


def bearer(headers: list[tuple[bytes, bytes]] | Any) -> str | None:
    """The token of an `Authorization: Bearer <token>` header (first one), or None."""
    for name, value in headers:
        if name.lower() == b"authorization":
            text = value.decode("latin-1").strip()
            scheme, _, token = text.partition(" ")
            if scheme.lower() != "bearer":
                return None
            return token.strip() or None
    return None


def authorized(scope: Mapping[str, Any], token: str | None) -> bool:
    return token is None or token_matches(bearer(scope.get("headers") or []), token)


class BearerAuth:
    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope.get("path") in OPEN_PATHS or authorized(scope, self.token):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        # OpenAI's error shape, like every other error of the engine.
        body = json.dumps({"error": {"message": "missing or wrong engine token (Authorization: Bearer <ENGINE_TOKEN>)",
                                     "type": "authentication_error", "param": None, "code": 401}}).encode()
        await send({"type": "http.response.start", "status": 401, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            (b"www-authenticate", b'Bearer realm="rollbook-engine"')]})
        await send({"type": "http.response.body", "body": body})
