"""Pydantic mirror of contracts/detokenize.ts (POST /detokenize): token ids → text pieces.

Both sides parse contracts/fixtures/detokenize.json (tests/test_detokenize.py, fixtures.test.ts), and
tests/test_detokenize.py compares these models' JSON Schema with zod's.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

# More ids than this in one request are refused (the token view asks for one rollout's distinct ids).
MAX_DETOKENIZE_IDS = 100_000


class DetokenizeRequest(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")

    token_ids: list[Annotated[int, Field(ge=0)]] = Field(max_length=MAX_DETOKENIZE_IDS)


class DetokenizeResponse(BaseModel):
    pieces: list[str]
