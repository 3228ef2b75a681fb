/**
 * Accounts, through Better Auth: email + password (scrypt-hashed, in Account.password), sessions as rows in
 * Postgres behind an http-only, SameSite=Lax cookie (Secure when AUTH_URL is https), change password,
 * sign-in rate limits kept in the database (shared by every web server), and OAuth providers from env.
 *
 * Why Better Auth and not Auth.js: Auth.js's credentials provider only works with JWT sessions (no session
 * rows to revoke) and leaves password hashing and rate limiting to the app; Better Auth does all three with
 * a Prisma adapter, and its handler is a plain fetch handler that Next's route and socket.io can share.
 *
 * What a new user gets (features/workspace/server/accounts.ts, from the user-created hook): the first user owns the
 * default workspace (and the runs made before accounts existed); later ones get a workspace of their own and
 * join others by invite link.
 */
import { betterAuth, type BetterAuthOptions } from "better-auth";
import { prismaAdapter } from "better-auth/adapters/prisma";
import { APIError } from "better-auth/api";
import { env } from "../env";
import { onUserCreated, signUpAllowed } from "@/features/workspace/server";
import type { Db } from "../db-types";
import { authSecret } from "./secret";
import { publicBaseUrl, trustedOrigins } from "./origins";
import { cookieValue, INVITE_COOKIE } from "@contracts/cookies";

function socialProviders(): BetterAuthOptions["socialProviders"] {
  const e = env();
  const providers: NonNullable<BetterAuthOptions["socialProviders"]> = {};
  if (e.GITHUB_CLIENT_ID && e.GITHUB_CLIENT_SECRET) providers.github = { clientId: e.GITHUB_CLIENT_ID, clientSecret: e.GITHUB_CLIENT_SECRET };
  if (e.GOOGLE_CLIENT_ID && e.GOOGLE_CLIENT_SECRET) providers.google = { clientId: e.GOOGLE_CLIENT_ID, clientSecret: e.GOOGLE_CLIENT_SECRET };
  return providers;
}

/** The OAuth providers configured (for the sign-in page's buttons). */
export function configuredProviders(): string[] {
  return Object.keys(socialProviders() ?? {});
}

function buildAuth(db: Db) {
  const e = env();
  const baseURL = publicBaseUrl();
  return betterAuth({
    appName: "Rollbook",
    baseURL,
    basePath: "/api/auth",
    secret: authSecret({ configured: e.AUTH_SECRET, dataDir: e.DATA_DIR }),
    // transaction: false — with the embedded PGlite (one connection) the user-created hook's own queries
    // would wait forever on an open adapter transaction.
    database: prismaAdapter(db, { provider: "postgresql", transaction: false }),
    trustedOrigins: (request) => trustedOrigins(request?.headers ?? null),
    emailAndPassword: { enabled: true, minPasswordLength: 8, maxPasswordLength: 256, autoSignIn: true },
    socialProviders: socialProviders(),
    session: {
      expiresIn: 60 * 60 * 24 * 30,
      updateAge: 60 * 60 * 24,
      // No signed-cookie cache: a revoked session or a removed member is refused on the next request.
      cookieCache: { enabled: false },
    },
    rateLimit: {
      enabled: true,
      storage: "database",
      modelName: "rateLimit",
      window: 60,
      max: 200,
      customRules: {
        "/sign-in/email": { window: 60, max: e.AUTH_SIGNIN_PER_MINUTE },
        "/sign-up/email": { window: 60, max: e.AUTH_SIGNIN_PER_MINUTE },
        "/change-password": { window: 60, max: e.AUTH_SIGNIN_PER_MINUTE },
      },
    },
    advanced: {
      cookiePrefix: "rollbook",
      useSecureCookies: baseURL.startsWith("https://"),
      defaultCookieAttributes: { httpOnly: true, sameSite: "lax" },
      database: { generateId: false }, // cuid() defaults in the schema
    },
    databaseHooks: {
      user: {
        create: {
          before: async (_user, ctx) => {
            const invite = cookieValue(ctx?.headers?.get("cookie"), INVITE_COOKIE);
            const verdict = await signUpAllowed(db, { disabled: e.AUTH_DISABLE_SIGNUP, inviteToken: invite });
            if (!verdict.ok) throw new APIError("FORBIDDEN", { message: verdict.reason });
          },
          after: async (user) => {
            await onUserCreated(db, { id: user.id, name: user.name, email: user.email });
          },
        },
      },
    },
  });
}

export type Auth = ReturnType<typeof buildAuth>;

// One Better Auth instance per database client (the server has one; each server test its own).
const instances = new WeakMap<Db, Auth>();
export function authFor(db: Db): Auth {
  let auth = instances.get(db);
  if (!auth) {
    auth = buildAuth(db);
    instances.set(db, auth);
  }
  return auth;
}
