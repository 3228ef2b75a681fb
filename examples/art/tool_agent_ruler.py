"""A multi-turn tool agent trained with OpenPipe ART on Rollbook, scored by RULER with a Rollbook model as judge.

Written the way ART's notebooks are, with their usual patterns, and nothing Rollbook-specific beyond the
backend's two lines and the judge's address:
  - rollouts call the model with an OpenAI `tools` list, run the tool it calls and ask again (two turns);
  - `art.gather_trajectory_groups(..., max_exceptions=…, after_each=ruler_score_group)`: some rollouts raise
    (a flaky tool), and each group is scored by RULER (`art.rewards.ruler_score_group`), whose judge is a model
    Rollbook serves, through its OpenAI-compatible door (RULER asks for JSON with `response_format` and sets
    no `max_tokens`: Rollbook decodes the reply under the JSON schema and bounds it by API_MAX_TOKENS_DEFAULT);
  - `backend.train(...)`, then `model.delete_checkpoints()` after every step (all but the newest and best);
  - a restart resumes from `model.get_step()`; CRASH_AFTER_STEP makes the first run die after that step, as a
    preempted job would.

    ROLLBOOK_URL=http://localhost:3000 ROLLBOOK_API_KEY=rbk_... python examples/art/tool_agent_ruler.py

Environment: ART_MODEL_NAME (default weather-agent-001), ART_PROJECT (default art-weather-agent), ART_BASE_MODEL
and JUDGE_MODEL (default the bundled SmolLM2-135M-Instruct), STEPS (default 3), CRASH_AFTER_STEP (unset: no
crash). Prints one JSON line at the end.
"""

import asyncio
import json
import os
import random

import art
from art.rewards import ruler_score_group

CITIES = ["Paris", "Oslo", "Lima", "Cairo", "Tokyo", "Quito", "Perth", "Dakar"]
TEMPERATURES = {c: 10 + 3 * i for i, c in enumerate(CITIES)}
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The current temperature in a city, in degrees Celsius",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
GROUPS_PER_STEP = 2
ROLLOUTS_PER_GROUP = 3


class FlakyTool(RuntimeError):
    pass


async def rollout(model: art.TrainableModel, city: str, index: int, step: int) -> art.Trajectory:
    if step == 0 and index == ROLLOUTS_PER_GROUP - 1:
        raise FlakyTool(f"weather service timed out for {city}")  # counted by max_exceptions, shown on the run
    client = model.openai_client()
    messages: art.Messages = [
        {"role": "system", "content": "You are a weather assistant. Call get_weather, then answer in one sentence."},
        {"role": "user", "content": f"How warm is it in {city} right now?"},
    ]
    trajectory = art.Trajectory(messages_and_choices=[*messages], tools=TOOLS, reward=0.0, metadata={"city": city})
    first = await client.chat.completions.create(model=model.get_inference_name(), messages=messages, tools=TOOLS,
                                                 max_tokens=40, temperature=1.0, logprobs=True)
    choice = first.choices[0]
    trajectory.messages_and_choices.append(choice)
    calls = choice.message.tool_calls or []
    if calls:
        call = calls[0]
        try:
            asked = json.loads(call.function.arguments).get("city", "")
        except (ValueError, AttributeError):
            asked = ""
        result = f"{TEMPERATURES.get(asked, 20)} C" if asked else "error: no city given"
        follow = [*messages, choice.message.model_dump(exclude_none=True),
                  {"role": "tool", "tool_call_id": call.id, "content": result}]
        trajectory.messages_and_choices.append({"role": "tool", "tool_call_id": call.id, "content": result})
        second = await client.chat.completions.create(model=model.get_inference_name(), messages=follow, tools=TOOLS,
                                                      max_tokens=30, temperature=1.0, logprobs=True)
        trajectory.messages_and_choices.append(second.choices[0])
        answer = second.choices[0].message.content or ""
    else:
        answer = choice.message.content or ""
    # The independent reward RULER keeps as metrics["independent_reward"]: the right number in the answer.
    trajectory.reward = float(str(TEMPERATURES[city]) in answer)
    trajectory.metrics["called_tool"] = float(bool(calls))
    return trajectory


async def main() -> None:
    base_url = f"{os.environ['ROLLBOOK_URL'].rstrip('/')}/api/art/v1"
    api_key = os.environ["ROLLBOOK_API_KEY"]
    steps = int(os.environ.get("STEPS", "3"))
    crash_after = int(os.environ["CRASH_AFTER_STEP"]) if os.environ.get("CRASH_AFTER_STEP") else None
    base_model = os.environ.get("ART_BASE_MODEL", "SmolLM2-135M-Instruct")
    judge = os.environ.get("JUDGE_MODEL", base_model)

    backend = art.ServerlessBackend(base_url=base_url, api_key=api_key)
    model = art.TrainableModel(name=os.environ.get("ART_MODEL_NAME", "weather-agent-001"),
                               project=os.environ.get("ART_PROJECT", "art-weather-agent"), base_model=base_model)
    await model.register(backend)

    async def judged(group: art.TrajectoryGroup) -> art.TrajectoryGroup:
        # LiteLLM's OpenAI provider at Rollbook's door: "openai/<name>" with the door as api_base. A judge that
        # fails (a small one may write more scores than trajectories) leaves the group its own rewards, as
        # RULER's docs advise (swallow_exceptions) for production loops.
        scored = await ruler_score_group(group, judge_model=f"openai/{judge}", swallow_exceptions=True,
                                         extra_litellm_params={"api_base": base_url, "api_key": api_key, "temperature": 0})
        return scored or group

    start = await model.get_step()
    scores: list[float] = []
    rng = random.Random(start)
    for step in range(start, steps):
        cities = rng.sample(CITIES, GROUPS_PER_STEP)
        groups = await art.gather_trajectory_groups(
            (art.TrajectoryGroup(rollout(model, c, i, step) for i in range(ROLLOUTS_PER_GROUP)) for c in cities),
            pbar_desc=f"gather step {step + 1}", max_exceptions=GROUPS_PER_STEP, after_each=judged)
        scores += [t.metrics["ruler_score"] for g in groups for t in g.trajectories if "ruler_score" in t.metrics]
        result = await backend.train(model, groups, learning_rate=1e-3)
        await model.delete_checkpoints()
        print(f"step {result.step}: trained, checkpoints kept: newest and best", flush=True)
        if crash_after is not None and result.step == crash_after:
            raise SystemExit(f"crashing after step {result.step}, as asked (CRASH_AFTER_STEP)")

    print(json.dumps({"model_id": model.id, "start_step": start, "final_step": await model.get_step(),
                      "ruler_scores": scores}))


if __name__ == "__main__":
    asyncio.run(main())
