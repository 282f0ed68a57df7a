/**
 * Effects counted from the files themselves — never from settle's records: each line of edits.txt
 * (above END) and shell.log is one effect that happened, named by its uid.
 */
import fs from 'node:fs';
import path from 'node:path';
import { EDITS_FILE, SHELL_LOG, type TrajectoryPlan } from './workload';

/** uid → how many times its effect is in the files. */
export function countEffects(plans: TrajectoryPlan[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const plan of plans) {
    for (const line of [...linesOf(path.join(plan.workspace, EDITS_FILE)), ...linesOf(path.join(plan.workspace, SHELL_LOG))]) {
      if (line === 'END' || line === '') continue;
      counts.set(line, (counts.get(line) ?? 0) + 1);
    }
  }
  return counts;
}

/** Whether the effect of `uid` is in its trajectory's files (the SRE's facts). */
export function effectPresent(workspace: string, uid: string): boolean {
  return [...linesOf(path.join(workspace, EDITS_FILE)), ...linesOf(path.join(workspace, SHELL_LOG))].includes(uid);
}

function linesOf(file: string): string[] {
  try {
    return fs.readFileSync(file, 'utf8').split('\n');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}
