"""A training step beside a long completion (issue 32: an /api/v1 call with no max_tokens held a run's first
step for 900 s): the running batch steps aside between two decode steps, the step trains, and the completion
then continues with exactly the tokens it samples alone (seeded; batch-invariant decode). Real SmolLM2-135M,
the real transformers backend and the real trainer; with ROLLBOOK_YIELD_TO_TRAINER off the step waits for the
whole completion (the test of the setting shows what it is for)."""

from __future__ import annotations

import asyncio

import pytest

from rollbook_engine.backends.base import GenerationRequest
from rollbook_engine.backends.transformers_backend import TransformersBackend
from rollbook_engine.model_store import ModelStore
from rollbook_engine.trainer.trainer import train_step

from test_trainer import make_request, sample_groups

LONG = 160  # tokens of the long completion: far more decode steps than the training step takes


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return ModelStore(runs_dir=tmp_path_factory.mktemp("runs"))


def long_request(store) -> GenerationRequest:
    prompt = store.tokenizer.apply_chat_template(
        [{"role": "user", "content": "Write a long story about a lighthouse keeper."}],
        add_generation_prompt=True, tokenize=True, return_dict=False)
    # No EOS may end it early: the grammar-free row runs to max_tokens unless it says EOS; seed fixed.
    return GenerationRequest(model=store.base_model_name, prompt_token_ids=list(prompt), max_tokens=LONG,
                             temperature=1.0, seed=11)


def run_beside_a_step(store, run_id: str, groups, yield_to_trainer: bool):
    """The long completion starts; after its 8th token a training step asks for the model. Returns (the
    completion's ids, how many tokens it had sampled when the step ended, whether the step finished first)."""
    async def main():
        backend = TransformersBackend(store)
        backend.yield_to_trainer = yield_to_trainer
        sampled: list[int] = []
        eighth = asyncio.Event()

        def on_token(_i, token):
            sampled.append(token.token_id)
            if len(sampled) == 8:
                eighth.set()

        req = long_request(store)
        req.on_token = on_token
        gen = asyncio.ensure_future(backend.generate([req]))
        await eighth.wait()
        await train_step(store, make_request(run_id, 1, groups))
        at_step_end = len(sampled)
        (result,), = await gen
        await backend.close()
        return result.token_ids, at_step_end, backend.stats["trainer_yields"]

    return asyncio.run(main())


def alone(store) -> list[int]:
    async def main():
        backend = TransformersBackend(store)
        (result,), = await backend.generate([long_request(store)])
        await backend.close()
        return result.token_ids
    return asyncio.run(main())


def test_a_step_trains_between_two_decode_steps_and_the_completion_continues_exactly(store):
    groups = sample_groups(store, max_tokens=8)
    reference = alone(store)
    assert len(reference) > 40, "the reference completion ended too early to show anything"
    ids, at_step_end, yields = run_beside_a_step(store, "aside-on", groups, yield_to_trainer=True)
    assert yields == 1
    assert at_step_end < len(reference)  # the step ended while the completion was still sampling
    assert ids == reference  # and the completion is what it samples alone: nothing it held was disturbed
    assert store.checkpoint_dir("aside-on", 1).is_dir()


def test_without_stepping_aside_the_step_waits_for_the_whole_completion(store):
    groups = sample_groups(store, max_tokens=8)
    reference = alone(store)
    ids, at_step_end, yields = run_beside_a_step(store, "aside-off", groups, yield_to_trainer=False)
    assert yields == 0
    assert at_step_end == len(ids) == len(reference)
