"use client";
/**
 * A run's checkpoints as things to take away: the list (step, size, rewards) with a Download of each as a
 * PEFT folder, a chat that sends the same prompt to a chosen checkpoint and to the base model side by side,
 * and the OpenAI SDK call that serves the checkpoint from code. Opened from the run page's header
 * (CheckpointsButton); everything the models write is rendered as text.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { can, requiresRoleTitle } from "@/contracts/actions";
import { useEffect, useState, type FormEvent } from "react";
import type { ChatMessage } from "@contracts";
import { useTRPC, useTRPCClient } from "@/components/trpc";
import { fmtDateTime, fmtNum } from "@/components/ui/format";
import { Button, EmptyState, ErrorBox, Spinner } from "@/components/ui/primitives";

export function CheckpointsButton({ runId, count }: { runId: string; count: number }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <Button onClick={() => setOpen(true)} title="Download checkpoints, chat with them, serve them to code">
        Checkpoints <span className="text-zinc-400 tabular-nums">{count}</span>
      </Button>
      {open && <CheckpointsPanel runId={runId} count={count} onClose={() => setOpen(false)} />}
    </>
  );
}

function fmtBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** `count`: the run's checkpoints as the live run page knows them; a new one refreshes the list. */
function CheckpointsPanel({ runId, count, onClose }: { runId: string; count: number; onClose: () => void }) {
  const trpc = useTRPC();
  const list = useQuery(trpc.checkpoints.list.queryOptions({ runId }));
  const items = list.data?.items ?? [];
  const { refetch } = list;
  const listed = items.length;
  useEffect(() => {
    if (list.data && count > listed) void refetch();
  }, [count, listed, list.data, refetch]);
  // null = "the newest": the chat follows new checkpoints until the user picks one.
  const [step, setStep] = useState<number | null>(null);
  const chosen = step ?? items[items.length - 1]?.step ?? null;

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => e.key === "Escape" && onClose();
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [onClose]);

  return (
    <div className="fixed inset-0 z-40 flex justify-end bg-black/50" onClick={onClose}>
      <div
        role="dialog"
        aria-label="Checkpoints"
        className="flex h-full w-full max-w-5xl flex-col overflow-auto border-l border-zinc-800 bg-zinc-950 text-[13px]"
        onClick={(e) => e.stopPropagation()}
      >
        <div className="flex shrink-0 items-center gap-3 border-b border-zinc-800 px-4 py-2.5">
          <h2 className="font-semibold text-zinc-100">Checkpoints {list.data ? `of run #${list.data.runNumber}` : ""}</h2>
          <Button variant="ghost" className="ml-auto" onClick={onClose}>
            Close
          </Button>
        </div>
        <div className="space-y-5 p-4">
          {list.error ? (
            <ErrorBox title="Could not load the checkpoints">{list.error.message}</ErrorBox>
          ) : !list.data ? (
            <Spinner />
          ) : items.length === 0 ? (
            <EmptyState title="No checkpoints yet">A train run saves one after every step.</EmptyState>
          ) : (
            <>
              <BestLine best={list.data.best} />
              <CheckpointTable runId={runId} items={items} chosen={chosen} bestStep={list.data.best?.step ?? null} onChoose={setStep} onDeleted={(s) => s === step && setStep(null)} />
              {chosen !== null && (
                <>
                  <SideBySideChat key={chosen} runId={runId} step={chosen} model={`${list.data.runNumber}@${chosen}`} baseModel={list.data.baseModel} />
                  <UseFromCode model={`${list.data.runNumber}@${chosen}`} runId={runId} step={chosen} runNumber={list.data.runNumber} baseModel={list.data.baseModel} />
                </>
              )}
            </>
          )}
        </div>
      </div>
    </div>
  );
}

type Item = { step: number; model: string; sizeBytes: number; createdAt: Date | string; evalReward: number | null; trainReward: number | null; deletePending: boolean };

type Best = { step: number; reward: number; model: string } | null;

/** Which checkpoint validated best, and the alias that serves it from code. */
function BestLine({ best }: { best: Best }) {
  if (!best) return <p className="text-zinc-500">No checkpoint has a validation eval yet: the best one is marked here once the run evaluates one.</p>;
  return (
    <p className="text-zinc-300" data-testid="best-checkpoint">
      Best validation reward <span className="font-mono text-emerald-300">{fmtNum(best.reward)}</span> at step{" "}
      <span className="font-mono">{best.step}</span>; serve it as <span className="font-mono text-zinc-100">{best.model}</span>.
    </p>
  );
}

