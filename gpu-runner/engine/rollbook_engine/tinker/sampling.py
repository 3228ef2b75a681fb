"""POST /tinker/sample: Tinker's sampling client on the engine's own backend (`backend.generate`, either backend).

- `model` is the base model or `<run>@<step>`, resolved for the request's workspace (ownership.py).
- max_tokens is clamped to the context left after the prompt, as chat completions do (a clamped sample ends
  with stop_reason "length").
- stop_token_ids: the engine's end tokens (EOS, <|im_end|>) end a sample anyway. Other ids are not something
  the backends stop on, so a sample is cut after the first such token (it included) and marked "stop". The
  cost: the backend samples on past it until an end token, a stop string or max_tokens, and those tokens are
  computed and dropped (set max_tokens to what the sample may really need).
- prompt_logprobs: one forward over the prompt with the model's adapter, under the model lock (as the vLLM
  backend re-scores a constrained row: store.resolve_adapter + store.use_adapter), the first entry None.
"""

from __future__ import annotations

import asyncio

import torch

from ..backends.base import GenerationRequest, GenerationResult, InferenceBackend
from ..contracts.tinker import SampledSequence, TinkerSampleRequest, TinkerSampleResponse
from ..trainer.trainer import _PLAIN_LM_HEAD

# Positions projected onto the vocabulary at a time: the float32 logits of a long prompt at once would be
# positions × vocabulary × 4 bytes (8k × 49k: 1.6 GB).
_CHUNK = 512


def generation_request(req: TinkerSampleRequest, room: int) -> GenerationRequest:
    return GenerationRequest(
        model=req.model, prompt_token_ids=list(req.prompt_token_ids), max_tokens=min(req.max_tokens, room),
        temperature=req.temperature, top_p=req.top_p, n=req.num_samples, seed=req.seed, stop=list(req.stop),
        user=req.user,
    )


def cut_at_stop_tokens(result: GenerationResult, stop_ids: set[int], tokenizer) -> SampledSequence:
    ids, lps = list(result.token_ids), list(result.logprobs)
    cut = next((i for i, t in enumerate(ids) if t in stop_ids), None)
    if cut is None:  # the backend's text: decoded without special tokens, cut before a matched stop string
        return SampledSequence(tokens=ids, logprobs=lps, stop_reason=result.finish_reason, text=result.text)
    # Cut here, before any stop string the backend matched later: the text is these tokens'.
    kept = ids[: cut + 1]
    return SampledSequence(tokens=kept, logprobs=lps[: cut + 1], stop_reason="stop",
                           text=tokenizer.decode(kept, skip_special_tokens=True))


async def sample(store, backend: InferenceBackend, req: TinkerSampleRequest, room: int) -> TinkerSampleResponse:
    """The route has checked the request (checks.check_sample) and the model's ownership."""
    results = (await backend.generate([generation_request(req, room)]))[0]
    stop_ids = set(req.stop_token_ids) - set(store.eos_token_ids)
    sequences = [cut_at_stop_tokens(r, stop_ids, store.tokenizer) for r in results]
    prompt_lps = await asyncio.to_thread(prompt_logprobs, store, req.model, req.prompt_token_ids) \
        if req.prompt_logprobs else None
    prompt_text = store.tokenizer.decode(list(req.prompt_token_ids), skip_special_tokens=False)
    return TinkerSampleResponse(sequences=sequences, prompt_text=prompt_text, prompt_logprobs=prompt_lps)


def prompt_logprobs(store, model_name: str, ids: list[int]) -> list[float | None]:
    """log p(ids[i] | ids[:i]) under `model_name` (raw distribution, backends/base.py), None for ids[0]."""
    if len(ids) < 2:
        return [None]
    input_ids = torch.tensor([ids], device=store.device)
    targets = input_ids[0, 1:]
    with store._model_lock:  # resolve and use under one hold: the adapter cannot be evicted in between
        adapter = store.resolve_adapter(model_name)
        with store.use_adapter(adapter) as model, torch.inference_mode():
            inner = model.get_base_model()
            if getattr(inner.config, "model_type", None) in _PLAIN_LM_HEAD:
                hidden = inner.get_decoder()(input_ids=input_ids, use_cache=False).last_hidden_state[0, :-1]
                head = inner.get_output_embeddings()
                out = [_gather(head(hidden[i:i + _CHUNK]), targets[i:i + _CHUNK]) for i in range(0, len(hidden), _CHUNK)]
            else:
                out = [_gather(model(input_ids=input_ids, use_cache=False).logits[0, :-1], targets)]
    return [None, *torch.cat(out).tolist()]


def _gather(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return torch.log_softmax(logits.float(), dim=-1).gather(-1, targets[:, None])[:, 0]
