/**
 * The list of files beside a diff (the compare page's code tab, the version history): one button a file,
 * marked M (changed), A (only on the right) or D (only on the left), the shown file highlighted.
 */
import { diffFileRows, type DiffFile, type FileState } from "./diff-files";

export function DiffFileList({
  files,
  active,
  titles,
  onPick,
  testId,
  widthClassName,
}: {
  files: readonly DiffFile[];
  active: string;
  /** Each state's tooltip, naming the sides as the caller does ("only in the right run", "only in v3"). */
  titles: Record<FileState, string>;
  onPick: (path: string) => void;
  testId: string;
  /** The list's width (a Tailwind class): each caller sizes it to its panel. */
  widthClassName: string;
}) {
  return (
    <ul className={`${widthClassName} shrink-0 overflow-y-auto border-r border-zinc-800 bg-zinc-900/60 py-1`} aria-label="Files" data-testid={testId}>
      {diffFileRows(files, active, titles).map((f) => (
        <li key={f.path}>
          <button type="button" onClick={() => onPick(f.path)} aria-current={f.current ? "true" : undefined} title={f.title} className={f.buttonClassName}>
            <span className={f.markClassName} aria-label={f.title}>
              {f.sign}
            </span>
            <span className="truncate">{f.path}</span>
          </button>
        </li>
      ))}
    </ul>
  );
}
