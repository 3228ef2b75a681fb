"""Settings of the engine's HTTP layer, read once from the environment.

pydantic-settings is not among the engine's dependencies (and cannot be added to the shared venv), so this
is a plain pydantic model filled from `ROLLBOOK_*` variables: one place, typed and validated at start.
(Older knobs — ROLLBOOK_MAX_BATCH, ROLLBOOK_GATHER_MS… — are still read where they are used.)
"""

from __future__ import annotations

import os

from pydantic import BaseModel, Field


class EngineSettings(BaseModel):
    max_request_bytes: int = Field(
        default=16 * 1024 * 1024, ge=1024,
        description="ROLLBOOK_MAX_REQUEST_BYTES: larger request bodies get 413 before they are read whole; "
                    "a body that size can only be a prompt far beyond any context anyway.",
    )

    engine_token: str | None = Field(
        default=None, min_length=16,
        description="ENGINE_TOKEN: every route but /health needs `Authorization: Bearer <ENGINE_TOKEN>` (401 "
                    "otherwise). The runner makes a random one for each engine it spawns. Unset: the engine "
                    "is open to anyone who can reach its port (it warns at start).",
    )

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> "EngineSettings":
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        if raw := env.get("ROLLBOOK_MAX_REQUEST_BYTES"):
            values["max_request_bytes"] = int(raw)
        if token := env.get("ENGINE_TOKEN"):
            values["engine_token"] = token
        return cls(**values)
