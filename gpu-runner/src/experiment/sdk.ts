/**
 * The scenario SDK's type declarations (gpu-runner/sdk/rollbook.d.ts), read once. The runner's type check
 * uses it, and the web editor can load the same text into Monaco, so both see one API.
 */
import { readFileSync } from "node:fs";

/** The text of rollbook.d.ts: an ambient `declare module "rollbook" { ... }`. */
export const SDK_DTS: string = readFileSync(new URL("../../sdk/rollbook.d.ts", import.meta.url), "utf8");
