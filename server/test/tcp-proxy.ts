/**
 * A TCP proxy between two of the stack's processes, to break the link between them on purpose: `down()`
 * resets every open connection and stops listening (new ones are refused — what a restarting Postgres, a
 * dead runner link or a lost network looks like from either side); `up()` listens again on the same port.
 * `hang()` keeps every connection open but moves no byte either way (new ones too) until `unhang()`: a link
 * that hangs rather than fails, which nothing notices by an error. Hand-written: the few lines of node:net needed here beat a dependency with a control API.
 */
import net from "node:net";

export interface TcpProxy {
  port: number;
  /** Connections accepted so far (a reconnect shows up as a new one). */
  connections: number;
  down(): Promise<void>;
  hang(): void;
  unhang(): void;
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number, targetHost = "127.0.0.1"): Promise<TcpProxy> {
  const open = new Set<net.Socket>();
  let server: net.Server | null = null;
  let port = 0;
  let hung = false;
  const proxy: TcpProxy = {
    port: 0,
    connections: 0,
    async up() {
      if (server) return;
      const s = net.createServer((client) => {
        proxy.connections++;
        const upstream = net.connect(targetPort, targetHost);
        open.add(client).add(upstream);
        const drop = () => {
          client.destroy();
          upstream.destroy();
          open.delete(client);
          open.delete(upstream);
        };
        client.on("error", drop).on("close", drop);
        upstream.on("error", drop).on("close", drop);
        client.pipe(upstream);
        upstream.pipe(client);
        if (hung) {
          client.pause();
          upstream.pause();
        }
      });
      await new Promise<void>((resolve, reject) => {
        s.once("error", reject);
        s.listen(port, "127.0.0.1", () => resolve());
      });
      server = s;
      port = (s.address() as net.AddressInfo).port;
      proxy.port = port;
    },
    hang() {
      hung = true;
      for (const sock of open) sock.pause();
    },
    unhang() {
      hung = false;
      for (const sock of open) sock.resume();
    },
    async down() {
      const s = server;
      server = null;
      for (const sock of open) sock.resetAndDestroy();
      open.clear();
      if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
    },
    async close() {
      await proxy.down();
    },
  };
  await proxy.up();
  return proxy;
}
