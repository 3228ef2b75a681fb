/**
 * Masking secret values in text before it is stored or shown: every occurrence of a workspace secret's value,
 * as written and as JSON escapes it, becomes `[secret NAME]`. The runner masks each run's event lines and
 * log lines with the run's secrets (what a server echoed, an error quoting a header); the web server masks
 * what it relays from the runner that did not pass through the event log (the token view's text). Written
 * once here for both.
 *
 * Hand-written: the job is a literal search-and-replace over a few strings, which no library does better.
 */

/** Shorter values would mask ordinary words; the web server refuses to store secrets shorter than this. */
export const MIN_SECRET_CHARS = 8;

export class SecretMask {
  private readonly needles: { text: string; label: string }[] = [];

  constructor(secrets: Readonly<Record<string, string>>) {
    for (const [name, value] of Object.entries(secrets)) {
      if (value.length < 4) continue; // too short to tell from text; the web never stores such a secret
      const label = `[secret ${name}]`;
      this.needles.push({ text: value, label });
      const escaped = JSON.stringify(value).slice(1, -1);
      if (escaped !== value) this.needles.push({ text: escaped, label });
    }
    // Longest first: a secret that contains another is masked whole.
    this.needles.sort((a, b) => b.text.length - a.text.length);
  }

  get empty(): boolean {
    return this.needles.length === 0;
  }

  mask(text: string): string {
    let out = text;
    for (const n of this.needles) if (out.includes(n.text)) out = out.split(n.text).join(n.label);
    return out;
  }
}

export const NO_MASK = new SecretMask({});