function CheckpointTable({
  runId,
  items,
  chosen,
  bestStep,
  onChoose,
  onDeleted,
}: {
  runId: string;
  items: Item[];
  chosen: number | null;
  bestStep: number | null;
  onChoose: (s: number) => void;
  onDeleted: (s: number) => void;
}) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const role = useQuery(trpc.workspace.current.queryOptions()).data?.role ?? null;
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const remove = useMutation(
    trpc.checkpoints.delete.mutationOptions({
      onSuccess: (out, input) => {
        setError(null);
        const held = out.deferred.find((d) => d.step === input.step);
        setNotice(held ? `Checkpoint step ${input.step} is read by ${held.held_by}: it is deleted when that run ends.` : null);
        if (!held) onDeleted(input.step);
        void qc.invalidateQueries({ queryKey: trpc.checkpoints.list.queryKey({ runId }) });
      },
      onError: (e) => setError(e.message),
    }),
  );
  const newest = items.at(-1)?.step;
  const mayDelete = can(role, "checkpoint.delete");
  return (
    <>
    {error && <ErrorBox title="Could not delete the checkpoint">{error}</ErrorBox>}
    {notice && <p className="mb-2 text-[13px] text-amber-300">{notice}</p>}
    <table className="w-full text-left">
      <thead className="text-[11px] tracking-wide text-zinc-500 uppercase">
        <tr>
          <th className="py-1 font-normal">Step</th>
          <th className="py-1 font-normal">Model name</th>
          <th className="py-1 font-normal">Size</th>
          <th className="py-1 font-normal" title="The run's own eval of this checkpoint on the validation tasks">Eval reward</th>
          <th className="py-1 font-normal" title="Mean reward of the training step that produced it">Train reward</th>
          <th className="py-1 font-normal">Saved</th>
          <th />
        </tr>
      </thead>
      <tbody className="font-mono tabular-nums">
        {items.map((c) => (
          <tr key={c.step} className={`border-t border-zinc-900 ${c.step === chosen ? "bg-zinc-900" : ""}`}>
            <td className="py-1">
              {c.step}
              {c.step === bestStep && (
                <span className="ml-1.5 rounded bg-emerald-900/60 px-1 font-sans text-[11px] text-emerald-300" title="The highest validation reward of the run's checkpoints">
                  best
                </span>
              )}
            </td>
            <td className="py-1 text-zinc-300">{c.model}</td>
            <td className="py-1">{fmtBytes(c.sizeBytes)}</td>
            <td className="py-1">{c.evalReward === null ? "—" : fmtNum(c.evalReward)}</td>
            <td className="py-1">{c.trainReward === null ? "—" : fmtNum(c.trainReward)}</td>
            <td className="py-1 font-sans text-[12px] text-zinc-400">{fmtDateTime(c.createdAt)}</td>
            <td className="py-1 text-right whitespace-nowrap">
              <Button variant="ghost" onClick={() => onChoose(c.step)} disabled={c.step === chosen}>
                Chat
              </Button>
              {/* A plain link: the browser's session authorizes it and streams the file to disk. */}
              <a
                href={`/api/checkpoints/${encodeURIComponent(runId)}/${c.step}/download`}
                className="ml-1 inline-flex h-7 items-center rounded border border-zinc-700 bg-zinc-800 px-2.5 font-sans text-[13px] text-zinc-100 hover:bg-zinc-700"
                download
              >
                Download
              </a>
              {c.deletePending && (
                <span className="ml-1 font-sans text-[12px] text-amber-300" title="Asked to be deleted while an active run reads it (an eval of it, a fork starting from it): deleted when that run ends">
                  deleting when its readers end
                </span>
              )}
              {c.step !== newest && !c.deletePending && (
                <Button
                  variant="ghost"
                  className="ml-1"
                  disabled={!mayDelete || remove.isPending}
                  title={mayDelete ? "Delete this checkpoint's files from the runner and the list (the newest is kept: the next step starts from it)" : requiresRoleTitle(role, "checkpoint.delete")}
                  onClick={() => {
                    if (window.confirm(`Delete checkpoint ${c.model}? Its files are removed from the runner; this cannot be undone.`)) remove.mutate({ runId, step: c.step });
                  }}
                >
                  Delete
                </Button>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
    </>
  );
}

interface Column {
  replies: { content: string; ms: number | null; error: string | null }[];
  pending: boolean;
}

const emptyColumn = (): Column => ({ replies: [], pending: false });

/** The same prompts to the checkpoint and to the base model; each keeps its own conversation. */
function SideBySideChat({ runId, step, model, baseModel }: { runId: string; step: number; model: string; baseModel: string }) {
  const client = useTRPCClient();
  const [prompts, setPrompts] = useState<string[]>([]);
  const [draft, setDraft] = useState("");
  const [maxTokens, setMaxTokens] = useState(128);
  const [columns, setColumns] = useState<{ ckpt: Column; base: Column }>({ ckpt: emptyColumn(), base: emptyColumn() });
  const pending = columns.ckpt.pending || columns.base.pending;

  const history = (which: "ckpt" | "base", nextPrompt: string): ChatMessage[] => {
    const msgs: ChatMessage[] = [];
    prompts.forEach((p, i) => {
      msgs.push({ role: "user", content: p });
      const r = columns[which].replies[i];
      if (r && !r.error) msgs.push({ role: "assistant", content: r.content });
    });
    msgs.push({ role: "user", content: nextPrompt });
    return msgs;
  };

  const ask = async (which: "ckpt" | "base", messages: ChatMessage[]) => {
    setColumns((c) => ({ ...c, [which]: { ...c[which], pending: true } }));
    let reply: Column["replies"][number];
    try {
      const r = await client.checkpoints.chat.mutate({ runId, step: which === "ckpt" ? step : null, messages, maxTokens });
      reply = { content: r.content ?? "", ms: r.ms, error: null };
    } catch (e) {
      reply = { content: "", ms: null, error: e instanceof Error ? e.message : String(e) };
    }
    setColumns((c) => ({ ...c, [which]: { replies: [...c[which].replies, reply], pending: false } }));
  };

  const send = (e: FormEvent) => {
    e.preventDefault();
    const text = draft.trim();
    if (!text || pending) return;
    const ckptMsgs = history("ckpt", text);
    const baseMsgs = history("base", text);
    setPrompts((p) => [...p, text]);
    setDraft("");
    void ask("ckpt", ckptMsgs);
    void ask("base", baseMsgs);
  };

  return (
    <section className="space-y-2">
      <div className="flex items-center gap-3">
        <h3 className="font-medium text-zinc-200">Chat</h3>
        <span className="text-[12px] text-zinc-500">Same prompt to both, greedy (temperature 0).</span>
        <label className="ml-auto flex items-center gap-1.5 text-[12px] text-zinc-400">
          max tokens
          <input
            type="number"
            min={1}
            max={2048}
            value={maxTokens}
            onChange={(e) => setMaxTokens(Math.min(2048, Math.max(1, Number(e.target.value) || 1)))}
            className="w-20 rounded border border-zinc-700 bg-zinc-900 px-1.5 py-0.5 text-zinc-200"
          />
        </label>
        <Button variant="ghost" disabled={pending || prompts.length === 0} onClick={() => (setPrompts([]), setColumns({ ckpt: emptyColumn(), base: emptyColumn() }))}>
          Clear
        </Button>
      </div>
      <div className="grid grid-cols-2 gap-3">
        <ChatColumn title={`checkpoint ${model}`} prompts={prompts} column={columns.ckpt} testId="chat-checkpoint" />
        <ChatColumn title={`base ${baseModel}`} prompts={prompts} column={columns.base} testId="chat-base" />
      </div>
      <form onSubmit={send} className="flex gap-2">
        <textarea
          aria-label="Prompt"
          value={draft}
          onChange={(e) => setDraft(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && !e.shiftKey) send(e);
          }}
          rows={2}
          placeholder="Say the word apple."
          className="flex-1 resize-y rounded border border-zinc-700 bg-zinc-900 px-2 py-1.5 text-zinc-100"
        />
        <Button type="submit" variant="primary" disabled={pending || !draft.trim()}>
          {pending ? "Answering…" : "Send"}
        </Button>
      </form>
    </section>
  );
}

function ChatColumn({ title, prompts, column, testId }: { title: string; prompts: string[]; column: Column; testId: string }) {
  return (
    <div className="flex min-h-40 flex-col rounded border border-zinc-800" data-testid={testId}>
      <div className="truncate border-b border-zinc-800 px-2 py-1 font-mono text-[12px] text-zinc-400">{title}</div>
      <div className="flex-1 space-y-2 p-2">
        {prompts.length === 0 && <div className="text-[12px] text-zinc-600">No messages yet.</div>}
        {prompts.map((p, i) => {
          const r = column.replies[i];
          return (
            <div key={i} className="space-y-1">
              <div className="rounded bg-zinc-900 px-2 py-1 break-words whitespace-pre-wrap text-zinc-300">{p}</div>
              {r ? (
                r.error ? (
                  <div className="text-[12px] break-words text-red-300">{r.error}</div>
                ) : (
                  <div className="px-2 break-words whitespace-pre-wrap text-zinc-100">
                    {r.content || <span className="text-zinc-600">(empty reply)</span>}
                    {r.ms !== null && <span className="ml-2 text-[11px] text-zinc-600">{(r.ms / 1000).toFixed(1)} s</span>}
                  </div>
                )
              ) : (
                column.pending && i === prompts.length - 1 && <Spinner label="Thinking…" />
              )}
            </div>
          );
        })}
      </div>
    </div>
  );
}

/** The OpenAI SDK call that serves this checkpoint, and how to load the download with PEFT. */
function UseFromCode({ model, runId, step, runNumber, baseModel }: { model: string; runId: string; step: number; runNumber: number; baseModel: string }) {
  // The panel only ever renders in the browser (it opens on a click), so the page's own address is known.
  const origin = typeof window === "undefined" ? "" : window.location.origin;
  // The bundled default is published on the Hugging Face hub under this id.
  const hubBase = baseModel === "SmolLM2-135M-Instruct" ? "HuggingFaceTB/SmolLM2-135M-Instruct" : baseModel;
  const python = `from openai import OpenAI

# An API token of this workspace: Settings → API tokens
client = OpenAI(base_url="${origin}/api/v1", api_key="rbk_…")
reply = client.chat.completions.create(
    model="${model}",
    messages=[{"role": "user", "content": "Say the word apple."}],
)
print(reply.choices[0].message.content)`;
  const typescript = `import OpenAI from "openai";

const client = new OpenAI({ baseURL: "${origin}/api/v1", apiKey: process.env.ROLLBOOK_TOKEN });
const reply = await client.chat.completions.create({
  model: "${model}",
  messages: [{ role: "user", content: "Say the word apple." }],
});
console.log(reply.choices[0].message.content);`;
  const peft = `# tar xzf run-${runNumber}-step-${step}-adapter.tar.gz
from peft import PeftModel
from transformers import AutoModelForCausalLM

base = AutoModelForCausalLM.from_pretrained("${hubBase}")  # the run's base model
model = PeftModel.from_pretrained(base, "${runId}-step${step}")`;
  return (
    <section className="space-y-2">
      <h3 className="font-medium text-zinc-200">Use from code</h3>
      <p className="text-[12px] text-zinc-500">
        Any OpenAI client works: <span className="font-mono">{origin}/api/v1</span>, model <span className="font-mono">{model}</span>{" "}
        (<span className="font-mono">GET /api/v1/models</span> lists every checkpoint of the workspace). Create a token under{" "}
        <a href="/settings" className="text-amber-300 hover:underline">
          Settings
        </a>
        .
      </p>
      <CodeBlock label="Python" code={python} />
      <CodeBlock label="TypeScript" code={typescript} />
      <CodeBlock label="The download, with PEFT" code={peft} />
    </section>
  );
}

function CodeBlock({ label, code }: { label: string; code: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <div className="rounded border border-zinc-800">
      <div className="flex items-center border-b border-zinc-800 px-2 py-1 text-[11px] text-zinc-500">
        {label}
        <Button
          variant="ghost"
          className="ml-auto"
          onClick={() => void navigator.clipboard?.writeText(code).then(() => (setCopied(true), setTimeout(() => setCopied(false), 1_500)))}
        >
          {copied ? "Copied" : "Copy"}
        </Button>
      </div>
      <pre className="overflow-x-auto p-2 font-mono text-[12px] text-zinc-200">{code}</pre>
    </div>
  );
}
