"""Push OpenPipe ART trajectory groups into Rollbook's live debugger (a log-only run: no training).

Written as an ART user writes it: real `art.Trajectory` / `art.TrajectoryGroup` objects holding the OpenAI
`Choice` objects a sampler returned, sent with ART's own client. Only the client's two arguments point at
Rollbook instead of W&B:

    ROLLBOOK_URL=http://localhost:3000 ROLLBOOK_API_KEY=rbk_... python examples/art/log_groups.py

Each `log(split="train")` becomes one step of the run (rollouts, rewards, step metrics, charts); a
`log(split="val")` becomes an eval. Prints the model as JSON on its last line.
"""

import asyncio
import json
import os
import random

import art
from art.serverless.client import Client
from openai.types.chat.chat_completion import Choice, ChoiceLogprobs
from openai.types.chat.chat_completion_message import ChatCompletionMessage
from openai.types.chat.chat_completion_message_tool_call import ChatCompletionMessageToolCall, Function
from openai.types.chat.chat_completion_token_logprob import ChatCompletionTokenLogprob

WORDS = ["apple", "river", "stone", "cloud"]


def sampled(text: str, tool_call: tuple[str, str] | None = None) -> Choice:
    """A reply as an OpenAI-compatible sampler returns it: content, maybe a tool call, per-token logprobs."""
    tokens = text.split(" ") if text else []
    return Choice(
        finish_reason="tool_calls" if tool_call else "stop",
        index=0,
        logprobs=ChoiceLogprobs(
            content=[ChatCompletionTokenLogprob(token=t, logprob=-random.random(), bytes=list(t.encode()), top_logprobs=[]) for t in tokens]
        ),
        message=ChatCompletionMessage(
            role="assistant",
            content=text or None,
            tool_calls=[ChatCompletionMessageToolCall(id="call_1", type="function", function=Function(name=tool_call[0], arguments=tool_call[1]))]
            if tool_call
            else None,
        ),
    )


def rollout(word: str, attempt: int) -> art.Trajectory:
    """One multi-turn rollout: the model looks the word up with a tool, then answers."""
    answer = word if attempt % 2 == 0 else word[::-1]
    return art.Trajectory(
        messages_and_choices=[
            {"role": "system", "content": "Answer with the word the user asks for."},
            {"role": "user", "content": f"Say the word '{word}'."},
            sampled("", ("lookup", json.dumps({"word": word}))),
            {"role": "tool", "tool_call_id": "call_1", "content": word},
            sampled(answer),
        ],
        reward=1.0 if answer == word else 0.0,
        metrics={"answer_len": len(answer), "exact": answer == word},
        metadata={"word": word},
    )


def group(word: str, size: int) -> art.TrajectoryGroup:
    return art.TrajectoryGroup(rollout(word, i) for i in range(size))


async def main() -> None:
    client = Client(api_key=os.environ["ROLLBOOK_API_KEY"], base_url=f"{os.environ['ROLLBOOK_URL'].rstrip('/')}/api/art/v1")
    model = await client.models.create(
        entity=os.environ.get("ROLLBOOK_ENTITY"),
        project=os.environ.get("ART_PROJECT", "art-example"),
        name=os.environ.get("ART_MODEL_NAME", "agent-001"),
        base_model="HuggingFaceTB/SmolLM2-135M-Instruct",
        return_existing=True,
    )
    for _step in range(2):
        groups = [group(w, 3) for w in WORDS[:2]]
        await client.models.log(model_id=model.id, trajectory_groups=groups, split="train")
    await client.models.log(model_id=model.id, trajectory_groups=[group(w, 2) for w in WORDS[2:]], split="val")
    # What ART's get_step() reads: the newest checkpoint (none for a log-only run: step 0).
    checkpoints = [c async for c in client.models.checkpoints.list(model_id=model.id, order="desc", limit=1)]
    step = checkpoints[0].step if checkpoints else 0
    print(json.dumps({"model": model.model_dump(), "step": step}))


if __name__ == "__main__":
    asyncio.run(main())
