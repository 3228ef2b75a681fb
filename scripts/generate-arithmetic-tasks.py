"""Generates templates/arithmetic/tasks.jsonl: one-step word problems (add, subtract, multiply) with small
numbers, seeded so the bundled set is reproducible:  python3 scripts/generate-arithmetic-tasks.py"""
import json
import random
from pathlib import Path

NAMES = ["Ana", "Ben", "Chloe", "Dev", "Emma", "Farid", "Grace", "Hugo", "Iris", "Jonas", "Kira", "Leo", "Mia", "Noah", "Omar", "Priya"]
ITEMS = ["apples", "marbles", "stickers", "books", "pencils", "cookies", "shells", "coins", "cards", "stamps"]


def problem(r: random.Random) -> dict:
    name, item = r.choice(NAMES), r.choice(ITEMS)
    kind = r.choice(["add", "sub", "mul"])
    if kind == "add":
        a, b = r.randint(2, 20), r.randint(2, 20)
        text = f"{name} has {a} {item}. {name} gets {b} more {item}. How many {item} does {name} have now?"
        answer = a + b
    elif kind == "sub":
        a = r.randint(8, 30)
        b = r.randint(2, a - 1)
        text = f"{name} has {a} {item} and gives {b} of them away. How many {item} does {name} have left?"
        answer = a - b
    else:
        a, b = r.randint(2, 9), r.randint(2, 9)
        text = f"{name} has {a} bags with {b} {item} in each bag. How many {item} does {name} have in all?"
        answer = a * b
    return {"question": text, "answer": answer, "kind": kind}


def main() -> None:
    r = random.Random(2026)
    rows = [problem(r) for _ in range(200)]
    for row in rows[160:]:
        row["split"] = "val"
    out = Path(__file__).resolve().parent.parent / "templates" / "arithmetic" / "tasks.jsonl"
    out.write_text("".join(json.dumps(row) + "\n" for row in rows))
    print(f"wrote {len(rows)} tasks to {out}")


if __name__ == "__main__":
    main()
