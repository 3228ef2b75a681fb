// Next config for Rollbook (ESM: the package is "type": "module"). Served by the custom server
// (server/index.ts), never `next start`.

/** @type {import('next').NextConfig} */
const nextConfig = {
  reactStrictMode: true,
  // Native or heavy server packages are required at runtime instead of bundled into route handlers.
  serverExternalPackages: [
    "isolated-vm",
    "@electric-sql/pglite",
    "pglite-prisma-adapter",
    "pg",
    "@prisma/client",
    "@prisma/adapter-pg",
    "@prisma/driver-adapter-utils",
    "@prisma/schema-engine-wasm",
    "esbuild",
    "typescript",
    "socket.io",
    "eventsource",
    // The egress policy's fetch (gpu-runner/src/net/guarded-fetch.ts): Node's own HTTP client, not for bundling.
    "undici",
  ],
  // No network at build or run time: no remote images, no telemetry-dependent features.
  images: { unoptimized: true },
  poweredByHeader: false,
  // `npm run dev` only: Next's floating dev badge sat over the editor's Problems panel.
  devIndicators: false,
  typescript: { tsconfigPath: "tsconfig.json" },
};

export default nextConfig;
