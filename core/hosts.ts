/**
 * Hosts (docs/deploying.md#workers-on-several-hosts): a workspace, and the evidence its calls
 * leave, live on one host's disk. A host id names that disk's view; a worker that runs workspace
 * tools also polls its host's own task queue, where a trajectory sends its workspace calls. Pure:
 * workflow code and activities import it alike.
 */
import { InputError } from './errors';

export const HOST_ID_VARIABLE = 'SETTLE_HOST_ID';

/** Letters, digits, `.`, `_`, `-`: it is part of a task queue's name and shown to operators. */
const HOST_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** A host id as the operator set it; throws InputError naming the variable and the rule. */
export function parseHostId(text: string, field = HOST_ID_VARIABLE): string {
  if (!HOST_ID_PATTERN.test(text)) {
    throw new InputError(field, `be 1–100 letters, digits, '.', '_' or '-', starting with a letter or digit (got ${JSON.stringify(text)})`);
  }
  return text;
}

/** The task queue only the workers of `hostId` poll, beside the shared `taskQueue`. */
export function hostQueue(taskQueue: string, hostId: string): string {
  return `${taskQueue}@host:${hostId}`;
}

/**
 * Where a trajectory's workspace lives, recorded once per run (an activity's result): the host of
 * the worker that found the workspace on its disk, and the queue only that host's workers poll.
 */
export interface WorkspaceHost {
  host: string;
  queue: string;
}
