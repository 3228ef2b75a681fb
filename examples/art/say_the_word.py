"""Teach a small model to answer with exactly one word, with OpenPipe ART, trained by Rollbook.

Written as ART's own examples are (a rollout function returning an `art.Trajectory`, groups gathered with
`art.gather_trajectory_groups`, one `backend.train` call per step); the only Rollbook-specific lines are the
backend's: `art.ServerlessBackend(base_url=<your Rollbook>/api/art/v1, api_key=<a Rollbook API token>)`, and a
base model the Rollbook runner serves. Every rollout shows up live on the model's run page in Rollbook, the
validation rollouts too (logged with ART's client, split "val").

    ROLLBOOK_URL=http://localhost:3000 ROLLBOOK_API_KEY=rbk_... python examples/art/say_the_word.py

Environment: ART_MODEL_NAME (default say-the-word-001), ART_PROJECT (default art-say-the-word), ART_BASE_MODEL
(default the bundled SmolLM2-135M-Instruct), STEPS (default 12), SEED (default 42). On 2 CPU cores a step
takes ~10-20 s. Prints one JSON line at the end: the validation reward at each evaluated step.
"""

import asyncio
import json
import os
import random

import art
from art.serverless.client import Client

WORDS = ["apple", "river", "candle", "orbit", "violet", "tunnel", "garden", "pepper", "silver", "harbor",
         "meadow", "rocket", "lantern", "falcon", "marble", "window", "cactus", "thunder", "pillow", "anchor"]
VAL_WORDS = ["basket", "copper", "dragon", "forest", "glacier", "island"]
GROUPS_PER_STEP = 4
ROLLOUTS_PER_GROUP = 8
EVAL_EVERY = 4


def reward_of(word: str, reply: str) -> float:
    """1 / (words in the reply) when the word is one of them, else 0: exactly the word scores 1."""
    words = [w for w in "".join(c if c.isalnum() else " " for c in reply.lower()).split() if w]
    return 1.0 / len(words) if word in words else 0.0


async def rollout(model: art.TrainableModel, word: str, *, temperature: float = 1.0) -> art.Trajectory:
    messages: art.Messages = [
        {"role": "system", "content": "Answer with one word."},
        {"role": "user", "content": f"Say the word {word}."},
    ]
    client = model.openai_client()
    completion = await client.chat.completions.create(
        model=model.get_inference_name(),
        messages=messages,
        max_tokens=24,
        temperature=temperature,
        logprobs=True,  # ART trains on the sampled tokens: Rollbook returns them as token_id:<id>
    )
    choice = completion.choices[0]
    reward = reward_of(word, choice.message.content or "")
    return art.Trajectory(messages_and_choices=[*messages, choice], reward=reward, metrics={"exact": float(reward == 1.0)},
                          metadata={"word": word})


async def evaluate(model: art.TrainableModel, client: Client, step: int) -> float:
    """Greedy replies to the validation words, logged to Rollbook as the step's eval; their mean reward."""
    trajectories = await asyncio.gather(*(rollout(model, w, temperature=0.0) for w in VAL_WORDS))
    groups = [art.TrajectoryGroup([t]) for t in trajectories]
    await client.models.log(model_id=model.id, trajectory_groups=groups, split="val")
    return sum(t.reward for t in trajectories) / len(trajectories)


async def main() -> None:
    base_url = f"{os.environ['ROLLBOOK_URL'].rstrip('/')}/api/art/v1"
    api_key = os.environ["ROLLBOOK_API_KEY"]
    steps = int(os.environ.get("STEPS", "12"))
    rng = random.Random(int(os.environ.get("SEED", "42")))

    backend = art.ServerlessBackend(base_url=base_url, api_key=api_key)  # was: W&B Training
    model = art.TrainableModel(
        name=os.environ.get("ART_MODEL_NAME", "say-the-word-001"),
        project=os.environ.get("ART_PROJECT", "art-say-the-word"),
        base_model=os.environ.get("ART_BASE_MODEL", "SmolLM2-135M-Instruct"),
    )
    await model.register(backend)
    client = Client(api_key=api_key, base_url=base_url)

    curve: dict[int, float] = {}
    start = await model.get_step()
    if start == 0:
        curve[0] = await evaluate(model, client, 0)
    for step in range(start, steps):
        words = rng.sample(WORDS, GROUPS_PER_STEP)
        groups = await art.gather_trajectory_groups(
            (art.TrajectoryGroup(rollout(model, w) for _ in range(ROLLOUTS_PER_GROUP)) for w in words),
            pbar_desc=f"gather step {step + 1}",
        )
        result = await backend.train(model, groups, learning_rate=1e-3, ppo=True)
        print(f"step {result.step}: train reward {sum(t.reward for g in groups for t in g) / sum(len(g) for g in groups):.3f}", flush=True)
        if result.step % EVAL_EVERY == 0 or step + 1 == steps:
            curve[result.step] = await evaluate(model, client, result.step)
            print(f"step {result.step}: validation reward {curve[result.step]:.3f}", flush=True)

    print(json.dumps({"model_id": model.id, "final_step": await model.get_step(), "val_reward": curve}))


if __name__ == "__main__":
    asyncio.run(main())
