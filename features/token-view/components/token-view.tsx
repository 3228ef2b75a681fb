"use client";
/**
 * One rollout's tokens, inline: which ones the step trained on, how likely the sampler found each, how likely
 * the trainer found it under the policy the step started from, and their ratio (the inference–training
 * mismatch). Data: runs.rolloutTokens (the run's runner joins tokens.jsonl, train-logprobs.jsonl and the
 * engine's decoded texts). Every token is a React text node, never HTML. Whitespace is drawn as marks (·
 * space, → tab, ␍ CR, ↵ newline followed by a line break) so it can be seen and counted; the details line
 * shows a token's exact text JSON-escaped. A sampled token that was its tool format's scaffolding (a call's
 * markers and envelope, the end of turn; the engine decides, from the call it parsed) has a dashed outline and
 * muted text, and "Content only" hides those; runs recorded before roles show every token alike.
 */
import { useQuery } from "@tanstack/react-query";
import { Fragment, useMemo, useState } from "react";
import { SIGNALS, trainedAdvantageLabel, type RolloutToken, type RolloutTokens } from "@contracts";
import { fmtInt, fmtNum, fmtSigned } from "@/components/ui/format";
import { ErrorBox, Spinner } from "@/components/ui/primitives";
import { useTRPC } from "@/components/trpc";
import { HEAT_FLOOR_LOGPROB, TRAINED_COLOURS, heatColour, ratioColour, shown, summarise, textParts, tokenStyle, type ColourMode } from "./token-scales";

const MODES: { id: ColourMode; label: string; title: string }[] = [
  { id: "trained", label: "Trained on", title: "trained / sampled but not trained / prompt" },
  { id: "sampling", label: "Sampling logprob", title: "how likely the sampler found each sampled token" },
  { id: "trainer", label: "Trainer logprob", title: "how likely the trainer found each trained token (policy before the update)" },
  { id: "ratio", label: "Ratio", title: "exp(trainer − sampling): 1 = no mismatch" },
];

/** |log ratio| thresholds offered; 0.2 is PPO's usual clip ε. */
const THRESHOLDS = [0.01, 0.05, 0.1, 0.2, 0.5] as const;

export function TokenView({ runId, rolloutId }: { runId: string; rolloutId: string }) {
  const trpc = useTRPC();
  const query = useQuery({ ...trpc.runs.rolloutTokens.queryOptions({ runId, rolloutId }), retry: false, staleTime: 60_000 });
  if (query.isPending) return <Spinner label="Loading tokens" />;
  if (query.isError) {
    return (
      <div data-testid="token-view-error">
        <ErrorBox title="Tokens unavailable">{query.error.message}</ErrorBox>
      </div>
    );
  }
  return <TokenViewBody data={query.data} />;
}

