import js from "@eslint/js";
import tseslint from "typescript-eslint";
import reactHooks from "eslint-plugin-react-hooks";
import featureBoundaries from "./scripts/eslint/feature-boundaries.js";

export default tseslint.config(
  {
    ignores: [
      "node_modules/**",
      ".next/**",
      "generated/**",
      "gpu-runner/engine/**",
      ".data/**",
      "runs/**",
      "templates/**",
      // Experiments in the template shape (they import "rollbook"), checked by bench/fresh-tasks.test.ts.
      "bench/fresh-tasks/**",
      "bench/flag-corpus/pathologies/**",
      // Experiment code (hostile on purpose), checked by the experiment's own type check in its tests.
      "gpu-runner/src/sandbox/hostile/corpus/**",
      "next-env.d.ts",
      "public/**",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    plugins: { "react-hooks": reactHooks },
    rules: {
      "react-hooks/rules-of-hooks": "error",
      "react-hooks/exhaustive-deps": "warn",
      "@typescript-eslint/no-unused-vars": ["warn", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": ["warn", { fixStyle: "inline-type-imports" }],
    },
  },
  {
    // The web tier reaches the runner only through the contracts and the runner's client (plus the SDK's
    // type libs for the editor): never its internals, which belong to a process that may be on another box.
    // src/net/ is no internal of the runner's process: the egress policy both processes enforce, kept once.
    files: ["server/**/*.ts", "app/**/*.ts", "app/**/*.tsx", "components/**/*.ts", "components/**/*.tsx", "features/**/*.ts", "features/**/*.tsx"],
    ignores: ["**/*.test.ts", "**/*.servertest.ts", "server/test/**"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              regex: "gpu-runner/(?!src/client$|src/net/[a-z-]+$)",
              message: "server/, app/, components/ and features/ import only @contracts, the runner's client (@/gpu-runner/src/client) and the egress policy (@/gpu-runner/src/net/*).",
            },
          ],
        },
      ],
    },
  },
  {
    // Feature slices: browser code never imports server code; features meet only at their entry files.
    files: ["features/**/*.{ts,tsx}", "components/**/*.{ts,tsx}", "server/**/*.ts", "app/**/*.{ts,tsx}"],
    plugins: { rollbook: { rules: { "feature-boundaries": featureBoundaries } } },
    rules: { "rollbook/feature-boundaries": "error" },
  },
  {
    // The contracts are the top of the house: web, runner and SDK import them, they import none of those
    // (only zod and each other), so the browser, the server and the runner can all load any of them.
    files: ["contracts/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              regex: "^(@/)?(\\.\\./)*(server|components|app|features|gpu-runner|bench|scripts|e2e)(/|$)",
              message: "contracts/ imports nothing from the web, the runner or the tools: only zod and other contracts.",
            },
          ],
        },
      ],
    },
  },
  {
    files: ["**/*.js", "**/*.cjs", "**/*.mjs"],
    languageOptions: { globals: { process: "readonly", console: "readonly" } },
  },
);
