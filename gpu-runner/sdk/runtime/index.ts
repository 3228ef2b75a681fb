/**
 * The SDK's runtime: what `import { ... } from "rollbook"` gives user code inside the sandbox. Each export
 * is typed against ../rollbook.d.ts (the one source of the SDK's types), so the runtime cannot drift from
 * what the editor and the type check promise.
 */
export { tool } from "./tools";
export { runAgent } from "./agent";
export { judgeChat } from "./judge-chat";
