import { describe, expect, it } from "vitest";
import { dirtyPaths, editFile, loadVersion, mapFiles, markSaved, reconcileDoc, sameFiles, type Doc } from "./document-state";
import { checkNotice, errorText, importedNotice, isConflict, refusedNotice, restoredNotice } from "./editor-notices";

const files = { "scenario.ts": "s", "reward.ts": "r", "tasks.jsonl": "{}", "config.json": "{}" };
const doc: Doc = { experimentId: "e1", loadKey: "v1id", files, saved: files, versionNumber: 1 };

describe("the editor's document", () => {
  it("adopts the server's files on first load and on another experiment, never on a refetch", () => {
    const server = { id: "e1", version: { id: "v1id", number: 1, files } };
    expect(reconcileDoc(null, undefined)).toBeNull();
    expect(reconcileDoc(null, server)).toEqual(doc);
    const edited = editFile(doc, "reward.ts", "r2")!;
    expect(reconcileDoc(edited, server)).toBe(edited);
    expect(reconcileDoc(edited, { id: "e2", version: { id: "x", number: 4, files } })).toEqual({ ...doc, experimentId: "e2", loadKey: "x", versionNumber: 4 });
  });

  it("picks up a run start's version number only when the server's files are the saved ones", () => {
    expect(reconcileDoc(doc, { id: "e1", version: { id: "v2id", number: 2, files: { ...files } } })).toEqual({ ...doc, versionNumber: 2 });
    const other = { id: "e1", version: { id: "v2id", number: 2, files: { ...files, "reward.ts": "theirs" } } };
    expect(reconcileDoc(doc, other)).toBe(doc);
  });

  it("keeps the same object when an edit changes nothing", () => {
    expect(editFile(doc, "scenario.ts", "s")).toBe(doc);
    expect(editFile(null, "scenario.ts", "x")).toBeNull();
    expect(mapFiles(null, (f) => f)).toBeNull();
    expect(markSaved(null, files, 2)).toBeNull();
  });

  it("marks edited, added and deleted files dirty until saved", () => {
    let d = editFile(doc, "reward.ts", "r2");
    d = mapFiles(d, (f) => ({ ...f, "lib/x.ts": "" }));
    d = mapFiles(d, ({ "tasks.jsonl": _gone, ...rest }) => rest as Doc["files"]);
    expect([...dirtyPaths(d)]).toEqual(["reward.ts", "tasks.jsonl", "lib/x.ts"]);
    expect(dirtyPaths(markSaved(d, d!.files, 2)).size).toBe(0);
    expect(dirtyPaths(null).size).toBe(0);
  });

  it("loads a version as both the text and the baseline", () => {
    const v = { id: "v3id", number: 3, files: { ...files, "reward.ts": "v3" } };
    expect(loadVersion(editFile(doc, "scenario.ts", "mine"), v)).toEqual({ experimentId: "e1", loadKey: "v3id", files: v.files, saved: v.files, versionNumber: 3 });
  });

  it("compares file sets by content", () => {
    expect(sameFiles(files, { ...files })).toBe(true);
    expect(sameFiles(files, { ...files, "lib/x.ts": "" })).toBe(false);
  });
});

describe("the editor's notices", () => {
  it("reads conflicts and input issues from tRPC errors", () => {
    expect(isConflict({ data: { code: "CONFLICT" } })).toBe(true);
    expect(isConflict({ data: null })).toBe(false);
    expect(errorText({ message: "bad input", data: { issues: ["files.lib/x.ts: empty", "kind: invalid"] } })).toBe("files.lib/x.ts: empty; kind: invalid");
    expect(errorText({ message: "bad input", data: { issues: [] } })).toBe("bad input");
  });

  it("words a Check's answer and a refused start", () => {
    expect(checkNotice(0)).toEqual({ tone: "ok", message: "Check passed: the runner accepts these files." });
    expect(checkNotice(1).message).toBe("Check found 1 problem (click one to jump to it).");
    expect(checkNotice(3).message).toBe("Check found 3 problems (click one to jump to it).");
    expect(refusedNotice({ diagnostics: [{}, {}], error: "x" })).toEqual({
      tone: "error",
      message: "Run refused: 2 problems to fix (click one to jump to it).",
      runId: undefined,
    });
    expect(refusedNotice({ diagnostics: [], error: "no runner", runId: "r1" })).toEqual({ tone: "error", message: "Run refused: no runner", runId: "r1" });
  });

  it("words an import and a restore", () => {
    expect(importedNotice({ text: "", fileName: "t.csv", rows: 1200, train: 1000, val: 200 }).message).toBe(
      "Imported 1,200 tasks (1,000 train, 200 validation) from t.csv into tasks.jsonl: not saved yet; Ctrl/⌘+Z in the editor undoes it.",
    );
    expect(restoredNotice(7)).toEqual({ tone: "ok", message: "Restored: version 7 holds the restored files." });
  });
});
