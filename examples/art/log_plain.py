"""Push rollouts into Rollbook's live debugger without ART: plain HTTP (`requests`), for TRL, verl or your own loop.

Each POST of a step's groups is the next step of a log-only run (rollouts, rewards, the same step metrics and
charts a Rollbook run has); `"split": "val"` posts an eval; DELETE ends the run (its history stays).

    ROLLBOOK_URL=http://localhost:3000 ROLLBOOK_API_KEY=rbk_... python examples/art/log_plain.py
"""

import json
import os

import requests

ROLLBOOK = f"{os.environ['ROLLBOOK_URL'].rstrip('/')}/api/art/v1"
H = {"Authorization": f"Bearer {os.environ['ROLLBOOK_API_KEY']}"}


def group(prompt: str, completions: list[str], rewards: list[float]) -> dict:
    """One prompt's samples: OpenAI-format messages, a reward each (what GRPO compares within a group)."""
    return {
        "trajectories": [
            {
                "messages_and_choices": [{"role": "user", "content": prompt}, {"role": "assistant", "content": c}],
                "reward": r,
                "metrics": {"len": len(c)},
                "metadata": {"prompt": prompt[:40]},
            }
            for c, r in zip(completions, rewards)
        ]
    }


model = requests.post(
    f"{ROLLBOOK}/preview/models",
    headers=H,
    json={"project": os.environ.get("PROJECT", "trl-grpo"), "name": os.environ.get("RUN_NAME", "run-7"), "base_model": "Qwen/Qwen2.5-0.5B-Instruct", "return_existing": True},
    timeout=30,
)
model.raise_for_status()
model_id = model.json()["id"]

# Once per optimizer step, with that step's groups (e.g. from TRL's reward function):
for completions, rewards in [(["apple", "banana"], [1.0, 0.0]), (["apple", "apple"], [1.0, 1.0])]:
    r = requests.post(
        f"{ROLLBOOK}/preview/models/{model_id}/log",
        headers=H,
        json={"split": "train", "trajectory_groups": [group("Say 'apple'.", completions, rewards)]},
        timeout=60,
    )
    r.raise_for_status()

requests.post(
    f"{ROLLBOOK}/preview/models/{model_id}/log",
    headers=H,
    json={"split": "val", "trajectory_groups": [group("Say 'pear'.", ["pear"], [1.0])]},
    timeout=60,
).raise_for_status()
requests.delete(f"{ROLLBOOK}/preview/models/{model_id}", headers=H, timeout=30).raise_for_status()
print(json.dumps({"model_id": model_id}))
