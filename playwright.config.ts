import os from "node:os";
import path from "node:path";
import { defineConfig } from "@playwright/test";

// Browser tests drive Debian's Chromium (playwright's own browser download cannot work offline) against
// the whole stack: web server + runner + engine with the real model, on ports of their own, with a fresh
// Postgres database (scripts/e2e-stack.sh).
const port = Number(process.env.E2E_PORT ?? 3100);
// The stack's database name, chosen once here: workers inherit it, so a spec can seed rows into the same
// database the stack serves (e2e/viewer.spec.ts seeds a finished run; see e2eDatabaseUrl in e2e/db.ts).
process.env.E2E_DB_NAME ??= `rollbook_e2e_${Date.now()}_${Math.floor(Math.random() * 1e6)}`;
// The second web process (scripts/e2e-stack.sh) and where the stack writes the web processes' pids
// (e2e/multi-web.spec.ts kills web 1); chosen here for the same reason.
process.env.E2E_PORT2 ??= "3101";
process.env.E2E_STACK_DIR ??= path.join(os.tmpdir(), process.env.E2E_DB_NAME);

export default defineConfig({
  testDir: "e2e",
  testMatch: "**/*.spec.ts",
  timeout: 240_000,
  expect: { timeout: 120_000 },
  workers: 1,
  reporter: [["list"]],
  use: {
    baseURL: `http://127.0.0.1:${port}`,
    browserName: "chromium",
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
      ],
    },
    screenshot: "only-on-failure",
    trace: "off",
  },
  webServer: {
    command: "bash scripts/e2e-stack.sh",
    url: `http://127.0.0.1:${port}/api/health`,
    timeout: 300_000,
    reuseExistingServer: false,
    stdout: "pipe",
    stderr: "pipe",
    gracefulShutdown: { signal: "SIGTERM", timeout: 10_000 },
  },
});
