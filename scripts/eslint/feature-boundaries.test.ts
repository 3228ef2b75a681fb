/** The feature-slice lint rule, on imports it must refuse and ones it must allow (ESLint's RuleTester). */
import path from "node:path";
import { RuleTester } from "eslint";
import tseslint from "typescript-eslint";
import { afterAll, describe, it } from "vitest";
import rule from "./feature-boundaries.js";

// RuleTester runs its cases through the test framework's hooks (vitest has no globals here).
Object.assign(RuleTester, { afterAll, describe, it });

const ROOT = path.resolve(import.meta.dirname, "../..");
const at = (file: string) => path.join(ROOT, file);
const tester = new RuleTester({ languageOptions: { parser: tseslint.parser, ecmaVersion: 2022, sourceType: "module" } });

tester.run("feature-boundaries", rule, {
  valid: [
    { filename: at("features/runs/components/runs-table.tsx"), code: 'import { RunFlags } from "@/features/flags";' },
    { filename: at("features/runs/server/router.ts"), code: 'import { FilesInput } from "@/features/experiments/schema";' },
    { filename: at("features/runs/server/runs.ts"), code: 'import { stopRun } from "@/features/run-lifecycle/server";' },
    { filename: at("features/runs/server/runs.ts"), code: 'import { x } from "./runs-table";' },
    { filename: at("components/trpc.ts"), code: 'import type { AppRouter } from "@/server/routers/_app";' },
    { filename: at("server/routers/_app.ts"), code: 'import { runsRouter } from "@/features/runs/server/router";' },
    { filename: at("app/runs/page.tsx"), code: 'import { RunsTable } from "@/features/runs/components/runs-table";' },
    { filename: at("features/runs/server/runs.servertest.ts"), code: 'import { x } from "@/features/run-lifecycle/server/ingest";' },
  ],
  invalid: [
    { filename: at("features/runs/components/runs-table.tsx"), code: 'import { db } from "@/server/db";', errors: 1 },
    { filename: at("components/nav.tsx"), code: 'import { listRunsTable } from "@/features/runs/server";', errors: 1 },
    { filename: at("features/runs/schema.ts"), code: 'import { x } from "./server/runs";', errors: 1 },
    { filename: at("features/runs/server/runs.ts"), code: 'import { ingest } from "@/features/run-lifecycle/server/ingest";', errors: 1 },
    { filename: at("features/rescore/components/panel.tsx"), code: 'import { RolloutList } from "../../run-view/components/rollout-list";', errors: 1 },
    { filename: at("server/index.ts"), code: 'import { x } from "@/features/runs/server/runs";', errors: 1 },
    { filename: at("features/runs/server/runs.ts"), code: 'import { x } from "@/features/runs/server";', errors: 1 },
    { filename: at("features/runs/components/a.tsx"), code: 'const m = import("@/features/compare/components/compare-view");', errors: 1 },
    { filename: at("features/compare/server/compare.ts"), code: 'import { COMPARE_MAX_RUNS } from "../components/compare-url";', errors: 1 },
    { filename: at("server/realtime/io.ts"), code: 'import { x } from "@/components/ui/format";', errors: 1 },
  ],
});
