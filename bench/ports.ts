/**
 * Ports for the benches that start servers on fixed ports: `--<flag> N`, else the environment variable, else a
 * port the kernel reports free now. The free ones are picked together (all bound at once, then released), so
 * one bench never gets the same port twice, and two benches started side by side do not collide unless told
 * to use the same numbers.
 */
import net from "node:net";

export interface PortSpec {
  flag: string; // without the dashes: "port" reads --port
  env: string;
}

function given(spec: PortSpec): number | undefined {
  const i = process.argv.indexOf(`--${spec.flag}`);
  const raw = i >= 0 ? process.argv[i + 1] : process.env[spec.env];
  if (raw === undefined || raw === "") return undefined;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`--${spec.flag} / ${spec.env}: not a port: ${raw}`);
  return port;
}

function bindFree(): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => resolve(srv));
  });
}

/** One port per spec, in order. */
export async function benchPorts(specs: PortSpec[]): Promise<number[]> {
  const fixed = specs.map(given);
  const held = await Promise.all(fixed.map((p) => (p === undefined ? bindFree() : null)));
  const ports = fixed.map((p, i) => p ?? (held[i]!.address() as net.AddressInfo).port);
  await Promise.all(held.map((srv) => srv && new Promise((r) => srv.close(r))));
  return ports;
}

/** "--port N (or BENCH_WEB_PORT; default: a free port)" lines for a bench's usage text. */
export const portUsage = (specs: PortSpec[]) =>
  specs.map((s) => `  --${s.flag} N   (or ${s.env}=N; default: a free port)`).join("\n");
