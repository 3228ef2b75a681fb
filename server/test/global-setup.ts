/**
 * The server project's globalSetup (vitest.config.ts), in vitest's main process before any test file: a
 * migrated template database each file's createTestDb copies (template-db.ts), and the broker of the one
 * engine the files that can share one share (gpu-runner/src/test-support/shared-engine.ts). Both are named
 * in environment variables, which the test processes vitest forks afterwards inherit; teardown removes both.
 */
import { startEngineBroker, BROKER_ENV } from "@/gpu-runner/src/test-support/shared-engine";
import { createTemplateDb, TEMPLATE_ENV } from "./template-db";

const adminUrl = process.env.TEST_DATABASE_URL || "postgresql://postgres@127.0.0.1:5432/postgres";

export default async function setup(): Promise<() => Promise<void>> {
  // Without Postgres the files that need none (MCP, sandbox) still run; the others fail in createTestDb as before.
  const template = await createTemplateDb(adminUrl).catch((err: Error) => {
    console.warn(`server tests: no template database (${err.message}); each file migrates its own`);
    return null;
  });
  if (template) process.env[TEMPLATE_ENV] = template.name;
  const broker = await startEngineBroker();
  process.env[BROKER_ENV] = broker.url;
  return async () => {
    await broker.close();
    await template?.drop();
  };
}
