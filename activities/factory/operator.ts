/** An operator's authority over a trajectory's calls: verdicts on calls in doubt, approvals of A3 calls. */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { callDigest } from '../../core/operator-credential';
import { FAILURE } from '../../core/failures';
import { InputError } from '../../core/errors';
import type { RecordState } from '../../core/records';
import { emitCallEvent } from '../observability/events';
import { verifyCredential } from '../operator/operator-credentials';
import { settleByOperator, type OperatorSettlement } from '../settled/operator-settlement';
import { trajectoryIdOf, type ActivityContext } from './context';

/** What an approveCall update asks: checked against its operator credential before the workflow takes it. */
export interface ApprovalRequest {
  key: string;
  decision: 'approve' | 'deny';
  reason: string;
  approver: string;
  credential: unknown;
  /** The call the workflow waits to approve (absent: it waits for no such call, and the credential is refused). */
  call?: { tool: string; args: Record<string, unknown> };
}

export function operatorActivities({ store, operatorKeys }: ActivityContext) {
  return {
    /**
     * An operator's verdict on an IN_DOUBT call, recorded with their name and reason. Returns the
     * generation it settled: a verdict belongs to that execution, not to later ones.
     */
    async settleByOperator(input: OperatorSettlement): Promise<{ state: RecordState; generation: number }> {
      const trajectoryId = trajectoryIdOf('settleByOperator');
      const namespace = Context.current().info.namespace;
      const outcome = await settleByOperator(store, input, { keys: operatorKeys, trajectoryId, namespace }).catch(refusedAuthority);
      if (outcome.state === 'UNSEEN') throw ApplicationFailure.nonRetryable(`no endpoint record for key ${input.key}`, FAILURE.NoRecord);
      return { state: outcome.state, generation: outcome.generation };
    },

    /**
     * Before a trajectory takes an approval (run as a local activity by the approveCall update):
     * the operator credential must prove this decision on this call of this trajectory. Returns
     * the approver it proves, the one recorded; refuses (non-retryable) otherwise.
     */
    async verifyApproval(input: ApprovalRequest): Promise<{ approver: string }> {
      const trajectoryId = trajectoryIdOf('verifyApproval');
      if (!input.call) {
        refusedAuthority(
          new InputError('key', `name a call this trajectory waits to approve (${String(input.key).slice(0, 16)}… is not one)`),
        );
      }
      const check = verifyCredential(
        input.credential,
        {
          purpose: 'approve',
          namespace: Context.current().info.namespace,
          trajectoryId,
          key: input.key,
          decision: input.decision,
          reason: input.reason,
          tool: input.call.tool,
          call: callDigest(input.call.tool, input.call.args),
        },
        operatorKeys,
      );
      if (!check.ok) refusedAuthority(new InputError('credential', check.rule));
      const approver = check.body.operator;
      if (input.approver !== approver) {
        refusedAuthority(new InputError('approver', `be the operator the credential proves (${approver})`));
      }
      emitCallEvent({ event: 'approval_decided', trajectoryId, key: input.key, generation: null, decision: input.decision, approver });
      return { approver };
    },
  };
}

/** An operator action without the authority it needs: refused for good (the update fails, naming the rule). */
function refusedAuthority(err: unknown): never {
  if (err instanceof InputError) throw ApplicationFailure.nonRetryable(err.message, FAILURE.OperatorAuthority);
  throw err;
}
