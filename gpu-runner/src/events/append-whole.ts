/**
 * Appends text to a side log (tokens.jsonl, train-logprobs.jsonl) whole or not at all: on a short or failed
 * write (a full disk) the file is cut back to where the text began, so a reader never finds half a line.
 */
import fs from "node:fs";
import path from "node:path";
import { LogWriteError } from "./write-failure";

export function appendWhole(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const bytes = Buffer.from(text);
  const fd = fs.openSync(file, "a");
  try {
    const start = fs.fstatSync(fd).size;
    let written = 0;
    try {
      while (written < bytes.length) {
        const n = fs.writeSync(fd, bytes, written, bytes.length - written);
        if (n <= 0) throw Object.assign(new Error("write(2) wrote nothing"), { code: "EIO" });
        written += n;
      }
    } catch (err) {
      try {
        fs.ftruncateSync(fd, start);
      } catch {
        // Left as it is: readers of side logs skip a line that does not parse.
      }
      throw new LogWriteError(file, err, written, bytes.length);
    }
  } finally {
    fs.closeSync(fd);
  }
}
