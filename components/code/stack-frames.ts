/**
 * A rollout's error stack, as the runner maps it to the user's files:
 *   Error: bad input
 *       at check (lib/check.ts:3:11)
 *       at rollout (scenario.ts:6:3)
 *       at runAgent (rollbook/agent.ts:40:7)
 * Frames in the experiment's own code (scenario.ts, reward.ts, lib/…) can be opened in the code view and
 * marked in the editor; SDK frames (rollbook/…) and anything unparsed stay plain text.
 */
import { isCodeFile } from "@contracts";

export interface StackFrame {
  /** The function V8 names (`check`, `async rollout`), or null for an anonymous frame. */
  fn: string | null;
  file: string;
  line: number;
  column: number;
}

export interface StackLine {
  text: string;
  /** Set when the line is a frame in one of the experiment's code files. */
  frame: StackFrame | null;
}

// `at fn (file:1:2)` or `at file:1:2`; the file has no spaces or parentheses.
const FRAME = /^\s*at (?:(.+?) \()?([^\s()]+):(\d+):(\d+)\)?\s*$/;

export function parseFrame(line: string): StackFrame | null {
  const m = FRAME.exec(line);
  if (!m) return null;
  return { fn: m[1] ?? null, file: m[2]!, line: Number(m[3]), column: Number(m[4]) };
}

/** Every line of the stack, with the frames that point into user code picked out. */
export function parseStack(stack: string): StackLine[] {
  return stack.split("\n").map((text) => {
    const frame = parseFrame(text);
    return { text, frame: frame && isCodeFile(frame.file) && frame.line >= 1 && frame.column >= 1 ? frame : null };
  });
}

/** The user-code frames of a stack, innermost first. */
export function userFrames(stack: string | null | undefined): StackFrame[] {
  if (!stack) return [];
  return parseStack(stack).flatMap((l) => (l.frame ? [l.frame] : []));
}
