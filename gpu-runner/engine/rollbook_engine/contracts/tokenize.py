"""Pydantic mirror of contracts/tokenize.ts (POST /tokenize): a chat completion request → its token ids.

tests/test_tokenize.py compares these models' JSON Schema with zod's and parses contracts/fixtures/tokenize.json,
as fixtures.test.ts does.
"""

from __future__ import annotations

from pydantic import BaseModel

from .chat import ChatCompletionRequest


class TokenizeRequest(ChatCompletionRequest):
    # The chat request's fields and rules between them (tool_choice needs tools, …), plus vLLM's flag.
    # True: the prompt ids chat completions would feed the model; False: the whole conversation, no generation prompt.
    add_generation_prompt: bool = True
    # The reply sampled after this prompt (its token ids): when the engine served it after a prefill (a forced
    # tool call, served_prompts.py), the answer is the prompt it fed, prefill included, and `served` is true.
    sampled_token_ids: list[int] | None = None


class TokenizeResponse(BaseModel):
    count: int
    max_model_len: int
    tokens: list[int]
    served: bool = False  # the tokens are a served record's (sampled_token_ids): the prompt the model was fed
