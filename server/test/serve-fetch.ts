/**
 * Route handlers written for the Fetch API (what app/api mounts) on a plain node server, so server tests can
 * call them over real HTTP without Next: the body is read whole, a client that goes away aborts the request's
 * signal, and the answer streams back (server-sent events included).
 */
import http from "node:http";
import { Readable } from "node:stream";
import type { ReadableStream as WebReadableStream } from "node:stream/web";

export type FetchRoute = (request: Request, url: URL) => Promise<Response>;

export function serveFetch(route: FetchRoute): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers.set(k, v);
      const ctl = new AbortController();
      res.on("close", () => !res.writableFinished && ctl.abort());
      const request = new Request(url, {
        method: req.method,
        headers,
        body: req.method === "GET" || req.method === "HEAD" ? undefined : Buffer.concat(chunks),
        signal: ctl.signal,
      });
      const response = await route(request, url);
      res.writeHead(response.status, Object.fromEntries(response.headers));
      if (!response.body) return void res.end();
      const body = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
      // A body that errors (the client went away and the handler's stream was aborted) ends the response, as
      // Next does, instead of being an uncaught 'error' event.
      body.on("error", () => res.destroy());
      body.pipe(res);
    })().catch((e: unknown) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(e));
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}
