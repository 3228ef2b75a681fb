/**
 * A stand-in for the Python engine, for tests of the real runner where the engine is not the point (the
 * runner's event log, its disk, its status): it answers the engine's HTTP contract (contracts/chat.ts,
 * contracts/train.ts) in milliseconds. /health is ok; every chat gets the same reply with token ids and
 * logprobs (so rollouts make training samples); /train checks the step order as the engine does and writes
 * a checkpoint folder of the engine's four files (temp folder, trainer_state.json last, renamed into place)
 * into the runner's runs folder — on a full disk it fails the step the way the engine does ("disk full:
 * checkpoint 0003 of run … could not be saved …") and leaves nothing behind.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { TrainRequest, type ChatCompletionRequest, type ChatCompletionResponse, type CheckpointInfo, type TrainStreamLine } from "@contracts";

export interface StandInEngine {
  url: string;
  close(): Promise<void>;
}

export interface StandInOptions {
  /** The runner's ROLLBOOK_RUNS_DIR (checkpoints go to <run>/checkpoints/<step:04d>). */
  runsDir: string;
  /** The reply of every chat (a long one makes every rollout.finished line longer than a disk block). */
  reply?: string;
  /** Bytes of adapter weights per checkpoint. */
  checkpointBytes?: number;
  /** Called before each chat is answered, with the model asked (`<run>@<step>` after step 1); the answer waits for it. */
  onChat?: (model: string) => void | Promise<void>;
}

const FILES = ["adapter_config.json", "adapter_model.safetensors", "optimizer.pt", "trainer_state.json"] as const;

function listCheckpoints(runsDir: string, runId: string): CheckpointInfo[] {
  const root = path.join(runsDir, runId, "checkpoints");
  if (!fs.existsSync(root)) return [];
  return fs
    .readdirSync(root)
    .filter((d) => /^\d+$/.test(d) && fs.existsSync(path.join(root, d, "trainer_state.json")))
    .map((d) => {
      const dir = path.join(root, d);
      const size = fs.readdirSync(dir).reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0);
      return { step: Number(d), path: dir, size_bytes: size };
    })
    .sort((a, b) => a.step - b.step);
}

function writeCheckpoint(runsDir: string, runId: string, step: number, bytes: number): CheckpointInfo {
  const root = path.join(runsDir, runId, "checkpoints");
  const name = String(step).padStart(4, "0");
  const tmp = path.join(root, `.tmp-${name}-${randomBytes(4).toString("hex")}`);
  try {
    fs.mkdirSync(tmp, { recursive: true });
    fs.writeFileSync(path.join(tmp, "adapter_model.safetensors"), randomBytes(bytes));
    fs.writeFileSync(path.join(tmp, "adapter_config.json"), JSON.stringify({ r: 8 }));
    fs.writeFileSync(path.join(tmp, "optimizer.pt"), randomBytes(bytes));
    fs.writeFileSync(path.join(tmp, "trainer_state.json"), JSON.stringify({ run_id: runId, step })); // last: marks it complete
    fs.renameSync(tmp, path.join(root, name));
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOSPC" || code === "EDQUOT") {
      throw new Error(`disk full: checkpoint ${name} of run ${runId} could not be saved in ${root} (${(err as Error).message}); nothing of it was kept`);
    }
    throw err;
  }
  const dir = path.join(root, name);
  return { step, path: dir, size_bytes: FILES.reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0) };
}

async function body(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

export async function startStandInEngine(opts: StandInOptions): Promise<StandInEngine> {
  const reply = opts.reply ?? "apple";
  const server = http.createServer((req, res) => {
    const send = (status: number, value: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(value));
    };
    void (async () => {
      const url = new URL(req.url ?? "/", "http://x");
      if (url.pathname === "/health") {
        return send(200, { status: "ok", backend: "stand-in", device: "cpu", model: "SmolLM2-135M-Instruct", max_context_tokens: 8192, memory: { rss_bytes: 0, gpu_allocated_bytes: null } });
      }
      const listing = /^\/runs\/([^/]+)\/checkpoints$/.exec(url.pathname);
      if (listing && req.method === "GET") {
        const checkpoints = listCheckpoints(opts.runsDir, decodeURIComponent(listing[1]!));
        return send(200, { run_id: listing[1], newest_step: checkpoints.at(-1)?.step ?? 0, checkpoints });
      }
      if (url.pathname === "/v1/chat/completions" && req.method === "POST") {
        const chat = JSON.parse(await body(req)) as ChatCompletionRequest;
        await opts.onChat?.(chat.model);
        const response: ChatCompletionResponse = {
          id: "chatcmpl-stand-in",
          object: "chat.completion",
          created: Math.floor(Date.now() / 1000),
          model: chat.model,
          choices: [
            {
              index: 0,
              message: { role: "assistant", content: reply },
              finish_reason: "stop",
              logprobs: { content: [{ token: "apple", logprob: -0.4 }, { token: "<|im_end|>", logprob: -0.1 }] },
              token_ids: [22815, 2],
            },
          ],
          usage: { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 },
          prompt_token_ids: [1, 9690, 198, 2],
        };
        return send(200, response);
      }
      if (url.pathname === "/train" && req.method === "POST") {
        const train = TrainRequest.parse(JSON.parse(await body(req)));
        const newest = listCheckpoints(opts.runsDir, train.run_id).at(-1)?.step ?? 0;
        if (train.step !== newest + 1) return send(409, { detail: `step ${train.step} requested but the newest checkpoint is step ${newest}` });
        res.writeHead(200, { "content-type": "application/x-ndjson" });
        const line = (l: TrainStreamLine) => res.write(JSON.stringify(l) + "\n");
        line({ type: "progress", micro_batch: 1, micro_batches: 1, loss: 0.1 });
        try {
          const checkpoint = writeCheckpoint(opts.runsDir, train.run_id, train.step, opts.checkpointBytes ?? 16 * 1024);
          const metrics = { loss: 0.1, grad_norm: 0.5, kl: 0, clip_fraction: 0, entropy: 1, probs_corr: 1, trained_tokens: 4, groups_submitted: train.groups.length, groups_trainable: train.groups.length, skipped: false, duration_s: 0.01 };
          line({ type: "result", metrics, checkpoint, token_logprobs: {} });
        } catch (err) {
          line({ type: "error", message: (err as Error).message });
        }
        return res.end();
      }
      send(404, { detail: `stand-in engine: no route ${req.method} ${url.pathname}` });
    })().catch((err: unknown) => {
      if (!res.headersSent) send(500, { detail: (err as Error).message });
      else res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
