/** Every bundled template is a valid experiment: it type-checks, bundles, and its tasks fit its taskSchema. */
import { describe, expect, it } from "vitest";
import { listTemplates, readTemplate } from "@/features/experiments/server";
import { validateExperiment } from "./validate";

const templates = await listTemplates();

describe("bundled templates", () => {
  it("are listed with a title", () => {
    expect(templates.map((t) => t.name)).toContain("say-the-word");
    expect(templates[0]!.name).toBe("say-the-word");
    for (const t of templates) expect(t.title.length).toBeGreaterThan(0);
  });

  it.each(templates.map((t) => t.name))("%s validates for a train run", async (name) => {
    const r = await validateExperiment(await readTemplate(name), "train");
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics, null, 2));
    expect(r.tasks.val.length).toBeGreaterThan(0);
  });
});
