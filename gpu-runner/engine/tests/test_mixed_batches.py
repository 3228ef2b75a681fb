"""Many runs on one engine, sampling side, on the real SmolLM2-135M-Instruct (CPU), driving the transformers
backend directly: rows of different models (base + LoRA checkpoints) share one batch and one forward pass per
decode step and sample exactly what they sample alone; batch slots are shared fairly between tenants; a
cancelled row leaves a mixed batch; an adapter a running batch uses is never deleted under it.

One module-scoped store; max_tokens stays small because the machine is shared. No timing assertions.
"""

from __future__ import annotations

import asyncio

import pytest
import torch
from peft import LoraConfig, get_peft_model_state_dict
from safetensors.torch import save_file

from rollbook_engine.backends.base import GenerationRequest, GenerationResult
from rollbook_engine.backends.transformers_backend import TransformersBackend
from rollbook_engine.model_store import ModelStore

BASE = "SmolLM2-135M-Instruct"
LOGPROB_TOL = 1e-4  # fp32 batching numerics: a row's padding/batch neighbours change summation order only


def _write_checkpoint(store: ModelStore, run: str, step: int, seed: int) -> None:
    """A LoRA checkpoint with non-zero B (so it visibly changes the output), in PEFT's on-disk layout."""
    cfg = LoraConfig(r=4, lora_alpha=16, target_modules=["q_proj", "v_proj"], lora_dropout=0.0)
    store.model.add_adapter("scratch", cfg)
    with torch.no_grad():
        gen = torch.Generator().manual_seed(seed)
        for name, p in store.model.named_parameters():
            if "lora_B" in name and "scratch" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.05)
    path = store.checkpoint_dir(run, step)
    path.mkdir(parents=True)
    save_file(get_peft_model_state_dict(store.model, adapter_name="scratch"), str(path / "adapter_model.safetensors"))
    cfg.base_model_name_or_path = store.base_model_name
    cfg.save_pretrained(str(path))
    store.model.delete_adapter("scratch")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    store = ModelStore(runs_dir=tmp_path_factory.mktemp("runs"))
    assert store.base_model_name == BASE
    for seed, run in enumerate(("runA", "runB", "runC")):
        _write_checkpoint(store, run, 1, seed)
    return store


def _prompt(store: ModelStore, text: str) -> list[int]:
    msgs = [{"role": "user", "content": text}]
    return list(store.tokenizer.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True, return_dict=False))


def _req(store, model: str, text: str, seed: int, max_tokens: int = 8, temperature: float = 1.0,
         **kw) -> GenerationRequest:
    return GenerationRequest(model=model, prompt_token_ids=_prompt(store, text), max_tokens=max_tokens,
                             temperature=temperature, seed=seed, **kw)


def _long(store, model: str, seed: int, max_tokens: int) -> GenerationRequest:
    """A row that runs its full max_tokens (greedy on a poem: no early EOS), so others can join it."""
    return _req(store, model, "Write a long poem about the sea.", seed, max_tokens=max_tokens, temperature=0.0)


def _alone(store, req: GenerationRequest) -> GenerationResult:
    backend = TransformersBackend(store, max_batch=8)

    async def go():
        try:
            return (await backend.generate([req]))[0][0]
        finally:
            await backend.close()

    return asyncio.run(go())


def _same(a: GenerationResult, b: GenerationResult) -> None:
    assert a.token_ids == b.token_ids
    assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs)) < LOGPROB_TOL


def test_rows_of_different_adapters_share_one_batch_and_sample_what_they_sample_alone(store):
    reqs = [
        _req(store, BASE, "Write a short poem about the sea.", 11),
        _req(store, "runA@1", "Name three colours.", 12),
        _req(store, "runB@1", "Write a short poem about the sea.", 13),
        _req(store, "runC@1", "What is two plus two?", 14),
    ]
    alone = [_alone(store, r) for r in reqs]
    # The adapters do change the output, so equality below is not the base model four times.
    same_prompt_base = _alone(store, _req(store, BASE, "Write a short poem about the sea.", 13))
    assert same_prompt_base.logprobs != pytest.approx(alone[2].logprobs, abs=1e-3)

    backend = TransformersBackend(store, max_batch=8)

    async def together():
        try:
            return await backend.generate(reqs)
        finally:
            await backend.close()

    mixed = [group[0] for group in asyncio.run(together())]
    assert backend.stats["batches"] == 1 and backend.stats["largest_batch"] == 4  # one batch, one forward a step
    for a, b in zip(mixed, alone):
        _same(a, b)


def test_rows_of_a_new_adapter_join_a_running_batch(store):
    first = _long(store, "runA@1", 21, max_tokens=14)
    late = _req(store, "runB@1", "Name three colours.", 22, max_tokens=5)
    alone = [_alone(store, first), _alone(store, late)]
    assert alone[0].finish_reason == "length"  # it runs long enough for the late row to join
    backend = TransformersBackend(store, max_batch=8)

    async def go():
        joined: asyncio.Future = asyncio.get_running_loop().create_future()
        tokens = 0

        def on_token(_i, _tok):
            nonlocal tokens
            tokens += 1
            if tokens == 3 and not joined.done():  # the batch is running: send the other run's request now
                joined.set_result(asyncio.ensure_future(backend.generate([late])))

        first.on_token = on_token
        try:
            a = await backend.generate([first])
            assert joined.done(), "the first row ended before the late one was sent"
            b = await joined.result()
            return a[0][0], b[0][0]
        finally:
            first.on_token = None
            await backend.close()

    a, b = asyncio.run(go())
    assert backend.stats["joined_rows"] == 1 and backend.stats["batches"] == 1
    _same(a, alone[0])
    _same(b, alone[1])


