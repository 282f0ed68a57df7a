/**
 * The baselines of the end-to-end benchmark: plain Temporal workflows that run the same tool
 * work as a settle trajectory — each call one proxied activity — with no key derivation, no
 * validation in the workflow, no search attributes. `plainTrajectory`'s activity keeps no record;
 * `recordedTrajectory`'s brackets the edit with a hand-rolled durable record (activities.ts);
 * `plainLocalTrajectory` runs plain's edit as a local activity: the floor of the local lane, and
 * unsafe as an effect (Temporal runs a local activity again when its workflow task fails, and no
 * record says it already happened).
 * DETERMINISTIC CODE ONLY.
 */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { PlainActivities } from './activities';

const { plainFileEdit, recordedFileEdit } = proxyActivities<PlainActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

// The same options as settle's local lane takes for a 2 s tool: one try within the bound.
const { plainFileEdit: plainFileEditLocally } = proxyLocalActivities<PlainActivities>({
  startToCloseTimeout: '2 seconds',
  retry: { maximumAttempts: 1 },
});

export interface PlainEdit {
  path: string;
  old_str: string;
  new_str: string;
}

type EditInput = { workspace: string; edits: PlainEdit[] };

/** The edits one after another, each one activity. */
async function runEdits(activity: typeof plainFileEdit, input: EditInput): Promise<string[]> {
  const outputs: string[] = [];
  for (const edit of input.edits) outputs.push(await activity({ workspace: input.workspace, edit }));
  return outputs;
}

export function plainTrajectory(input: EditInput): Promise<string[]> {
  return runEdits(plainFileEdit, input);
}

export function recordedTrajectory(input: EditInput): Promise<string[]> {
  return runEdits(recordedFileEdit, input);
}

export function plainLocalTrajectory(input: EditInput): Promise<string[]> {
  return runEdits(plainFileEditLocally, input);
}
