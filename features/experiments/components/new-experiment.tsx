"use client";
/**
 * New experiment: a name (required, unique in the workspace), an optional description, and what to start
 * from — a template from templates/ or the blank experiment. Creates it and opens it in the editor.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useState, type FormEvent } from "react";
import { useTRPC } from "@/components/trpc";
import { usePermission } from "@/components/auth/use-role";
import { Button, ErrorBox, Spinner } from "@/components/ui/primitives";

const BLANK = "";

/** `base`, or `base-2`, `base-3`, … whichever is not taken yet. */
function freeName(base: string, taken: ReadonlySet<string>): string {
  if (!taken.has(base)) return base;
  for (let i = 2; ; i++) if (!taken.has(`${base}-${i}`)) return `${base}-${i}`;
}

function TemplateCard({
  value,
  title,
  description,
  paths,
  checked,
  onSelect,
}: {
  value: string;
  title: string;
  description: string;
  paths: readonly string[];
  checked: boolean;
  onSelect: (value: string) => void;
}) {
  return (
    <label
      data-testid="template"
      data-template={value || "blank"}
      className={`flex cursor-pointer flex-col gap-1.5 rounded border p-3 ${
        checked ? "border-amber-400/70 bg-amber-400/10" : "border-zinc-800 bg-zinc-900/40 hover:border-zinc-600"
      }`}
    >
      <span className="flex items-center gap-2">
        <input type="radio" name="template" value={value} checked={checked} onChange={() => onSelect(value)} className="accent-amber-400" />
        <span className="font-medium text-zinc-100">{title}</span>
      </span>
      <span className="text-[12px] leading-snug text-zinc-400">{description}</span>
      {paths.length > 0 && (
        <span className="mt-auto flex flex-wrap gap-1 pt-1">
          {paths.map((p) => (
            <span key={p} className="rounded bg-zinc-800/80 px-1 font-mono text-[10px] text-zinc-400">
              {p}
            </span>
          ))}
        </span>
      )}
    </label>
  );
}

export function NewExperiment({ initialTemplate }: { initialTemplate?: string }) {
  const trpc = useTRPC();
  const router = useRouter();
  const queryClient = useQueryClient();
  const templates = useQuery(trpc.templates.list.queryOptions());
  // Archived experiments keep their names too.
  const existing = useQuery(trpc.experiments.list.queryOptions({ includeArchived: true }));
  const [template, setTemplate] = useState<string | null>(initialTemplate ?? null);
  const [name, setName] = useState("");
  const [nameTouched, setNameTouched] = useState(false);
  const [description, setDescription] = useState("");
  // A viewer may look at the templates, not create from one (contracts/actions.ts).
  const permission = usePermission("experiment.create");
  const create = useMutation(
    trpc.experiments.createFromTemplate.mutationOptions({
      onSuccess: ({ id }) => {
        void queryClient.invalidateQueries({ queryKey: trpc.experiments.pathKey() });
        router.push(`/experiments/${id}`);
      },
    }),
  );

  // Until chosen, the first template (the default experiment's) is selected.
  const chosen = template ?? templates.data?.[0]?.name ?? BLANK;
  const taken = new Set(existing.data?.map((e) => e.name) ?? []);
  // The name follows the template until the user types one.
  const shownName = nameTouched ? name : freeName(chosen || "untitled", taken);
  const nameError = shownName.trim() === "" ? "A name is required." : taken.has(shownName.trim()) ? `An experiment named "${shownName.trim()}" already exists.` : null;
  const serverNameError = create.error?.data?.code === "CONFLICT" ? create.error.message : null;

  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (nameError || create.isPending || !permission.allowed) return;
    create.mutate({ name: shownName.trim(), description: description.trim() || undefined, template: chosen === BLANK ? null : chosen });
  };

  return (
    <form onSubmit={submit} className="mx-auto flex w-full max-w-5xl flex-col gap-5 p-6">
      <div className="flex items-baseline justify-between">
        <h1 className="text-lg font-semibold text-zinc-100">New experiment</h1>
        <Link href="/experiments" className="text-[12px] text-zinc-400 hover:text-zinc-200">
          ← all experiments
        </Link>
      </div>

      <div className="grid gap-4 sm:grid-cols-[minmax(0,20rem)_minmax(0,1fr)]">
        <label className="flex flex-col gap-1">
          <span className="text-[12px] text-zinc-400">Name</span>
          <input
            name="name"
            value={shownName}
            onChange={(e) => {
              setNameTouched(true);
              setName(e.target.value);
              create.reset();
            }}
            aria-invalid={nameError !== null || serverNameError !== null}
            aria-describedby="name-error"
            maxLength={120}
            className="rounded border border-zinc-700 bg-zinc-950 px-2 py-1 text-zinc-100 outline-none focus:border-amber-400/70 aria-invalid:border-red-700"
          />
          <span id="name-error" role={nameError || serverNameError ? "alert" : undefined} className="min-h-4 text-[12px] text-red-300">
            {(nameTouched && nameError) || serverNameError}
          </span>
        </label>
        <label className="flex flex-col gap-1">
          <span className="text-[12px] text-zinc-400">Description (optional; the template&apos;s otherwise)</span>
          <input
            name="description"
            value={description}
            onChange={(e) => setDescription(e.target.value)}
            maxLength={2000}
            className="rounded border border-zinc-700 bg-zinc-950 px-2 py-1 text-zinc-100 outline-none focus:border-amber-400/70"
          />
        </label>
      </div>

      <fieldset className="flex flex-col gap-2">
        <legend className="mb-2 text-[12px] text-zinc-400">Start from</legend>
        {templates.error ? (
          <ErrorBox title="Could not list the templates">{templates.error.message}</ErrorBox>
        ) : !templates.data ? (
          <Spinner label="Loading templates…" />
        ) : (
          <div className="grid gap-3 sm:grid-cols-2 lg:grid-cols-3">
            {templates.data.map((t) => (
              <TemplateCard key={t.name} value={t.name} title={t.title} description={t.description} paths={t.paths} checked={chosen === t.name} onSelect={setTemplate} />
            ))}
            <TemplateCard
              value={BLANK}
              title="Blank"
              description="A minimal scenario, reward, three tasks and a small config: the smallest experiment that runs."
              paths={["scenario.ts", "reward.ts", "tasks.jsonl", "config.json"]}
              checked={chosen === BLANK}
              onSelect={setTemplate}
            />
          </div>
        )}
      </fieldset>

      {create.error && !serverNameError && <ErrorBox title="Could not create the experiment">{create.error.message}</ErrorBox>}

      <div className="flex items-center gap-3">
        <Button type="submit" variant="primary" disabled={create.isPending || nameError !== null || !templates.data || !permission.allowed} title={permission.title}>
          {create.isPending ? "Creating…" : "Create and open"}
        </Button>
        <span className="text-[12px] text-zinc-500">Opens in the editor as version 1.</span>
      </div>
    </form>
  );
}
