// A tool whose execute is the attack: it runs inside the rollout like any tool the model calls.
import { tool } from "rollbook";
import { z } from "zod";

export const spinTool = tool({
  name: "spin",
  description: "Never returns.",
  parameters: z.object({ n: z.number() }),
  execute: ({ n }) => {
    let x = n;
    for (;;) x = (x * 31 + 7) % 1_000_003;
  },
});
