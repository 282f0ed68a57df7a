/** Where a trajectory's workspace lives (core/hosts.ts): the worker whose disk holds it answers. */
import { Context } from '@temporalio/activity';
import { FAILURE } from '../../core/failures';
import { hostQueue, type WorkspaceHost } from '../../core/hosts';
import { findWorkspace } from '../workspace';
import type { ActivityContext } from './context';
import { ApplicationFailure } from '@temporalio/common';

export function hostActivities(ctx: ActivityContext) {
  return {
    /**
     * The host a call of the trajectory was claimed on, whichever worker asks; else this worker's
     * host and its queue, when the workspace is an existing directory here; null when nothing is
     * routed (this worker polls no host queue, or its rules refuse the workspace wherever it is);
     * else, the directory missing here, a retryable refusal, so another attempt asks another worker
     * of the shared queue. A trajectory asks once per run and records the answer: its workspace
     * calls go to that host's queue.
     */
    async locateWorkspace(input: { workspace: string }): Promise<WorkspaceHost | null> {
      const { taskQueue, workflowExecution } = Context.current().info;
      // A call of this trajectory was claimed already (an earlier run, or a workflow task whose
      // answer was lost with its worker): its evidence is on that host, so that is the host.
      const claimed = workflowExecution ? await ctx.store.hostOfTrajectory(workflowExecution.workflowId) : null;
      if (claimed) return { host: claimed, queue: hostQueue(taskQueue, claimed) };
      // A worker that polls no host queue (SettlePlugin's) routes nothing: its calls go to the
      // shared queue, where each worker checks the workspace and the record's host itself.
      if (!ctx.pollsHostQueue) return null;
      const found = await findWorkspace(input.workspace, ctx.policy.workspaceRoot);
      if (found === 'here') return { host: ctx.host, queue: hostQueue(taskQueue, ctx.host) };
      // Not on this disk: another worker of the shared queue is asked (the retry), for minutes.
      if (found.missing)
        throw ApplicationFailure.retryable(`host ${ctx.host} does not hold the workspace: ${found.refusal}`, FAILURE.WrongHost);
      // Refused by this worker's rules (outside its root, an unsafe path), not for want of a disk:
      // nothing to route; the worker that takes each call refuses it, naming the rule.
      return null;
    },
  };
}
