import { defineConfig } from "vitest/config";
import path from "node:path";

// "@contracts" alone is the package's index; "@contracts/<file>" one of its files (as in tsconfig.json).
const alias = [
  { find: /^@contracts$/, replacement: path.resolve(import.meta.dirname, "contracts/index.ts") },
  { find: /^@contracts\//, replacement: path.resolve(import.meta.dirname, "contracts") + "/" },
  { find: /^@\//, replacement: path.resolve(import.meta.dirname) + "/" },
];

// Unit tests need no services; server tests talk to a real Postgres. isolated-vm needs the `forks` pool
// with --no-node-snapshot (the threads pool fails to load it).
export default defineConfig({
  resolve: { alias },
  test: {
    projects: [
      {
        resolve: { alias },
        test: {
          name: "unit",
          include: ["**/*.test.ts"],
          exclude: ["node_modules/**", "e2e/**", "gpu-runner/engine/**"],
          pool: "forks",
          execArgv: ["--no-node-snapshot"],
          testTimeout: 30_000,
        },
      },
      {
        resolve: { alias },
        test: {
          name: "server",
          include: ["**/*.servertest.ts"],
          exclude: ["node_modules/**", "gpu-runner/engine/**"],
          pool: "forks",
          execArgv: ["--no-node-snapshot"],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          fileParallelism: false,
          // A migrated template database to copy per file, and one engine shared by the files that can share it.
          globalSetup: ["server/test/global-setup.ts"],
        },
      },
    ],
  },
});
