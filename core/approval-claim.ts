/**
 * What an operator's approval binds, computed on the operator's side (`settle approve`, the
 * console) from the call they are shown: the tool and the digest of its full arguments, and — where
 * the key is not keyed with the worker's secret — a check that the call shown derives the key it
 * claims. A workflow's description of its own call is only a proposal: a credential signed for it
 * approves exactly the call described, and the activity that would execute any other refuses it.
 * Pure.
 */
import { deriveKey } from './key';
import { callDigest, type OperatorClaim } from './operator-credential';
import { InputError } from './errors';

/** Who a call's denial names when its approval deadline passed without a decision. */
export const APPROVAL_DEADLINE_APPROVER = 'settle';

/** An A3 call waiting for a decision, as its workflow describes it (the pendingApprovals query). */
export interface PendingApproval {
  key: string;
  turn: number;
  callId: string;
  tool: string;
  args: Record<string, unknown>;
  /** How the key was derived: in keyed mode (hmac) the operator's side cannot recompute it. */
  keyMode: 'sha256' | 'hmac';
  /** Workflow time the wait began, epoch ms. */
  sinceMs: number;
  /** When the call is denied without a decision, epoch ms. */
  deadlineMs: number;
}

export interface ApprovalDecision {
  namespace: string;
  trajectoryId: string;
  key: string;
  decision: 'approve' | 'deny';
  reason: string;
}

/**
 * The claim a credential for `decision` carries, from the call the workflow says waits under that
 * key; throws InputError (field `key`) when the call shown does not derive its key.
 */
export function approvalClaim(decision: ApprovalDecision, call: PendingApproval): OperatorClaim {
  if (call.key !== decision.key) throw new InputError('key', `be the key the call shown waits under (${call.key.slice(0, 16)}…)`);
  if (call.keyMode !== 'hmac') {
    let derived: string;
    try {
      derived = deriveKey({ trajectoryId: decision.trajectoryId, turn: call.turn, callId: call.callId, tool: call.tool, args: call.args });
    } catch (err) {
      throw new InputError('key', `name a call described truthfully (its description does not derive a key: ${(err as Error).message})`);
    }
    if (derived !== decision.key) {
      throw new InputError(
        'key',
        `be the key of the call shown (${call.tool} turn ${call.turn} call ${call.callId} derives ${derived.slice(0, 16)}…): ` +
          'the workflow answering for this trajectory misdescribes the call it waits on; nothing was signed',
      );
    }
  }
  return {
    purpose: 'approve',
    namespace: decision.namespace,
    trajectoryId: decision.trajectoryId,
    key: decision.key,
    decision: decision.decision,
    reason: decision.reason,
    tool: call.tool,
    call: callDigest(call.tool, call.args),
  };
}
