import { describe, expect, it } from "vitest";
import { loadEnv } from "../env";
import { BodyLimitError, capOf, cappedBody, declaredLength, doorOf, readCappedBody, refuseBodyOnRead } from "./body-limit";

/** A body of `total` bytes, 1 KB a chunk, pulled only when read; `pulled` counts what was taken. */
function source(total: number, fill = 0x61) {
  const state = { pulled: 0 };
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(c) {
        if (state.pulled >= total) return c.close();
        const n = Math.min(1024, total - state.pulled);
        state.pulled += n;
        c.enqueue(new Uint8Array(n).fill(fill));
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, state };
}

const post = (body: BodyInit | null, headers: Record<string, string> = {}) =>
  new Request("http://x/api/trpc/a", { method: "POST", body, headers, duplex: "half" } as RequestInit);

const cap = { limit: 10_000, setting: "TEST_CAP" };

describe("body limits", () => {
  it("the settings' defaults: 20 MB for tRPC, 64 KB for auth, 4 MiB for chat, nothing for GET", () => {
    const e = loadEnv({ NODE_ENV: "test" });
    expect(capOf("trpc", e)).toEqual({ limit: 20_000_000, setting: "MAX_REQUEST_BYTES" });
    expect(capOf("auth", e)).toEqual({ limit: 65_536, setting: "MAX_AUTH_REQUEST_BYTES" });
    // A step of ART trajectory groups with per-token logprobs: its own cap, above the tRPC door's.
    expect(capOf("art", e)).toEqual({ limit: 32 * 1024 * 1024, setting: "the ART endpoint's cap" });
    expect(capOf("chat", e).limit).toBe(4 * 1024 * 1024);
    expect(capOf("chat", loadEnv({ NODE_ENV: "test", MAX_REQUEST_BYTES: "100000" })).limit).toBe(100_000);
    expect(capOf("none", e).limit).toBe(0);
    expect(() => loadEnv({ NODE_ENV: "test", MAX_REQUEST_BYTES: "10" })).toThrow(/MAX_REQUEST_BYTES/);
  });

  it("routes requests to their door", () => {
    expect(doorOf("GET", "/api/export/runs")).toBe("none");
    expect(doorOf("HEAD", "/api/checkpoints/r/1/download")).toBe("none");
    expect(doorOf("POST", "/api/auth/sign-in/email")).toBe("auth");
    expect(doorOf("POST", "/api/v1/chat/completions")).toBe("chat");
    expect(doorOf("POST", "/api/art/v1/chat/completions")).toBe("chat");
    expect(doorOf("POST", "/api/art/v1/preview/models/r1/log")).toBe("art");
    expect(doorOf("DELETE", "/api/art/v1/preview/models/r1")).toBe("art");
    expect(doorOf("GET", "/api/art/v1/preview/models/r1/checkpoints")).toBe("none");
    expect(doorOf("POST", "/api/trpc/runs.start")).toBe("trpc");
    expect(doorOf("PUT", "/anything")).toBe("trpc");
  });

  it("reads a body within the cap whole", async () => {
    const { stream } = source(9_000);
    const read = await readCappedBody(post(stream), cap);
    expect(read.ok && read.bytes.byteLength).toBe(9_000);
    expect(await readCappedBody(post(null), cap)).toEqual({ ok: true, bytes: new Uint8Array(0) });
  });

  it("stops reading at the first chunk past the cap (413 naming the setting), without cancelling the source", async () => {
    const { stream, state } = source(10_000_000);
    const read = await readCappedBody(post(stream), cap);
    expect(read).toMatchObject({ ok: false, status: 413, message: expect.stringMatching(/TEST_CAP = 10000 bytes/) });
    expect(state.pulled).toBeLessThanOrEqual(cap.limit + 3 * 1024);
  });

  it("refuses a declared length over the cap before reading anything", async () => {
    const { stream, state } = source(10_000_000);
    const read = await readCappedBody(post(stream, { "content-length": "10000001" }), cap);
    expect(read).toMatchObject({ ok: false, status: 413 });
    expect(state.pulled).toBe(0);
    expect(declaredLength(new Headers({ "content-length": " 12 " }))).toBe(12);
    expect(declaredLength(new Headers({ "content-length": "1e9" }))).toBeNull();
  });

  it("refuses JSON nested past the depth asked for while it streams", async () => {
    const body = `{"a":${"[".repeat(100)}${"]".repeat(100)}}`;
    expect(await readCappedBody(post(body), cap, { maxJsonDepth: 64 })).toMatchObject({ ok: false, status: 400, message: "the request body is nested deeper than 64 levels" });
    expect((await readCappedBody(post(body), cap, { maxJsonDepth: 200 })).ok).toBe(true);
  });

  it("cappedBody errors with what the door asks for (tRPC's own error, say)", async () => {
    const { stream } = source(20_000);
    const capped = cappedBody(post(stream), cap, (e) => new Error(`wrapped: ${e.refusal.status}`))!;
    await expect(new Response(capped).text()).rejects.toThrow("wrapped: 413");
    const plain = cappedBody(post("x".repeat(20_000)), cap)!;
    await expect(new Response(plain).text()).rejects.toBeInstanceOf(BodyLimitError);
  });

  it("a GET or HEAD that declares a body is refused; one that does not is not", () => {
    const get = (headers: Record<string, string>) => new Request("http://x/api/export/runs?x=1", { headers });
    expect(refuseBodyOnRead(get({ "content-length": "5" }))).toEqual({ status: 413, message: "GET /api/export/runs takes no request body" });
    expect(refuseBodyOnRead(get({ "transfer-encoding": "chunked" }))?.status).toBe(413);
    expect(refuseBodyOnRead(get({ "content-length": "0" }))).toBeNull();
    expect(refuseBodyOnRead(post("x"))).toBeNull();
  });
});
