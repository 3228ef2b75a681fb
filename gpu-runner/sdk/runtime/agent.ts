/**
 * `runAgent`: the standard tool-calling loop (what ART rollouts, verifiers' ToolEnv and AgentScope's ReAct
 * agent all do), so a scenario need not write it: call the model with the tools, run each tool it calls,
 * append the results as tool messages, repeat until it answers without a tool call or maxTurns is reached.
 * A hand-written loop over ctx.chat works the same way; this is only a convenience.
 */
import type * as Sdk from "../../../contracts/sdk/rollbook";
import { HostError } from "./host";
import { formatToolResult } from "./tools";

const DEFAULT_MAX_TURNS = 8;
const DEFAULT_MAX_RESULT_CHARS = 20_000;

function cap(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters cut)`;
}

/** Errors that end the rollout instead of being shown to the model: the infrastructure, not the call, failed. */
function isFatal(err: unknown): boolean {
  return err instanceof HostError && (err.name === "McpError" || err.name === "ModelError" || err.name === "LimitError");
}

export const runAgent: typeof Sdk.runAgent = async (ctx, options) => {
  const tools = options.tools ?? [];
  const byName = new Map<string, Sdk.AnyTool>();
  for (const t of tools) {
    if (byName.has(t.name)) throw new TypeError(`runAgent: two tools are named "${t.name}"`);
    byName.set(t.name, t);
  }
  const maxTurns = options.maxTurns ?? DEFAULT_MAX_TURNS;
  if (!Number.isInteger(maxTurns) || maxTurns < 1 || maxTurns > 1000) throw new TypeError("runAgent: maxTurns must be an integer from 1 to 1000");
  const maxChars = options.maxToolResultChars ?? DEFAULT_MAX_RESULT_CHARS;
  const stopOnError = options.onToolError === "stop";
  const messages: Sdk.ChatMessage[] = [...options.messages];
  const result: Sdk.AgentResult = { messages, answer: "", turns: 0, toolCalls: 0, malformedToolCalls: 0, toolErrors: 0, stopReason: "max_turns" };

  try {
    while (result.turns < maxTurns) {
      const chatOptions: Sdk.ChatOptions = { ...options.chat };
      if (tools.length > 0) chatOptions.tools = tools;
      if (options.tool_choice !== undefined) chatOptions.tool_choice = options.tool_choice;
      const reply = await ctx.chat(messages, chatOptions);
      result.turns++;
      messages.push(reply.message);
      result.answer = reply.content;
      result.malformedToolCalls += reply.malformedToolCalls.length;

      if (reply.toolCalls.length === 0) {
        const botched = reply.malformedToolCalls[0];
        if (botched && !stopOnError && result.turns < maxTurns) {
          messages.push({ role: "user", content: `Your tool call could not be read (${botched.error}). Call the tool again with a JSON object of arguments, or answer.` });
          continue;
        }
        result.stopReason = botched ? "tool_error" : reply.finishReason === "length" ? "length" : "answer";
        break;
      }

      let failed = false;
      for (const call of reply.toolCalls) {
        const known = byName.get(call.function.name);
        let content: string;
        if (!known) {
          result.malformedToolCalls++;
          failed = true;
          content = `Error: there is no tool named "${call.function.name}". Tools: ${[...byName.keys()].join(", ") || "none"}.`;
        } else {
          const parsed = known.parseArguments(call.function.arguments);
          if (!parsed.ok) {
            result.toolErrors++;
            failed = true;
            content = `Error: ${parsed.error}`;
          } else {
            try {
              content = formatToolResult(await known.execute(parsed.args, { ctx, toolCallId: call.id }));
              result.toolCalls++;
            } catch (err) {
              if (isFatal(err)) throw err;
              result.toolErrors++;
              failed = true;
              content = `Error: ${err instanceof Error ? err.message : String(err)}`;
            }
          }
        }
        messages.push({ role: "tool", tool_call_id: call.id, name: call.function.name, content: cap(content, maxChars) });
      }
      if (failed && stopOnError) {
        result.stopReason = "tool_error";
        break;
      }
    }
  } finally {
    ctx.metric("tool_errors", result.toolErrors);
  }
  return result;
};
