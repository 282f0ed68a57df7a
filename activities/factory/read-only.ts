/** A0 (read-only) calls: no endpoint record, a retry just reads again. */
import { Context } from '@temporalio/activity';
import { failed, type Observation } from '../../core/observation';
import { errorMessage } from '../../core/errors';
import { isErrorObservation, type OutcomeLabel } from '../../core/outcome-label';
import { checkAccess, denied } from './access';
import { checkedCall } from './checked-call';
import type { ActivityContext } from './context';
import { boundObservation } from './outcome';
import { requireHost } from './host-check';

export interface ReadOnlyCallInput {
  tool: string;
  args: Record<string, unknown>;
  workspace: string;
  /** The call's idempotency key (charges the capability budget once). */
  key?: string;
  capability?: unknown;
  /** Count this call as a valid proposal (settle_tool_calls), alongside the read. */
  proposal?: { turn: number; callId: string };
  /** The host of the trajectory's workspace (core/hosts.ts): another host's worker refuses the read (retryable). */
  host?: string;
  /**
   * A local read's room in its workflow task (core/history-budget.ts LOCAL_READ_MAX_BYTES): a
   * result whose JSON is larger is not returned, only its size (`too_large`), and the workflow
   * reads again as an activity.
   */
  maxResultBytes?: number;
}

export type ReadOnlyResult =
  | { kind: 'observed'; observation: Observation; outcome?: OutcomeLabel }
  | { kind: 'denied'; component: string; reason: string; outcome?: OutcomeLabel }
  | { kind: 'too_large'; bytes: number };

export function readOnlyActivities(ctx: ActivityContext) {
  const { registry, callStats } = ctx;
  return {
    /** Runs an A0 (read-only) call: no endpoint record, a retry just reads again. */
    async runReadOnlyTool(input: ReadOnlyCallInput): Promise<ReadOnlyResult> {
      const { tool, args } = checkedCall(registry, input.tool, input.args, 'read-only');
      // Another host's disk may hold a stale copy of the workspace: not read there.
      requireHost(ctx, input.tool, input.host);
      const audience = Context.current().info.workflowExecution?.workflowId ?? '';
      const workspace = ctx.workspaceFor(input.workspace);
      const access = await checkAccess(ctx, input.capability, {
        tool: input.tool,
        args,
        workspace,
        key: input.key ?? `${audience}:${Context.current().info.activityId}`,
        audience,
      });
      // Counted whatever the capability says (as the workflow counted it before the check).
      const counted = input.proposal
        ? callStats.recordProposedCall({ trajectoryId: audience, ...input.proposal, tool: input.tool, issue: null })
        : null;
      if (access.denied) {
        await counted;
        return denied(
          {
            trajectoryId: audience,
            turn: input.proposal?.turn ?? -1,
            callId: input.proposal?.callId ?? '',
            key: input.key ?? null,
            // A read-only (A0) call has no endpoint record.
            generation: null,
            tool: input.tool,
          },
          access.denied,
        );
      }
      // The tool's own failure (a permission, an I/O error) is the answer to the model, not a
      // reason to retry the activity or fail the turn.
      const run = tool.run(args, { workspace }).catch((err: unknown) => failed(`${input.tool} failed: ${errorMessage(err)}`));
      const [observation] = await Promise.all([run, counted]);
      const bounded = boundObservation(observation);
      const result: ReadOnlyResult = { outcome: isErrorObservation(bounded) ? 'error' : 'ok', kind: 'observed', observation: bounded };
      if (input.maxResultBytes === undefined) return result;
      // Measured as the payload converter encodes it: JSON in UTF-8.
      const bytes = Buffer.byteLength(JSON.stringify(result));
      return bytes > input.maxResultBytes ? { kind: 'too_large', bytes } : result;
    },
  };
}
