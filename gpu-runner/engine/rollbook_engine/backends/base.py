"""The interface every inference backend implements.

The server renders the chat template and tokenises once, so every backend samples from exactly the same
prompt token ids and the response can report them (`prompt_token_ids`).

Streaming: a request may carry `on_token` / `on_finish`; the backend calls them ON THE EVENT LOOP (from its
worker thread through `loop.call_soon_threadsafe`) for each sampled token and when each sample ends, in order.
Cancellation: cancelling the task awaiting `generate()` (the client went away) must take the request's rows
out of the queue and out of a running batch within one decode step; nothing samples for nobody.

Logprob convention (all backends): `logprobs[i]` is log p(token_i) under the model's RAW distribution,
i.e. log_softmax of the logits at temperature 1 with no top-p filtering, whatever temperature/top_p were
used to sample. The trainer recomputes exactly that quantity, so the PPO ratio starts at 1. (vLLM's
default `logprobs_mode="raw_logprobs"` reports the same thing.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol


@dataclass
class SampledToken:
    token_id: int
    logprob: float  # raw distribution (see module doc)
    top_logprobs: list[tuple[int, float]]  # the request's top_logprobs most likely (id, logprob), best first


@dataclass
class GenerationRequest:
    model: str  # as requested: the base model name or "<run>@<step>"
    prompt_token_ids: list[int]
    max_tokens: int
    temperature: float = 1.0  # 0 means greedy
    top_p: float = 1.0
    n: int = 1
    seed: int | None = None  # row i of n samples with seed + i, so n>1 rows differ but reproduce
    stop: list[str] = field(default_factory=list)
    top_logprobs: int = 0  # also report the k most likely tokens at each step
    # Lark grammar (llguidance's dialect, constrained.py) every sample must follow, or None (unconstrained): set for a forced
    # tool call (tool_choice "required" / named) in a format that writes one (tool_formats/grammar.py).
    grammar: str | None = None
    user: str | None = None  # fair-share key between tenants (the runner sends the run id); None: the model
    # Streaming callbacks, called on the event loop: (sample index 0..n-1, token) and (index, result).
    on_token: Callable[[int, SampledToken], None] | None = None
    on_finish: Callable[[int, GenerationResult], None] | None = None


@dataclass
class GenerationResult:
    token_ids: list[int]  # every sampled token, the EOS / stop-completing token included
    logprobs: list[float]  # one per token id, raw distribution (see module doc)
    text: str  # decoded token ids without special tokens, cut before a matched stop string
    finish_reason: Literal["stop", "length"]
    top_logprobs: list[list[tuple[int, float]]] | None = None  # one list per token id when asked for


class InferenceBackend(Protocol):
    name: str

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[list[GenerationResult]]:
        """One list of `n` results per request, in order. Raises UnknownModelError for an unknown model."""
        ...

    def health(self) -> dict[str, Any]:
        """Backend statistics (batches run, rows, tokens, queue depth...) for GET /health."""
        ...

    async def close(self) -> None: ...
