/**
 * The baselines of the end-to-end benchmark: plain Temporal workflows that run the same tool
 * work as a settle trajectory — each call one proxied activity — with no key derivation, no
 * validation in the workflow, no search attributes. `plainTrajectory`'s activity keeps no record;
 * `recordedTrajectory`'s brackets the edit with a hand-rolled durable record (activities.ts);
 * `plainLocalTrajectory` runs plain's edit as a local activity: the floor of the local lane, and
 * unsafe as an effect (Temporal runs a local activity again when its workflow task fails, and no
 * record says it already happened); `recordedLocalTrajectory` runs the recorded edit as a local
 * activity: what any durable record costs in the local lane.
 * DETERMINISTIC CODE ONLY.
 */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { PlainActivities, PlainEdit } from './activities';

const { plainFileEdit, recordedFileEdit } = proxyActivities<PlainActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

// The bound settle's local lane takes for a file tool (1 s); retried as Temporal retries a plain
// local activity (settle goes on in the activity lane instead), so a slow edit does not fail the run.
const { plainFileEdit: plainFileEditLocally, recordedFileEdit: recordedFileEditLocally } = proxyLocalActivities<PlainActivities>({
  startToCloseTimeout: '1 second',
});

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

export function recordedLocalTrajectory(input: EditInput): Promise<string[]> {
  return runEdits(recordedFileEditLocally, input);
}
