// Tic-tac-toe rules and the scripted opponent. Cells are numbered 1–9, left to right, top to bottom.
export type Cell = "X" | "O" | null;
export type Board = Cell[];

const LINES = [
  [0, 1, 2], [3, 4, 5], [6, 7, 8], // rows
  [0, 3, 6], [1, 4, 7], [2, 5, 8], // columns
  [0, 4, 8], [2, 4, 6], // diagonals
];

export const emptyBoard = (): Board => Array<Cell>(9).fill(null);

export function winner(board: Board): "X" | "O" | null {
  for (const [a, b, c] of LINES) {
    const v = board[a!];
    if (v && v === board[b!] && v === board[c!]) return v;
  }
  return null;
}

export const isFull = (board: Board) => board.every((c) => c !== null);
export const freeCells = (board: Board) => board.flatMap((c, i) => (c === null ? [i + 1] : []));

/** The board as the model sees it: free cells show their number. */
export function render(board: Board): string {
  const row = (r: number) => [0, 1, 2].map((c) => ` ${board[r * 3 + c] ?? r * 3 + c + 1} `).join("|");
  return [row(0), "---+---+---", row(1), "---+---+---", row(2)].join("\n");
}

/** A small deterministic PRNG, so a task's seed fixes the opponent's play. */
export function rng(seed: number): () => number {
  let t = seed >>> 0;
  return () => {
    t = (t + 0x6d2b79f5) >>> 0;
    let r = Math.imul(t ^ (t >>> 15), t | 1);
    r ^= r + Math.imul(r ^ (r >>> 7), r | 61);
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

/** The opponent (O): completes its own line when it can, otherwise plays a random free cell. */
export function opponentMove(board: Board, random: () => number): number {
  const free = freeCells(board);
  for (const cell of free) {
    const next = [...board];
    next[cell - 1] = "O";
    if (winner(next) === "O") return cell;
  }
  return free[Math.floor(random() * free.length)]!;
}

/** The first cell number 1–9 in the model's reply, or null when it named none. */
export function parseMove(reply: string): number | null {
  const m = /[1-9]/.exec(reply);
  return m ? Number(m[0]) : null;
}
