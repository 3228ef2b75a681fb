/**
 * A TCP proxy between two of the stack's processes, to break the link between them on purpose: `down()`
 * resets every open connection and stops listening (new ones are refused — what a restarting Postgres, a
 * dead runner link or a lost network looks like from either side); `up()` listens again on the same port.
 * `hang()` is the other kind of outage (a network partition, a frozen server): every connection stays open
 * but no byte moves either way, and new ones are accepted but get no answer, until `up()`.
 * Hand-written: the few lines of node:net needed here beat a dependency with a control API.
 */
import net from "node:net";

export interface TcpProxy {
  port: number;
  /** Connections accepted so far (a reconnect shows up as a new one). */
  connections: number;
  down(): Promise<void>;
  /** Nothing moves, nothing is closed: open connections stall, new ones wait unanswered. */
  hang(): void;
  /** Listens again after down(), or lets everything move again after hang(). */
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number, targetHost = "127.0.0.1"): Promise<TcpProxy> {
  const open = new Set<net.Socket>();
  let server: net.Server | null = null;
  let port = 0;
  let hung = false;
  /** Connections accepted while hung: connected upstream once up() is called. */
  const held: (() => void)[] = [];
  /** Each open client with its upstream: unpiped while hung (a paused source alone can be resumed by pipe()). */
  const pairs = new Map<net.Socket, net.Socket>();
  const proxy: TcpProxy = {
    port: 0,
    connections: 0,
    hang() {
      hung = true;
      // Unpiped and paused, a socket is not read: nothing moves either way, and nothing is closed.
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream).pause();
        upstream.unpipe(client).pause();
      }
    },
    async up() {
      if (hung) {
        hung = false;
        for (const [client, upstream] of pairs) {
          client.pipe(upstream);
          upstream.pipe(client);
        }
        for (const connect of held.splice(0)) connect();
      }
      if (server) return;
      const s = net.createServer((client) => {
        proxy.connections++;
        if (hung) {
          client.pause();
          open.add(client);
          client.on("error", () => client.destroy());
          held.push(() => (client.destroyed ? undefined : pair(client)));
          return;
        }
        pair(client);
      });
      const pair = (client: net.Socket) => {
        client.resume();
        const upstream = net.connect(targetPort, targetHost);
        open.add(client).add(upstream);
        pairs.set(client, upstream);
        const drop = () => {
          pairs.delete(client);
          client.destroy();
          upstream.destroy();
          open.delete(client);
          open.delete(upstream);
        };
        client.on("error", drop).on("close", drop);
        upstream.on("error", drop).on("close", drop);
        client.pipe(upstream);
        upstream.pipe(client);
      };
      await new Promise<void>((resolve, reject) => {
        s.once("error", reject);
        s.listen(port, "127.0.0.1", () => resolve());
      });
      server = s;
      port = (s.address() as net.AddressInfo).port;
      proxy.port = port;
    },
    async down() {
      const s = server;
      server = null;
      hung = false;
      held.length = 0;
      pairs.clear();
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
