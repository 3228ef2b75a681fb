/**
 * Chat messages as the judges see them: the OpenAI shape (the same as the SDK's ChatMessage), the
 * shared-prefix computation RULER needs, and a serializer that shows a conversation to a judge as JSON
 * that the conversation itself cannot break out of.
 */

// The SDK's own message types: the judges read exactly what rollouts record.
import type { ChatMessage, ToolCall } from "../../../../contracts/sdk/rollbook";
export type { ChatMessage, ToolCall };

/**
 * Same message for prefix purposes: role, text, name, tool calls (id, name, arguments) and tool_call_id
 * all equal. A null content and "" are the same (both mean "no text", e.g. beside tool calls). Tool-call
 * ids count: two rollouts that made the same call under different ids diverge there, so each keeps its
 * own ids beside the tool results that refer to them.
 */
export function sameMessage(a: ChatMessage, b: ChatMessage): boolean {
  if (a.role !== b.role || (a.content ?? "") !== (b.content ?? "") || a.name !== b.name) return false;
  if (a.tool_call_id !== b.tool_call_id) return false;
  const ca = a.tool_calls ?? [];
  const cb = b.tool_calls ?? [];
  if (ca.length !== cb.length) return false;
  return ca.every((x, i) => {
    const y = cb[i] as ToolCall;
    return x.id === y.id && x.function.name === y.function.name && x.function.arguments === y.function.arguments;
  });
}

/**
 * The longest run of leading messages that every list shares ([] for no lists): what RULER sends once as
 * context. Messages are compared as in sameMessage (role, text, tool calls with ids, tool_call_id).
 */
export function commonPrefix(messageLists: readonly (readonly ChatMessage[])[]): ChatMessage[] {
  const first = messageLists[0];
  if (!first) return [];
  let n = 0;
  while (n < first.length && messageLists.every((list) => n < list.length && sameMessage(list[n] as ChatMessage, first[n] as ChatMessage))) n++;
  return first.slice(0, n);
}

// The tags the judge prompts use to frame data. A model that writes them could pretend its trajectory
// ended or a new one began; their "<" is escaped wherever they appear inside data (as \u003c: a valid
// JSON escape, so serialized messages still parse).
const FRAME_TAG = /<(?=\/?(?:context|trajectory|trajectories|task|reference|response|rubric)\b)/gi;

/** `text` with any of the prompts' framing tags made inert. */
export function defang(text: string): string {
  return text.replace(FRAME_TAG, "\\u003c");
}

export interface SerializeOptions {
  /**
   * Cut any message text longer than this to its start and end with a note of how much was left out,
   * so one runaway reply cannot push the judge past its context. Default: no limit.
   */
  maxMessageChars?: number;
}

/** A long text's start and end, with a note in the middle of what was left out. */
export function truncateMiddle(text: string, max: number | undefined): string {
  if (max === undefined || text.length <= max) return text;
  const head = Math.ceil(max / 2);
  const tail = Math.floor(max / 2);
  return `${text.slice(0, head)}\n[… ${text.length - head - tail} characters omitted …]\n${text.slice(text.length - tail)}`;
}

/**
 * Messages as a JSON array, one message per line. Tool-call arguments that are JSON are shown as
 * objects rather than as escaped strings, which a judge reads far more easily.
 */
export function serializeMessages(messages: readonly ChatMessage[], opts: SerializeOptions = {}): string {
  if (messages.length === 0) return "[]";
  const lines = messages.map((m) => {
    const out: Record<string, unknown> = { role: m.role };
    if (m.name !== undefined) out.name = m.name;
    if (m.content !== null && m.content !== undefined) out.content = truncateMiddle(m.content, opts.maxMessageChars);
    if (m.tool_calls?.length) {
      out.tool_calls = m.tool_calls.map((c) => ({ id: c.id, name: c.function.name, arguments: jsonOrText(truncateMiddle(c.function.arguments, opts.maxMessageChars)) }));
    }
    if (m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id;
    return defang(JSON.stringify(out));
  });
  return `[\n${lines.join(",\n")}\n]`;
}

function jsonOrText(s: string): unknown {
  try {
    return JSON.parse(s) as unknown;
  } catch {
    return s;
  }
}
