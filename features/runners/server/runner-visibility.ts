/**
 * Who may see a runner as it is: its address, its engine's health (memory, restart reasons quoting the
 * engine's output), its error texts (they name the address), the paths of the checkpoints on its disk, and its
 * engine queue (every workspace's model calls). Everyone else sees its name, health word, device, models,
 * capacity and notices, and only their own workspace's runs on it (docs/security.md, "Workspaces and roles").
 *
 * Notices (RunnerNotice, e.g. slow_sampling: a GPU sampling without vLLM) go to every member, not only to
 * those who see the details: they are fixed advice the runner writes from two words of its engine's health
 * (backend, device), with no address, secret, memory figure or other workspace's data in them; and a member
 * whose rollouts crawl is the one who wonders why, and can ask the operator with the fix in hand.
 *
 *   the instance's operator (features/workspace/server/operator.ts)   every runner
 *   a workspace's admins and owner                                    the runners that workspace registered
 *
 * An instance runner (workspaceId null: RUNNER_URL, or registered without a workspace) is the operator's
 * machine even to the admins of the workspaces it serves. A run with no runner (an ART client's, a queued one)
 * shows its paths to the operator only.
 */
import { roleAtLeast, type Role } from "@contracts/roles";

export interface RunnerViewer {
  workspaceId: string;
  role: Role;
  operator: boolean;
}

export function seesRunnerDetails(runner: { workspaceId: string | null } | null, viewer: RunnerViewer): boolean {
  if (viewer.operator) return true;
  return runner !== null && runner.workspaceId !== null && runner.workspaceId === viewer.workspaceId && roleAtLeast(viewer.role, "admin");
}