def test_fair_share_a_run_with_many_rows_does_not_starve_one_with_few(store):
    """max_batch 4: run A queues 16 rows, then run B queues 4; B's rows all finish before A's last rows.
    (Oldest-first would serve all 16 of A's rows before any of B's.)"""
    backend = TransformersBackend(store, max_batch=4)
    finished: list[str] = []

    def request(user: str, n: int, seed: int) -> GenerationRequest:
        req = _req(store, BASE, "Write a short poem about the sea.", seed, max_tokens=4, n=n, user=user)
        req.temperature = 0.0  # greedy: no row ends early on EOS, every row takes the same 4 steps
        req.on_finish = lambda _i, _r: finished.append(user)
        return req

    async def go():
        try:
            # Both queued before the worker takes its first batch (the gather window), A first.
            return await asyncio.gather(backend.generate([request("A", 16, 1)]), backend.generate([request("B", 4, 2)]))
        finally:
            await backend.close()

    asyncio.run(go())
    assert sorted(finished) == ["A"] * 16 + ["B"] * 4
    last_b = max(i for i, who in enumerate(finished) if who == "B")
    assert last_b < 16 - 4, finished  # B done while A still had more than its last 4 rows to go
    assert backend.stats["largest_batch"] <= 4


def test_a_cancelled_row_leaves_a_mixed_batch_and_the_others_finish_unchanged(store):
    keep = _req(store, "runA@1", "Write a short poem about the sea.", 31, max_tokens=10)
    base = _req(store, BASE, "Name three colours.", 32, max_tokens=10)
    alone = [_alone(store, keep), _alone(store, base)]
    gone = _req(store, "runB@1", "What is two plus two?", 33, max_tokens=200)
    backend = TransformersBackend(store, max_batch=8)
    gone_tokens = 0

    async def go():
        nonlocal gone_tokens
        task = asyncio.ensure_future(backend.generate([gone]))

        def on_token(_i, _tok):
            nonlocal gone_tokens
            gone_tokens += 1
            if gone_tokens == 2:
                task.cancel()  # its client went away mid-batch

        gone.on_token = on_token
        try:
            results = await backend.generate([keep, base])
            with pytest.raises(asyncio.CancelledError):
                await task
            return results
        finally:
            await backend.close()

    results = asyncio.run(go())
    assert backend.stats["batches"] == 1 and backend.stats["cancelled_rows"] == 1
    assert gone_tokens < 10  # it left the batch rather than sampling its 200 tokens for nobody
    _same(results[0][0], alone[0])
    _same(results[1][0], alone[1])


def test_an_adapter_in_use_is_not_deleted_under_the_batch(store):
    """The run's checkpoints are invalidated while a batch samples with one of them, and a row of that checkpoint
    then joins (reloading it): the running rows keep their adapter; its deletion waits for the batch to end."""
    first = _long(store, "runC@1", 41, max_tokens=30)
    late = _req(store, "runC@1", "Name three colours.", 42, max_tokens=4)
    alone = [_alone(store, first), _alone(store, late)]
    assert alone[0].finish_reason == "length"  # it runs long enough for the late row to join
    backend = TransformersBackend(store, max_batch=8)
    seen_during: list[set[str]] = []

    async def go():
        joined: asyncio.Future = asyncio.get_running_loop().create_future()
        tokens = 0

        def on_token(_i, _tok):
            nonlocal tokens
            tokens += 1
            if tokens == 3 and not joined.done():
                store.invalidate_run("runC")  # what the trainer does after saving a checkpoint
                joined.set_result(asyncio.ensure_future(backend.generate([late])))
            if tokens == 8:
                seen_during.append(set(store.model.peft_config))

        first.on_token = on_token
        try:
            a = await backend.generate([first])
            assert joined.done(), "the first row ended before the late one was sent"
            b = await joined.result()
            return a[0][0], b[0][0]
        finally:
            first.on_token = None
            await backend.close()

    a, b = asyncio.run(go())
    assert backend.stats["joined_rows"] == 1
    _same(a, alone[0])
    _same(b, alone[1])
    assert {"ckpt:runC@1", "ckpt:runC@1~1"} <= seen_during[0]  # both copies while the batch ran
    assert "ckpt:runC@1" not in store.model.peft_config  # the stale copy went once the batch ended
    assert store.loaded_adapters().count("runC@1") == 1


def test_a_batch_holds_at_most_max_loaded_adapters_distinct_adapters(store):
    backend = TransformersBackend(store, max_batch=8)
    old = store.max_loaded_adapters
    store.max_loaded_adapters = 2
    reqs = [_req(store, m, "Name three colours.", 50 + i, max_tokens=3)
            for i, m in enumerate(("runA@1", "runB@1", "runC@1", BASE))]

    async def go():
        try:
            return await backend.generate(reqs)
        finally:
            await backend.close()

    try:
        results = asyncio.run(go())
    finally:
        store.max_loaded_adapters = old
    assert all(len(g[0].token_ids) > 0 for g in results)
    assert backend.stats["batches"] == 2 and backend.stats["largest_batch"] == 3  # runC@1 waited for batch 2
