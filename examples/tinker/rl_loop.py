"""Teach a small model to answer with exactly one word, with the Tinker SDK, trained by Rollbook.

Written in the shape of tinker-cookbook's `rl_loop.py`: each step saves the weights for a sampling client,
samples a group of answers per prompt, scores them, centres the rewards into advantages, builds one datum per
sample (`target_tokens`, the sampler's `logprobs`, per-token `advantages`), then `forward_backward(...,
"importance_sampling")` and `optim_step`. The only Rollbook-specific line is the client's:
`tinker.ServiceClient(base_url=<your Rollbook>/api/tinker, api_key="tml-" + <a Rollbook API token>)` (the SDK
insists a key starts with "tml-"; Rollbook drops that prefix), and a base model the Rollbook runner serves.
Every sample shows up live on the model's run page in Rollbook, each datum linked to the sample it trains.

    ROLLBOOK_URL=http://localhost:3000 ROLLBOOK_API_KEY=rbk_... \
    HF_ENDPOINT=http://localhost:3000/api/tinker/hf HF_TOKEN=rbk_... python examples/tinker/rl_loop.py

`training_client.get_tokenizer()` loads the base model's tokenizer with transformers from a Hugging Face hub:
HF_ENDPOINT / HF_TOKEN point it at Rollbook's, which serves the tokenizer the engine samples with.

Environment: BASE_MODEL (default the bundled SmolLM2-135M-Instruct), TOKENIZER (a folder or hub name for
transformers' AutoTokenizer instead of the training client's get_tokenizer()),
STEPS (default 12), GROUPS (prompts per step, default 4), GROUP_SIZE (samples per prompt, default 8), LR
(default 1e-3), SEED (default 42). Prints one JSON line per step ({"step", "reward"}) and one at the end.
"""

import json
import os
import random

import tinker
from tinker import types

WORDS = ["apple", "river", "candle", "orbit", "violet", "tunnel", "garden", "pepper", "silver", "harbor",
         "meadow", "rocket", "lantern", "falcon", "marble", "window", "cactus", "thunder", "pillow", "anchor"]


def reward_of(word: str, reply: str) -> float:
    """1 / (words in the reply) when the word is one of them, else 0: exactly the word scores 1."""
    words = [w for w in "".join(c if c.isalnum() else " " for c in reply.lower()).split() if w]
    return 1.0 / len(words) if word in words else 0.0


def render(tokenizer, messages) -> list[int]:
    """The prompt's token ids through the chat template, ready for the assistant's reply."""
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    return tokenizer.encode(text, add_special_tokens=False)


def tensor(values, dtype: str) -> types.TensorData:
    return types.TensorData(data=list(values), dtype=dtype, shape=[len(values)])


def main() -> None:
    base_url = f"{os.environ['ROLLBOOK_URL'].rstrip('/')}/api/tinker"
    steps = int(os.environ.get("STEPS", "12"))
    groups, group_size = int(os.environ.get("GROUPS", "4")), int(os.environ.get("GROUP_SIZE", "8"))
    rng = random.Random(int(os.environ.get("SEED", "42")))

    service_client = tinker.ServiceClient(base_url=base_url, api_key="tml-" + os.environ["ROLLBOOK_API_KEY"])
    training_client = service_client.create_lora_training_client(
        base_model=os.environ.get("BASE_MODEL", "SmolLM2-135M-Instruct"), rank=8,
        user_metadata={"project": os.environ.get("PROJECT", "tinker-say-the-word"), "name": os.environ.get("NAME", "rl-loop")},
    ).result()
    print(json.dumps({"model_id": training_client.get_info().model_id, "started": True}), flush=True)
    if os.environ.get("TOKENIZER"):
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(os.environ["TOKENIZER"])
    else:
        tokenizer = training_client.get_tokenizer()
    sampling_params = types.SamplingParams(max_tokens=24, temperature=1.0, stop=[tokenizer.eos_token_id])
    adam_params = types.AdamParams(learning_rate=float(os.environ.get("LR", "1e-3")), beta1=0.9, beta2=0.95, eps=1e-8)

    curve = []
    for step in range(steps):
        sampling_client = training_client.save_weights_and_get_sampling_client().result()
        words = rng.sample(WORDS, groups)
        prompts = [
            types.ModelInput.from_ints(render(tokenizer, [
                {"role": "system", "content": "Answer with one word."}, {"role": "user", "content": f"Say the word {w}."}]))
            for w in words
        ]
        futures = [sampling_client.sample(prompt=p, num_samples=group_size, sampling_params=sampling_params) for p in prompts]

        datums, rewards_all = [], []
        for word, prompt, future in zip(words, prompts, futures):
            result = future.result()
            last_sample = (prompt, result.sequences[0])
            rewards = [reward_of(word, tokenizer.decode(s.tokens, skip_special_tokens=True)) for s in result.sequences]
            rewards_all += rewards
            mean = sum(rewards) / len(rewards)
            advantages = [r - mean for r in rewards]
            if all(a == 0 for a in advantages):
                continue  # nothing to learn from a group whose samples all scored the same
            for seq, adv in zip(result.sequences, advantages):
                ob_len = prompt.length - 1
                model_input = prompt.append(types.EncodedTextChunk(tokens=seq.tokens[:-1]))
                datums.append(types.Datum(
                    model_input=model_input,
                    loss_fn_inputs={
                        "target_tokens": tensor([0] * ob_len + list(seq.tokens), "int64"),
                        "logprobs": tensor([0.0] * ob_len + list(seq.logprobs), "float32"),
                        "advantages": tensor([0.0] * ob_len + [adv] * (model_input.length - ob_len), "float32"),
                    },
                ))
        reward = sum(rewards_all) / len(rewards_all)
        curve.append(reward)
        if datums:
            fwd_bwd = training_client.forward_backward(datums, loss_fn="importance_sampling")
            optim = training_client.optim_step(adam_params)
            fwd_bwd.result()
            optim.result()
        else:
            training_client.optim_step(adam_params).result()  # still a step: the run's count follows the loop's
        print(json.dumps({"step": step + 1, "reward": reward, "datums": len(datums)}), flush=True)

    # The sampler's logprobs of its own tokens against compute_logprobs' (a forward pass of the same weights).
    prompt, seq = last_sample
    scored = sampling_client.compute_logprobs(prompt.append(types.EncodedTextChunk(tokens=seq.tokens))).result()
    drift = max(abs(a - b) for a, b in zip(scored[-len(seq.tokens):], seq.logprobs))
    print(json.dumps({"model_id": training_client.get_info().model_id, "steps": steps, "reward": curve, "logprob_drift": drift}))


if __name__ == "__main__":
    main()
