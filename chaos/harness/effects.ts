/**
 * Effects counted from the files themselves — never from settle's records: each line of edits.txt
 * (above END) and shell.log is one effect that happened, named by its uid. With several hosts,
 * on every host's disk: the workspace's own host's copy counts; a line on another host's copy is
 * an effect run where the workspace is not (countEffectsElsewhere).
 */
import fs from 'node:fs';
import path from 'node:path';
import { EDITS_FILE, SHELL_LOG, type TrajectoryPlan } from './workload';

/** uid → how many times its effect is in the files of its workspace, on the host that holds it. */
export function countEffects(plans: TrajectoryPlan[]): Map<string, number> {
  return count(plans.map((p) => p.disks[p.home]!));
}

/** uid → how many times its effect is in a copy of its workspace on a host that does not hold it (a defect). */
export function countEffectsElsewhere(plans: TrajectoryPlan[]): Map<string, number> {
  return count(plans.flatMap((p) => p.disks.filter((_, i) => i !== p.home)));
}

function count(workspaces: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const workspace of workspaces) {
    for (const line of effectLines(workspace)) {
      if (line === 'END' || line === '') continue;
      counts.set(line, (counts.get(line) ?? 0) + 1);
    }
  }
  return counts;
}

/** Whether the effect of `uid` is in its trajectory's files on the host that holds them (the SRE's facts). */
export function effectPresent(plan: TrajectoryPlan, uid: string): boolean {
  return effectLines(plan.disks[plan.home]!).includes(uid);
}

function effectLines(workspace: string): string[] {
  return [...linesOf(path.join(workspace, EDITS_FILE)), ...linesOf(path.join(workspace, SHELL_LOG))];
}

function linesOf(file: string): string[] {
  try {
    return fs.readFileSync(file, 'utf8').split('\n');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}
