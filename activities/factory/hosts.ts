/** Where a trajectory's workspace lives (core/hosts.ts): the worker whose disk holds it answers. */
import { Context } from '@temporalio/activity';
import { FAILURE } from '../../core/failures';
import { hostQueue, type WorkspaceHost } from '../../core/hosts';
import { workspaceRefusal } from '../workspace';
import type { ActivityContext } from './context';
import { ApplicationFailure } from '@temporalio/common';

export function hostActivities(ctx: ActivityContext) {
  return {
    /**
     * This worker's host and its queue, when the workspace is an existing directory here; else a
     * retryable refusal, so another attempt asks another worker of the shared queue. A trajectory
     * asks once per run and records the answer: its workspace calls go to that host's queue.
     */
    async locateWorkspace(input: { workspace: string }): Promise<WorkspaceHost> {
      if (!ctx.pollsHostQueue) {
        throw ApplicationFailure.retryable(`this worker polls no host queue (host ${ctx.host}): another worker answers`, FAILURE.WrongHost);
      }
      const refusal = await workspaceRefusal(input.workspace, ctx.policy.workspaceRoot);
      if (refusal) {
        throw ApplicationFailure.retryable(`host ${ctx.host} does not hold the workspace: ${refusal}`, FAILURE.WrongHost);
      }
      return { host: ctx.host, queue: hostQueue(Context.current().info.taskQueue, ctx.host) };
    },
  };
}
