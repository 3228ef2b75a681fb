/** Finding a command the way a shell would, without a shell: an executable file by path or in a list of folders. */
import fs from "node:fs";
import path from "node:path";

function executable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Absolute path of `command`: as a path (relative to cwd) when it has a slash, else the first hit in `dirs`. */
export function findExecutable(command: string, dirs: readonly string[], cwd: string): string | null {
  if (command.includes("/")) {
    const file = path.resolve(cwd, command);
    return executable(file) ? file : null;
  }
  for (const dir of dirs) {
    if (!dir) continue;
    const file = path.join(dir, command);
    if (executable(file)) return file;
  }
  return null;
}
