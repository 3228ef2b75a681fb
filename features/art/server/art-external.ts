/**
 * ART trajectories → what the runner trains on (contracts ExternalTrajectory), pure. Each history keeps
 * its order: message dicts as messages, each `Choice` as a sampled reply with the ids the engine sampled —
 * ART keeps them in the Choice's logprobs, each token written `token_id:<id>` (vLLM's
 * return_tokens_as_token_ids, which Rollbook's engine honours and its ART door turns on) — and their
 * logprobs. A Choice whose logprobs do not all carry ids (sampled elsewhere, or without logprobs) goes with
 * token_ids null: the runner re-tokenises it and says so.
 */
import { ToolSpec, type ExternalHistory, type ExternalItem, type ExternalTrajectory } from "@contracts";
import type { ArtChoice, ArtTrajectory, ArtTrajectoryGroup } from "../schema";
import { fromChoice, fromMessage, isChoice } from "./art-transcript";

const TOKEN_ID = /^token_id:(\d+)$/;

/** The sampled ids and logprobs of a Choice, when every logprobs entry names its id; else nulls. */
export function sampledIds(choice: ArtChoice): { token_ids: number[] | null; logprobs: number[] | null } {
  const content = choice.logprobs?.content;
  if (!content || content.length === 0) return { token_ids: null, logprobs: null };
  const ids: number[] = [];
  for (const entry of content) {
    const m = TOKEN_ID.exec(entry.token);
    if (!m) return { token_ids: null, logprobs: null };
    ids.push(Number(m[1]));
  }
  return { token_ids: ids, logprobs: content.map((e) => e.logprob) };
}

export class ArtTrainInputError extends Error {
  constructor(
    message: string,
    readonly param: string,
  ) {
    super(message);
  }
}

function toolsOf(tools: unknown[] | null | undefined, where: string): ToolSpec[] | null {
  if (!tools || tools.length === 0) return null;
  return tools.map((t, i) => {
    const parsed = ToolSpec.safeParse(t);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const field = `${where}.tools[${i}]${issue.path.length ? "." + issue.path.join(".") : ""}`;
      throw new ArtTrainInputError(`${field}: ${issue.message} (a tool as OpenAI's API takes it: {type: "function", function: {name, parameters}})`, field);
    }
    return parsed.data;
  });
}

function historyOf(h: { messages_and_choices: ArtTrajectory["messages_and_choices"]; tools?: unknown[] | null }, where: string): ExternalHistory {
  const items: ExternalItem[] = h.messages_and_choices.map((item) =>
    isChoice(item) ? { sampled: { message: fromChoice(item), ...sampledIds(item) } } : { message: fromMessage(item) },
  );
  return { tools: toolsOf(h.tools, where), items };
}

/** Every group's trajectories, each with the id its rollout has in the run's history (`ids[g][t]`). */
export function externalGroupsOf(groups: readonly ArtTrajectoryGroup[], ids: readonly (readonly string[])[]): { trajectories: ExternalTrajectory[] }[] {
  return groups.map((g, gi) => ({
    trajectories: g.trajectories.map((t, ti) => {
      const where = `trajectory_groups[${gi}].trajectories[${ti}]`;
      return {
        id: ids[gi]![ti]!,
        reward: t.reward,
        histories: [historyOf(t, where), ...t.additional_histories.map((h, hi) => historyOf(h, `${where}.additional_histories[${hi}]`))],
      };
    }),
  }));
}