/** The view over data already fetched (also what a test or a story renders). */
export function TokenViewBody({ data }: { data: RolloutTokens }) {
  const [mode, setMode] = useState<ColourMode>("trained");
  const [threshold, setThreshold] = useState<number>(0.2);
  const [active, setActive] = useState<{ seq: number; index: number } | null>(null);
  const [contentOnly, setContentOnly] = useState(false);
  const all = useMemo(() => data.sequences.flatMap((s) => s.tokens), [data]);
  const summary = useMemo(() => summarise(all, threshold), [all, threshold]);
  const activeToken = active ? data.sequences[active.seq]?.tokens[active.index] : undefined;

  return (
    <div data-testid="token-view" className="rounded border border-zinc-800 bg-zinc-950/60 p-2">
      <TrainingStatus training={data.training} />
      <div className="mt-2 flex flex-wrap items-center gap-1" role="radiogroup" aria-label="Colour tokens by">
        {MODES.map((m) => (
          <button
            key={m.id}
            type="button"
            role="radio"
            aria-checked={mode === m.id}
            title={m.title}
            data-testid={`token-mode-${m.id}`}
            onClick={() => setMode(m.id)}
            className={`rounded px-2 py-0.5 text-[12px] ring-1 ring-inset ${
              mode === m.id ? "bg-zinc-800 text-zinc-100 ring-zinc-600" : "text-zinc-400 ring-zinc-800 hover:text-zinc-200"
            }`}
          >
            {m.label}
          </button>
        ))}
        {mode === "ratio" && (
          <label className="ml-2 flex items-center gap-1 text-[12px] text-zinc-400">
            outline |log ratio| &gt;
            <select
              data-testid="token-threshold"
              value={threshold}
              onChange={(e) => setThreshold(Number(e.target.value))}
              className="rounded bg-zinc-900 px-1 text-zinc-200 ring-1 ring-zinc-700"
            >
              {THRESHOLDS.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
          </label>
        )}
        {summary.scaffolding !== null && (
          <label className="ml-auto flex items-center gap-1 text-[12px] text-zinc-400" title="hide the sampled tokens that were tool-call scaffolding or an end of turn">
            <input type="checkbox" data-testid="token-content-only" checked={contentOnly} onChange={(e) => setContentOnly(e.target.checked)} />
            Content only
          </label>
        )}
      </div>
      <Legend mode={mode} threshold={threshold} roles={summary.scaffolding !== null} />
      <Summary summary={summary} threshold={threshold} />

      <div className="relative mt-2 space-y-2">
        {data.sequences.map((seq, q) => (
          <div key={q}>
            {data.sequences.length > 1 && <div className="mb-0.5 text-[10px] tracking-wide text-zinc-600 uppercase">sequence {q + 1}</div>}
            {seq.retokenized && (
              <div data-testid="token-sequence-retokenized" className="mb-0.5 text-[11px] text-amber-400">
                Re-tokenised through the chat template: these replies were sampled without their token ids, so the tokens may differ from
                what was sampled, and there are no sampling logprobs (the trainer used the policy&apos;s own).
              </div>
            )}
            <div data-testid="token-sequence" className="font-mono text-[12px] leading-[1.9] break-all whitespace-normal text-zinc-200">
              {seq.tokens.map((t, i) =>
                shown(t, contentOnly) ? (
                  <TokenSpan
                    key={i}
                    token={t}
                    mode={mode}
                    threshold={threshold}
                    active={active?.seq === q && active.index === i}
                    onActivate={() => setActive({ seq: q, index: i })}
                    onDeactivate={() => setActive((a) => (a?.seq === q && a.index === i ? null : a))}
                  />
                ) : null,
              )}
            </div>
          </div>
        ))}
      </div>
      <TokenDetails token={activeToken} />
    </div>
  );
}

function TrainingStatus({ training }: { training: RolloutTokens["training"] }) {
  // The same two labelled numbers as the rollout panel (contracts/signals.ts).
  const raw = training.raw_advantage != null ? ` · ${SIGNALS.advantage.label} ${fmtSigned(training.raw_advantage)}` : "";
  const trainedLabel = trainedAdvantageLabel(training.scale_rewards ?? true);
  const text =
    training.status === "trained"
      ? `Trained at step ${training.step} with ${trainedLabel} ${fmtSigned(training.advantage)}${raw}.`
      : training.status === "not_trained"
        ? `Submitted to step ${training.step} but not trained: ${trainedLabel} 0 (its group's rewards were all equal, or its reward was the group mean)${raw}.`
        : "No training record: an eval or dry-run rollout, a failed one, a group with fewer than 2 valid rollouts, a step still training, or a run from before trainer logprobs were recorded.";
  return (
    <div data-testid="token-training-status" data-status={training.status} className="text-[12px] text-zinc-400">
      {text}
    </div>
  );
}

function TokenSpan({
  token,
  mode,
  threshold,
  active,
  onActivate,
  onDeactivate,
}: {
  token: RolloutToken;
  mode: ColourMode;
  threshold: number;
  active: boolean;
  onActivate: () => void;
  onDeactivate: () => void;
}) {
  const style = tokenStyle(token, mode, threshold);
  const scaffolding = token.role === "scaffolding";
  return (
    <span
      data-testid="token"
      data-trained={token.trained}
      data-sampled={token.sampled}
      data-flagged={style.flagged}
      data-role={token.role ?? undefined}
      tabIndex={0}
      aria-label={`token ${token.id}: ${JSON.stringify(token.text)}, ${style.label}${scaffolding ? ", scaffolding" : ""}`}
      onMouseEnter={onActivate}
      onMouseLeave={onDeactivate}
      onFocus={onActivate}
      onBlur={onDeactivate}
      style={{ backgroundColor: style.background }}
      className={`rounded-[2px] ${scaffolding ? SCAFFOLDING_CLASS : "outline-none"} ${token.sampled && !scaffolding ? "" : "text-zinc-500"} ${
        style.flagged ? "ring-2 ring-fuchsia-400 ring-inset" : ""
      } ${active ? "shadow-[0_0_0_1px_rgba(250,250,250,0.8)]" : "shadow-[inset_-1px_0_0_rgba(113,113,122,0.35)]"}`}
    >
      <TokenText text={token.text} />
    </span>
  );
}

/** The token's characters, each whitespace character drawn as its mark (a newline also breaks the line). */
function TokenText({ text }: { text: string }) {
  if (text === "") return <span className="text-zinc-600">∅</span>;
  return (
    <>
      {textParts(text).map((p, i) =>
        p.kind === "text" ? (
          <Fragment key={i}>{p.text}</Fragment>
        ) : p.kind === "newline" ? (
          <Fragment key={i}>
            <span className="text-zinc-600 select-none" aria-hidden>
              ↵
            </span>
            <br />
          </Fragment>
        ) : (
          <span key={i} className="text-zinc-600" title={p.kind}>
            {p.kind === "space" ? "·" : p.kind === "tab" ? "→" : "␍"}
          </span>
        ),
      )}
    </>
  );
}

/** A dashed outline inside the token's box (so it does not shift the text), muted like the prompt's text. */
const SCAFFOLDING_CLASS = "outline-1 outline-dashed -outline-offset-1 outline-zinc-500";

function TokenDetails({ token }: { token: RolloutToken | undefined }) {
  return (
    <div data-testid="token-tooltip" role="status" aria-live="polite" className="sticky bottom-0 mt-2 min-h-[2.25rem] rounded bg-zinc-900/95 px-2 py-1 font-mono text-[11px] text-zinc-300 ring-1 ring-zinc-800">
      {token ? (
        <div className="flex flex-wrap gap-x-4 gap-y-0.5">
          <span>id {token.id}</span>
          <span>
            text <span className="text-zinc-100">{JSON.stringify(token.text)}</span>
          </span>
          <span>{token.trained ? "trained" : token.sampled ? "sampled, not trained" : "prompt"}</span>
          {token.role && <span data-testid="token-detail-role">{token.role}</span>}
          <span>sampling {fmtLp(token.sampling_logprob)}</span>
          <span>trainer {fmtLp(token.trainer_logprob)}</span>
          <span>ratio {token.ratio === null ? "—" : token.ratio.toFixed(4)}</span>
        </div>
      ) : (
        <span className="text-zinc-600">Hover or focus a token for its id, text, logprobs and ratio.</span>
      )}
    </div>
  );
}

function fmtLp(lp: number | null): string {
  if (lp === null) return "—";
  return `${lp.toFixed(4)} (p ${Math.exp(lp).toFixed(3)})`;
}

function Summary({ summary, threshold }: { summary: ReturnType<typeof summarise>; threshold: number }) {
  return (
    <div data-testid="token-summary" className="mt-2 flex flex-wrap gap-x-4 gap-y-0.5 text-[11px] text-zinc-400">
      <span>
        {fmtInt(summary.tokens)} tokens · {fmtInt(summary.sampled)} sampled · <span data-testid="token-summary-trained">{fmtInt(summary.trained)}</span> trained
      </span>
      <span title="mean over trained tokens of |trainer − sampling logprob|">
        mean |log ratio| <span data-testid="token-summary-mean">{summary.meanAbsLogRatio === null ? "—" : summary.meanAbsLogRatio.toExponential(2)}</span>
      </span>
      <span>
        ratio {fmtNum(summary.minRatio, 4)} … <span data-testid="token-summary-max">{fmtNum(summary.maxRatio, 4)}</span>
      </span>
      <span title={`trained tokens with |log ratio| > ${threshold}`}>
        {fmtInt(summary.flagged)} over {threshold}
      </span>
      {summary.scaffolding !== null && (
        <span title="sampled tokens that were the tool format's markers and call envelope, or an end of turn">
          <span data-testid="token-summary-scaffolding">{fmtInt(summary.scaffolding)}</span> scaffolding
        </span>
      )}
      <span title="Pearson correlation of sampling vs trainer probabilities over this rollout's trained tokens (the run-level probs_corr, for one rollout)">
        correlation <span data-testid="token-summary-corr">{fmtNum(summary.correlation, 4)}</span>
      </span>
    </div>
  );
}

function Legend({ mode, threshold, roles }: { mode: ColourMode; threshold: number; roles: boolean }) {
  const swatch = (colour: string | undefined, label: string, extra = "") => (
    <span className="flex items-center gap-1">
      <span className={`inline-block h-3 w-4 rounded-[2px] ring-1 ring-zinc-700 ring-inset ${extra}`} style={{ backgroundColor: colour }} />
      {label}
    </span>
  );
  return (
    <div data-testid="token-legend" className="mt-1.5 flex flex-wrap items-center gap-3 text-[11px] text-zinc-500">
      {mode === "trained" && (
        <>
          {swatch(TRAINED_COLOURS.trained, "trained")}
          {swatch(TRAINED_COLOURS.sampled, "sampled, not trained")}
          {swatch(TRAINED_COLOURS.prompt, "prompt / template / tool output")}
        </>
      )}
      {(mode === "sampling" || mode === "trainer") && (
        <>
          {swatch(heatColour(0), "p ≈ 1")}
          {swatch(heatColour(Math.log(0.1)), "p = 0.1")}
          {swatch(heatColour(Math.log(0.01)), "p = 0.01")}
          {swatch(heatColour(HEAT_FLOOR_LOGPROB), `logprob ≤ ${HEAT_FLOOR_LOGPROB}`)}
          <span>uncoloured: {mode === "sampling" ? "not sampled" : "not trained"}</span>
        </>
      )}
      {mode === "ratio" && (
        <>
          {swatch(ratioColour(Math.exp(-2 * threshold), threshold), `≤ ${Math.exp(-2 * threshold).toFixed(3)} (trainer less sure)`)}
          {swatch(undefined, "1")}
          {swatch(ratioColour(Math.exp(2 * threshold), threshold), `≥ ${Math.exp(2 * threshold).toFixed(3)} (trainer surer)`)}
          {swatch(undefined, `|log ratio| > ${threshold}`, "ring-2 ring-fuchsia-400")}
        </>
      )}
      {roles && (
        <span data-testid="token-legend-scaffolding" className="flex items-center gap-1">
          <span className={`inline-block h-3 w-4 rounded-[2px] ${SCAFFOLDING_CLASS}`} />
          scaffolding: tool-call markers and envelope, end of turn (the rest of what was sampled is content)
        </span>
      )}
    </div>
  );
}

/** The transcript's "Tokens" section: folded until asked for, so opening a rollout does not fetch its tokens. */
export function TokensToggle({ runId, rolloutId }: { runId: string; rolloutId: string }) {
  const [open, setOpen] = useState(false);
  return (
    <section className="mt-4" data-testid="tokens-section">
      <button
        type="button"
        aria-expanded={open}
        data-testid="tokens-toggle"
        onClick={() => setOpen((o) => !o)}
        className="mb-1.5 text-[11px] tracking-wide text-zinc-500 uppercase hover:text-zinc-300"
      >
        {open ? "▾" : "▸"} Tokens (trained on, logprobs, ratio)
      </button>
      {open && <TokenView key={rolloutId} runId={runId} rolloutId={rolloutId} />}
    </section>
  );
}
