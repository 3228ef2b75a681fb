/**
 * The last lines a stdio server wrote to stderr. Servers log freely there (and must, since stdout is the
 * protocol); keeping a bounded tail lets a failure say *why* ("Error: missing API key") without letting a
 * chatty server grow the runner's memory.
 */
export class StderrTail {
  private readonly kept: string[] = [];
  private partial = "";

  constructor(
    private readonly maxLines = 20,
    private readonly maxLineChars = 500,
  ) {}

  push(chunk: Buffer | string): void {
    const text = this.partial + chunk.toString();
    const lines = text.split(/\r?\n/);
    // The last piece has no newline yet; keep (a bounded amount of) it for the next chunk.
    this.partial = (lines.pop() ?? "").slice(-this.maxLineChars * 2);
    for (const line of lines) this.add(line);
  }

  /** Kept lines, the unterminated last one included. */
  lines(): string[] {
    const lines = this.partial.trim() ? [...this.kept, this.cut(this.partial)] : [...this.kept];
    return lines.slice(-this.maxLines);
  }

  /** ` — stderr: a | b` for a failure message, or "" when the server said nothing. */
  note(last = 5): string {
    const lines = this.lines().slice(-last);
    return lines.length ? ` — last stderr: ${lines.join(" | ")}` : "";
  }

  private add(line: string): void {
    if (!line.trim()) return;
    this.kept.push(this.cut(line));
    if (this.kept.length > this.maxLines) this.kept.shift();
  }

  private cut(line: string): string {
    return line.length > this.maxLineChars ? `${line.slice(0, this.maxLineChars)}…` : line;
  }
}
