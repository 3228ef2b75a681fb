"""The one error type request handling raises for the caller's mistakes; server.py maps it to an
OpenAI-shaped error body (`{"error": {"message", "type", "param", "code"}}`) once."""

from __future__ import annotations


class RequestError(Exception):
    def __init__(self, message: str, param: str | None = None, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.status = status
