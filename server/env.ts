/**
 * The web server's one validated environment module: every setting the control plane reads from the
 * process environment is parsed here once, with a default and a reason. Nothing else reads process.env.
 */
import { z } from "zod";
import { parseEnv } from "@contracts/env";
import { repoPath } from "@contracts/repo-path";
import { EgressAllowSetting } from "@/gpu-runner/src/net/egress-policy";

const port = z.coerce.number().int().min(0).max(65535);

export const ServerEnv = z.object({
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  /** One port for pages, the tRPC API and socket.io. */
  PORT: port.default(3000),
  /** Loopback by default: expose deliberately (behind TLS) for a team. */
  HOST: z.string().min(1).default("127.0.0.1"),
  /** Postgres URL; unset = embedded PGlite under DATA_DIR (one process per data directory). */
  DATABASE_URL: z.string().min(1).optional(),
  /** Local state: the embedded database and anything else the web server keeps on disk. Relative: from the repository (contracts/repo-path.ts), whatever the cwd. */
  DATA_DIR: z.string().min(1).default(".data").transform((p) => repoPath(p)),
  /** The GPU runner registered at boot (more runners can register later through the Runner table). */
  RUNNER_URL: z
    .string()
    .url()
    .default("http://127.0.0.1:4100")
    .transform((u) => u.replace(/\/+$/, "")),
  /** Bearer token presented to the runner; must equal the runner's. No default (`npm start` generates one): required to start, see server/runner-token.ts. */
  RUNNER_TOKEN: z.string().min(8, "RUNNER_TOKEN must be at least 8 characters (32 random ones recommended)").optional(),
  /** Name of the registered runner, shown in errors ("runner 'local' at … unreachable"). */
  RUNNER_NAME: z.string().min(1).default("local"),
  /**
   * A running run that sent nothing for this long is checked with its runner, and a runner that has not
   * answered heartbeats for this long has its running runs marked "runner lost" (status `lost`, not terminal)
   * until it answers again (features/run-lifecycle/server/liveness/).
   */
  RUNNER_LOST_AFTER_MS: z.coerce.number().int().min(1_000).default(15_000),
  /**
   * An ART run (features/art: no runner, its client logs its steps) whose client has sent nothing for this
   * long is marked lost ("the ART client has sent nothing since …"); its next call makes it running again.
   */
  ART_CLIENT_SILENT_MS: z.coerce.number().int().min(1_000).default(30 * 60_000),
  /** true: ART clients on openai 3.x may register (features/art/server/art-client-versions.ts); false: refused with the fix. */
  ART_ALLOW_OPENAI3: z.enum(["true", "false"]).default("false").transform((v) => v === "true"),
  /**
   * `/api/v1` (and the ART door's sampling) with no max_tokens samples this many tokens at most: the context
   * left is no default (a judge that writes until 8,192 tokens holds an engine for minutes).
   */
  API_MAX_TOKENS_DEFAULT: z.coerce.number().int().min(1).default(1_024),
  /** The most max_tokens `/api/v1` takes; more is a 400 naming max_tokens and this setting. */
  API_MAX_TOKENS_CEILING: z.coerce.number().int().min(1).default(4_096),
  /**
   * Seconds an `/api/v1` completion may take before the caller gets a 504 saying so ("generation exceeded …"),
   * and the engine stops sampling it: under the web → runner call's own 300 s and the proxies' usual limits.
   */
  API_REQUEST_DEADLINE_S: z.coerce.number().int().min(1).max(290, "API_REQUEST_DEADLINE_S: at most 290 (the runner call's 300 s limit)").default(240),
  /** How often (ms) the web server asks every enabled runner for its status (health, "last seen" in settings). */
  HEARTBEAT_MS: z.coerce.number().int().min(100, "HEARTBEAT_MS: a whole number of milliseconds, at least 100").default(2_000),
  /** How often (ms) the dispatcher looks for runs other web processes queued (its own start them at once). */
  DISPATCH_POLL_MS: z.coerce.number().int().min(50, "DISPATCH_POLL_MS: a whole number of milliseconds, at least 50").default(1_000),
  /**
   * How long a web process's lease on ingesting a run lasts unrenewed (renewed every third of it): with
   * several web processes on one database, a killed one's runs are taken over by another within about this
   * long (features/run-lifecycle/server/ingest/lease.ts).
   */
  INGEST_LEASE_MS: z.coerce.number().int().min(300, "INGEST_LEASE_MS: a whole number of milliseconds, at least 300").default(6_000),
  /**
   * Several web processes share live delivery through a socket.io adapter: Redis's pub/sub when this is set
   * (redis://host:6379), otherwise Postgres's LISTEN/NOTIFY on DATABASE_URL (server/realtime/adapter.ts).
   */
  REDIS_URL: z
    .string()
    .url()
    .refine((u) => /^rediss?:\/\//.test(u), "REDIS_URL must be a redis:// or rediss:// URL")
    .optional(),
  /**
   * The largest request body (bytes) the web server reads on /api/trpc and any route without a cap of its
   * own: an experiment's files are at most 8 MB, and JSON escaping can double every byte of them (quotes,
   * backslashes), so 20 MB holds the largest experiment with room for the envelope. Bigger bodies are 413,
   * refused before more than this is read (server/http/body-limit.ts).
   */
  MAX_REQUEST_BYTES: z.coerce.number().int().min(65_536, "MAX_REQUEST_BYTES: a whole number of bytes, at least 65536").default(20_000_000),
  /** The largest request body (bytes) of the sign-in, sign-up and account routes at /api/auth: a few fields of text. */
  MAX_AUTH_REQUEST_BYTES: z.coerce.number().int().min(1_024, "MAX_AUTH_REQUEST_BYTES: a whole number of bytes, at least 1024").default(65_536),
  /** A running run that sent no event for this long (ms) is flagged "stalled" and alerted (features/flags/server/notify/watcher.ts). */
  STALL_AFTER_MS: z.coerce.number().int().min(1000, "STALL_AFTER_MS: a whole number of milliseconds, at least 1000").default(300_000),
  /**
   * Internal addresses the web server may send requests to on a user's behalf (webhooks, workspace-registered
   * runners): comma-separated CIDR ranges, addresses and host names, each optionally :port. Loopback,
   * link-local (cloud metadata), private, unique-local, CGNAT and other special addresses are refused
   * otherwise (gpu-runner/src/net/egress-policy.ts). The runner reads the same setting for judges and MCP.
   */
  EGRESS_ALLOW: EgressAllowSetting,

  // ── accounts (server/auth) ──
  /** Signs session cookies. Unset: a random one kept in DATA_DIR/auth-secret (set it when several web servers share a database). */
  AUTH_SECRET: z.string().min(32, "AUTH_SECRET must be at least 32 characters").optional(),
  /** The URL users open (behind a proxy: the public https URL). Default http://HOST:PORT. Cookies are `Secure` when it is https. */
  AUTH_URL: z.string().url().optional(),
  /** More origins allowed to call the API and open sockets (comma-separated), e.g. http://localhost:3000. */
  AUTH_TRUSTED_ORIGINS: z.string().default(""),
  /**
   * Who operates this instance (docs/security.md, "Who is trusted"): comma-separated emails of the accounts that
   * see the instance's runners as they are — their addresses, engine health and memory, error texts (which name
   * the address), checkpoint paths and the engine queue every workspace shares. Every sign-up owns a workspace,
   * so "workspace admin" is no such barrier. Unset: the owner of the default workspace, i.e. the account of the
   * one-form first setup (features/workspace/server/operator.ts).
   */
  ROLLBOOK_OPERATOR_EMAILS: z
    .string()
    .default("")
    .transform((v) =>
      v
        .split(",")
        .map((e) => e.trim().toLowerCase())
        .filter((e) => e.length > 0),
    ),
  /** true: after the first user (the owner), only someone holding a valid invite link may sign up. */
  AUTH_DISABLE_SIGNUP: z.enum(["true", "false"]).default("false").transform((v) => v === "true"),
  /** true behind a reverse proxy that sets X-Forwarded-For (then its value is the client address); false: the socket's. */
  TRUST_PROXY: z.enum(["true", "false"]).default("false").transform((v) => v === "true"),
  /** Sign-in attempts per minute per client address before they are refused (429). */
  AUTH_SIGNIN_PER_MINUTE: z.coerce.number().int().min(1).default(10),
  /** OAuth providers: set both halves of a pair to show its button. Callback: <AUTH_URL>/api/auth/callback/<provider>. */
  GITHUB_CLIENT_ID: z.string().optional(),
  GITHUB_CLIENT_SECRET: z.string().optional(),
  GOOGLE_CLIENT_ID: z.string().optional(),
  GOOGLE_CLIENT_SECRET: z.string().optional(),
});
export type ServerEnv = z.infer<typeof ServerEnv>;

/** Parse an environment (process.env by default); empty strings count as unset. */
export function loadEnv(source: NodeJS.ProcessEnv = process.env): ServerEnv {
  return parseEnv(ServerEnv, source, "server");
}

let cached: ServerEnv | undefined;
/** The process's environment, parsed once on first use (tests may call resetEnv() after changing it). */
export function env(): ServerEnv {
  cached ??= loadEnv();
  return cached;
}
export function resetEnv(): void {
  cached = undefined;
}
