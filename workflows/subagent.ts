/**
 * Sub-agents as child workflows (docs/design.md#sub-agents). DETERMINISTIC CODE ONLY (workflow sandbox).
 *
 * The child gets a readable id (`<parent>/sub-<n>`), a capability attenuated from the parent's
 * (signed by an activity: workflow code never sees a key) with its budget reserved from the
 * parent's, the parent's level overrides and approval timeout (a child's level for a tool is at
 * least its parent's), and the parent link as a search attribute. Its result comes back as an observation;
 * its unspent budget returns when it ends.
 */
import { executeChild, proxyActivities } from '@temporalio/workflow';
import { failed, ok } from '../core/observation';
import { childId as childIdFor } from '../core/trajectory-ids';
import type { SpawnSubagentArgs } from '../core/capability/subagent';
import type { SettleActivities } from '../activities/index';
import type { CallReport, TrajectoryInput, TrajectoryResult, TrajectoryWorkflow } from './definitions';
import { initialSearchAttributes } from './search-attributes';
import type { CallContext } from './call-context';
import { LOCAL_LANE_TASK_TIMEOUT_MS } from '../core/tools/lanes';

const { attenuateCapability, closeChildBudget } = proxyActivities<SettleActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

export async function spawnSubagent(ctx: CallContext, report: CallReport, args: SpawnSubagentArgs): Promise<CallReport> {
  const { input, trajectoryId, state } = ctx;
  report.state = 'NO_RECORD';
  const parent = input.capability;
  if (!parent) {
    report.resolution = 'invalid';
    report.observation = failed('invalid call: spawn_subagent requires this trajectory to hold a capability');
    return report;
  }
  if (!args.turns && !input.model) {
    report.resolution = 'invalid';
    report.observation = failed(
      'invalid call: args.turns must be given unless this trajectory is model-driven (the sub-agent inherits its model)',
    );
    return report;
  }
  const n = state.reports.filter((r) => r.tool === 'spawn_subagent' && r.key !== null).length;
  const childId = childIdFor(trajectoryId, n);
  report.attempts++;
  const attenuated = await attenuateCapability({
    parent,
    child: {
      aud: childId,
      rights: args.rights,
      objects: args.objects,
      max_cost: args.max_cost,
      budget: args.budget,
      exp: Math.min(parent.body.exp, Date.now() + args.expires_in_ms),
    },
  });
  if (!attenuated.ok) {
    report.resolution = 'denied';
    report.observation = failed(`denied by capability (${attenuated.component}): ${attenuated.reason}`);
    return report;
  }
  state.publish('running', `waiting for sub-agent ${childId}`);
  const childInput: TrajectoryInput = {
    workspace: input.workspace,
    capability: attenuated.token,
    parentTrajectoryId: trajectoryId,
    ...(args.turns ? { turns: args.turns } : { model: { ...input.model!, task: args.task } }),
    ...(input.leaseMs ? { leaseMs: input.leaseMs } : {}),
    ...(input.backoff ? { backoff: input.backoff } : {}),
    // Levels only rise across a spawn: what waits for approval here waits in the child too.
    ...(input.levelOverrides ? { levelOverrides: input.levelOverrides } : {}),
    ...(input.approvalTimeoutMs ? { approvalTimeoutMs: input.approvalTimeoutMs } : {}),
  };
  try {
    const result: TrajectoryResult = await executeChild<TrajectoryWorkflow>('trajectoryWorkflow', {
      workflowId: childId,
      args: [childInput],
      // Visible as running, under its parent, from its start (search-attributes.ts).
      typedSearchAttributes: initialSearchAttributes(trajectoryId),
      // A dead worker's local-lane call is noticed by this timeout (core/tools/lanes.ts).
      ...(state.patches.localLane ? { workflowTaskTimeout: LOCAL_LANE_TASK_TIMEOUT_MS } : {}),
    });
    report.resolution = 'executed';
    report.observation = ok(
      JSON.stringify({
        subagent: childId,
        outcome: result.outcome,
        final_answer: result.finalAnswer ?? null,
        calls: result.calls.map((c) => ({
          tool: c.tool,
          resolution: c.resolution,
          exit_status: c.observation?.exit_status ?? null,
          error: c.observation?.error ?? null,
        })),
      }),
    );
  } catch (err) {
    report.resolution = 'executed';
    report.observation = failed(`sub-agent ${childId} failed: ${(err as Error).message}`);
  } finally {
    await closeChildBudget({ digest: attenuated.digest });
  }
  return report;
}
