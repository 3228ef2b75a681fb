"""Supervised fine-tuning with the Tinker SDK, trained by Rollbook: tinker-cookbook's `sl_loop.py` shape.

Each step: a batch of (prompt, answer) conversations rendered with the chat template, one datum per example
(`target_tokens` the next token at every position, `weights` 1 on the answer's tokens only), then
`forward_backward(..., "cross_entropy")` and `optim_step`. At the end the state is saved (`save_state`), a
second training client loads it (`load_state`) and its loss on the same batch is the first one's: the
weights and the optimizer state round-trip; so does `create_training_client_from_state_with_optimizer`. Only the
client's line is Rollbook-specific (see rl_loop.py).

    ROLLBOOK_URL=http://localhost:3000 ROLLBOOK_API_KEY=rbk_... \
    HF_ENDPOINT=http://localhost:3000/api/tinker/hf HF_TOKEN=rbk_... python examples/tinker/sl_loop.py

Environment: BASE_MODEL, TOKENIZER (as rl_loop.py), STEPS (default 8), LR (default 1e-3). Prints one JSON
line per step ({"step", "loss"}: the mean loss per answer token) and one at the end.
"""

import json
import os

import tinker
from tinker import types

EXAMPLES = [
    ("What is the capital of France?", "Paris."),
    ("What colour is the sky on a clear day?", "Blue."),
    ("How many legs does a spider have?", "Eight."),
    ("What is two plus two?", "Four."),
]


def tensor(values, dtype: str) -> types.TensorData:
    return types.TensorData(data=list(values), dtype=dtype, shape=[len(values)])


def datum(tokenizer, question: str, answer: str) -> types.Datum:
    def ids(messages, **kw) -> list[int]:
        return tokenizer.encode(tokenizer.apply_chat_template(messages, tokenize=False, **kw), add_special_tokens=False)

    prompt = ids([{"role": "user", "content": question}], add_generation_prompt=True)
    full = ids([{"role": "user", "content": question}, {"role": "assistant", "content": answer}])
    weights = [0.0] * (len(prompt) - 1) + [1.0] * (len(full) - len(prompt))
    return types.Datum(
        model_input=types.ModelInput.from_ints(full[:-1]),
        loss_fn_inputs={"target_tokens": tensor(full[1:], "int64"), "weights": tensor(weights, "float32")},
    )


def mean_loss(result, batch) -> float:
    total = result.metrics["loss:sum"]
    tokens = sum(sum(d.loss_fn_inputs["weights"].data) for d in batch)
    return total / tokens


def main() -> None:
    base_url = f"{os.environ['ROLLBOOK_URL'].rstrip('/')}/api/tinker"
    api_key = "tml-" + os.environ["ROLLBOOK_API_KEY"]
    base_model = os.environ.get("BASE_MODEL", "SmolLM2-135M-Instruct")
    service_client = tinker.ServiceClient(base_url=base_url, api_key=api_key)
    training_client = service_client.create_lora_training_client(base_model=base_model, rank=8, user_metadata={"project": "tinker-sl", "name": "sl-loop"}).result()
    if os.environ.get("TOKENIZER"):
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(os.environ["TOKENIZER"])
    else:
        tokenizer = training_client.get_tokenizer()
    batch = [datum(tokenizer, q, a) for q, a in EXAMPLES]
    adam_params = types.AdamParams(learning_rate=float(os.environ.get("LR", "1e-3")))

    losses = []
    for step in range(int(os.environ.get("STEPS", "8"))):
        fwd_bwd = training_client.forward_backward(batch, loss_fn="cross_entropy")
        optim = training_client.optim_step(adam_params)
        losses.append(mean_loss(fwd_bwd.result(), batch))
        optim.result()
        print(json.dumps({"step": step + 1, "loss": losses[-1]}), flush=True)

    state = training_client.save_state("final").result()
    after = mean_loss(training_client.forward(batch, loss_fn="cross_entropy").result(), batch)
    resumed = service_client.create_lora_training_client(base_model=base_model, rank=8, user_metadata={"project": "tinker-sl", "name": "sl-loop-resumed"}).result()
    resumed.load_state(state.path).result()
    resumed_loss = mean_loss(resumed.forward(batch, loss_fn="cross_entropy").result(), batch)
    # Or in one call, the way a recipe resumes: a model created by the load, optimizer state included.
    restored = service_client.create_training_client_from_state_with_optimizer(state.path).result()
    restored_loss = mean_loss(restored.forward(batch, loss_fn="cross_entropy").result(), batch)
    print(json.dumps({"model_id": training_client.get_info().model_id, "resumed_model_id": resumed.get_info().model_id,
                      "restored_model_id": restored.get_info().model_id, "loss": losses, "after": after,
                      "resumed_loss": resumed_loss, "restored_loss": restored_loss, "state_path": state.path}))


if __name__ == "__main__":
    main()
