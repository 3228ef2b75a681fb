"""Sample with ART's own inference client at Rollbook's base_url, then log what was sampled.

Written as an ART user writes it: `art.ServerlessBackend` pointed at Rollbook, `model.register(backend)`,
then an `openai.AsyncOpenAI` at the model's inference base_url and key, asked for `model.get_inference_name()`
(`wandb-artifact:///<entity>/<project>/<name>`: the model's newest checkpoint, its base model while it has
none): what `model.openai_client()` builds. (That method itself fails before sending anything with
openpipe-art 0.5.18 and the openai release it installs today, 3.x: it hands an `httpx.Timeout` to openai's
httpx2 client, "unsupported operand type(s) for +: 'float' and 'Timeout'".) The sampled `Choice` goes into an
`art.TrajectoryGroup` that is logged as one train step, as ART's loop does.

    ROLLBOOK_URL=http://localhost:3000 ROLLBOOK_API_KEY=rbk_... python examples/art/sample_and_log.py

ART_BASE_MODEL must be a model the Rollbook runner's engine serves (default: the bundled SmolLM2). Prints
what it did as JSON on its last line: the model, the name it sampled, the reply, the token ids ART's
tokenize step reads from the logprobs (`token_id:<id>`), and how the name of a missing checkpoint fared.
"""

import asyncio
import json
import os

import art
import openai
from art.serverless.client import Client


def sampled_ids(choice) -> list[int]:
    """The ids as ART's tokenize step takes them from a Choice (art/preprocessing/tokenize.py)."""
    return [int(t.token.split(":")[1]) for t in choice.logprobs.content]


async def main() -> None:
    base_url = f"{os.environ['ROLLBOOK_URL'].rstrip('/')}/api/art/v1"
    api_key = os.environ["ROLLBOOK_API_KEY"]
    backend = art.ServerlessBackend(api_key=api_key, base_url=base_url)
    model = art.TrainableModel(
        name=os.environ.get("ART_MODEL_NAME", "sampler-001"),
        project=os.environ.get("ART_PROJECT", "art-sampling-example"),
        base_model=os.environ.get("ART_BASE_MODEL", "SmolLM2-135M-Instruct"),
    )
    await model.register(backend)
    # What model.openai_client() wraps (see above): the backend's base_url and key.
    inference = openai.AsyncOpenAI(base_url=model.inference_base_url, api_key=model.inference_api_key)

    messages = [{"role": "user", "content": "Say the word 'apple'."}]
    completion = await inference.chat.completions.create(
        model=model.get_inference_name(), messages=messages, max_tokens=12, temperature=0, logprobs=True
    )
    choice = completion.choices[0]
    reward = 1.0 if "apple" in (choice.message.content or "").lower() else 0.0
    group = art.TrajectoryGroup([art.Trajectory(messages_and_choices=[*messages, choice], reward=reward)])
    client = Client(api_key=api_key, base_url=base_url)
    await client.models.log(model_id=model.id, trajectory_groups=[group], split="train")

    # A checkpoint the model does not have (a log-only run has none): the client raises NotFoundError.
    try:
        await inference.chat.completions.create(model=model.get_inference_name(step=7), messages=messages, max_tokens=2)
        missing = "sampled"
    except openai.NotFoundError as e:
        missing = f"NotFoundError {e.status_code}"

    print(
        json.dumps(
            {
                "model_id": model.id,
                "inference_name": model.get_inference_name(),
                "answer_model": completion.model,
                "content": choice.message.content,
                "finish_reason": choice.finish_reason,
                "token_ids": sampled_ids(choice),
                "missing_step": missing,
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
