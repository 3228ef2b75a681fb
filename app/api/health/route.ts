import { NextResponse } from "next/server";

// Liveness for scripts and the browser tests' web-server wait: the custom server only starts serving
// after migrations ran, so a 200 here means the app is ready.
export const dynamic = "force-dynamic";

export function GET() {
  return NextResponse.json({ ok: true });
}
