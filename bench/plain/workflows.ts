/**
 * The baselines of the end-to-end benchmark: plain Temporal workflows that run the same tool
 * work as a settle trajectory — each call one proxied activity — with no key derivation, no
 * validation in the workflow, no search attributes. `plainTrajectory`'s activity keeps no record;
 * `recordedTrajectory`'s brackets the edit with a hand-rolled durable record (activities.ts).
 * DETERMINISTIC CODE ONLY.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { PlainActivities } from './activities';

const { plainFileEdit, recordedFileEdit } = proxyActivities<PlainActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

export interface PlainEdit {
  path: string;
  old_str: string;
  new_str: string;
}

export async function plainTrajectory(input: { workspace: string; edits: PlainEdit[] }): Promise<string[]> {
  const outputs: string[] = [];
  for (const edit of input.edits) outputs.push(await plainFileEdit({ workspace: input.workspace, edit }));
  return outputs;
}

export async function recordedTrajectory(input: { workspace: string; edits: PlainEdit[] }): Promise<string[]> {
  const outputs: string[] = [];
  for (const edit of input.edits) outputs.push(await recordedFileEdit({ workspace: input.workspace, edit }));
  return outputs;
}
