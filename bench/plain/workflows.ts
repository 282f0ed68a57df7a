/**
 * The baseline of the end-to-end benchmark: a plain Temporal workflow that runs the same tool
 * work as a settle trajectory — each call one proxied activity — with no key, no endpoint record,
 * no validation in the workflow, no search attributes. DETERMINISTIC CODE ONLY.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { PlainActivities } from './activities';

const { plainFileEdit } = proxyActivities<PlainActivities>({
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
