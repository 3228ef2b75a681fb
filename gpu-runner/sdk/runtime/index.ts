/**
 * The SDK's runtime: what `import { ... } from "rollbook"` gives user code inside the sandbox. Each export
 * is typed against ../rollbook.d.ts (the one source of the SDK's types), so the runtime cannot drift from
 * what the editor and the type check promise.
 */
import type * as Sdk from "../../../contracts/sdk/rollbook";
import * as judges from "./judges";

export { tool } from "./tools";
export { runAgent } from "./agent";
export { judgeChat } from "./judge-chat";
export { llmJudge, rulerJudge } from "./llm-judges";

export const exactMatch: typeof Sdk.exactMatch = judges.exactMatch;
export const regexMatch: typeof Sdk.regexMatch = judges.regexMatch;
export const regexFind: typeof Sdk.regexFind = judges.regexFind;
export const extractAnswer: typeof Sdk.extractAnswer = judges.extractAnswer;
export const parseMathValue: typeof Sdk.parseMathValue = judges.parseMathValue;
export const mathEqual: typeof Sdk.mathEqual = judges.mathEqual;
