import type { ChatMessage, RolloutContext } from "rollbook";
import { z } from "zod";
import { emptyBoard, freeCells, isFull, opponentMove, parseMove, render, rng, winner } from "./lib/board";

// A multi-turn game: the model plays X against a scripted opponent (O) that takes a win when it sees one
// and otherwise plays a random cell. Every move is one ctx.chat turn in the same conversation, so the
// model is trained on all of its moves and nothing else (the board updates are masked).
export const taskSchema = z.object({
  /** Fixes the opponent's random play. */
  seed: z.number().int(),
  /** Whether the opponent moves first. */
  opponentFirst: z.boolean(),
});
export type Task = z.infer<typeof taskSchema>;

export interface Game {
  result: "win" | "draw" | "loss" | "illegal";
  moves: number;
  legalMoves: number;
}

const SYSTEM =
  "You are playing tic-tac-toe as X against O. The cells are numbered 1 to 9. " +
  "On your turn, reply with the number of one free cell and nothing else.";

export default async function rollout(ctx: RolloutContext<Task>): Promise<Game> {
  const board = emptyBoard();
  const random = rng(ctx.task.seed);
  if (ctx.task.opponentFirst) board[opponentMove(board, random) - 1] = "O";
  const messages: ChatMessage[] = [{ role: "system", content: SYSTEM }];
  let note = ctx.task.opponentFirst ? "O has played. " : "You play first. ";
  let moves = 0;
  for (;;) {
    messages.push({ role: "user", content: `${note}The board:\n${render(board)}\nYour move (one of ${freeCells(board).join(", ")}):` });
    const reply = await ctx.chat(messages, { max_tokens: 4 });
    messages.push(reply.message);
    moves++;
    const cell = parseMove(reply.content);
    if (cell === null || board[cell - 1] !== null) return { result: "illegal", moves, legalMoves: moves - 1 };
    board[cell - 1] = "X";
    if (winner(board) === "X") return { result: "win", moves, legalMoves: moves };
    if (isFull(board)) return { result: "draw", moves, legalMoves: moves };
    const reply2 = opponentMove(board, random);
    board[reply2 - 1] = "O";
    if (winner(board) === "O") return { result: "loss", moves, legalMoves: moves };
    if (isFull(board)) return { result: "draw", moves, legalMoves: moves };
    note = `O played ${reply2}. `;
  }
}
