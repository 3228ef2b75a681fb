"""Constrained decoding for `tool_choice` "required" / a named function: the grammar of the rest of a call
after the format's prefill, and the per-row matcher the transformers backend masks logits with.

Library: llguidance (Microsoft's guidance engine), chosen because it is maintained, it is what vLLM's guided
decoding runs (its "guidance" structured-output backend), its grammars are Lark with `%json{schema}` for a
JSON value matching a JSON schema (so a call = literal scaffolding + the tool's `parameters` as a schema),
its token masks are computed in Rust in tens of microseconds, and it ships an abi3 wheel with no torch pin
(it cannot drag the engine's torch version). Pinned in requirements.txt.

Each format writes the grammar of the rest of its call after its prefill (tool_formats/grammar.py); a request
carries its Lark text (GenerationRequest.grammar, which vLLM's guidance backend takes as is) and each of its
rows on the transformers backend gets a RowGrammar. Once the grammar is
complete, only an end-of-sequence token is allowed.

Logprobs stay those of the RAW distribution (backends/base.py): a token the grammar forced may have a low raw
logprob, and that is the number the trainer must compare against (it recomputes the unconstrained model).
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Any

import llguidance
import llguidance.hf
import numpy as np
import torch

from .errors import RequestError

log = logging.getLogger(__name__)

# ---- llguidance's view of the tokenizer (about a second to build: once per tokenizer) ---------------------
_tokenizers: weakref.WeakKeyDictionary[Any, llguidance.LLTokenizer] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def ll_tokenizer(tokenizer, eos_ids: set[int]) -> llguidance.LLTokenizer:
    with _lock:
        found = _tokenizers.get(tokenizer)
        if found is None:
            found = llguidance.hf.from_tokenizer(tokenizer, eos_token=sorted(eos_ids))
            _tokenizers[tokenizer] = found
        return found


def checked_grammar(lark: str, tokenizer, eos_ids: set[int], field: str) -> str:
    """`lark`, once llguidance compiled it against the tokenizer: a schema it cannot compile is the request's
    error, naming `field` (the schemas are the user's: `tools` or `response_format`), before anything is queued."""
    grammar = llguidance.LLMatcher.grammar_from_lark(lark)
    error = llguidance.LLMatcher.validate_grammar(grammar, ll_tokenizer(tokenizer, eos_ids))
    if error:
        what = ("a function's parameters schema cannot be used to constrain the call tool_choice asks for"
                if field == "tools" else "the JSON schema cannot be used to constrain the reply")
        raise RequestError(f"invalid request: {field}: {what}: {error}", field)
    return lark


class RowGrammar:
    """One sampled row's matcher: masks the row's logits before sampling and follows the tokens chosen."""

    def __init__(self, lark: str, tokenizer, eos_ids: set[int]) -> None:
        self.matcher = llguidance.LLMatcher(ll_tokenizer(tokenizer, eos_ids), llguidance.LLMatcher.grammar_from_lark(lark))
        if self.matcher.is_error():  # checked_grammar checked it when the request came in
            raise ValueError(f"grammar: {self.matcher.get_error()}")

    def mask(self, logits: torch.Tensor) -> None:
        """Sets the logits (one row, in place) of every token the grammar does not allow next to -inf."""
        bits = np.unpackbits(np.frombuffer(self.matcher.compute_bitmask(), dtype=np.uint8), bitorder="little")
        n = logits.shape[-1]
        allowed = torch.zeros(n, dtype=torch.bool)
        k = min(n, bits.shape[0])  # logits past the tokenizer's vocabulary (padding) are never allowed
        allowed[:k] = torch.from_numpy(bits[:k].astype(np.bool_))
        logits.masked_fill_(~allowed.to(logits.device), float("-inf"))

    def advance(self, token_id: int) -> None:
        if not self.matcher.consume_token(token_id):  # cannot happen for a token the mask allowed
            log.warning("constrained row left its grammar at token %d: %s", token_id, self.matcher.get_error())
