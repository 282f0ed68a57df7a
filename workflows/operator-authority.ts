/**
 * Operator authority in the workflow: an approval counts only once the worker has verified its
 * operator credential (docs/security.md#operator-authority). DETERMINISTIC CODE ONLY (workflow sandbox).
 * Verdicts need nothing here: the settleByOperator activity that writes them verifies theirs.
 */
import { ApplicationFailure, patched, proxyLocalActivities } from '@temporalio/workflow';
import { InputError } from '../core/errors';
import type { SettleActivities } from '../activities/index';
import type { ApproveCallInput } from './definitions';
import type { TrajectoryState } from './trajectory-state';

/**
 * Patch id: the approveCall update verifies its credential (a local activity) before the decision
 * is taken. Asked in the handler, so trajectories already running are protected from their next
 * approval on; histories from before took the decision at once.
 */
export const PATCH_OPERATOR_AUTHORITY = 'operator-authority-v1';

// Verification is a signature check: short, and refused for good when it fails (non-retryable).
const { verifyApproval } = proxyLocalActivities<SettleActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
});

type Decided = { decision: 'approve' | 'deny' };

/**
 * The approveCall update's handler: verify, then take the decision under the approver the
 * credential proves. Histories from before replay the synchronous handler they ran.
 */
export function approveWithAuthority(state: TrajectoryState, a: ApproveCallInput): Decided | Promise<Decided> {
  return patched(PATCH_OPERATOR_AUTHORITY) ? verifiedApproval(state, a) : state.approveCall(a);
}

async function verifiedApproval(state: TrajectoryState, a: ApproveCallInput): Promise<Decided> {
  // The call as this workflow waits for it: the credential must approve exactly that call.
  const pending = typeof a?.key === 'string' ? state.pendingApprovals.get(a.key) : undefined;
  const { approver } = await verifyApproval({
    key: a.key,
    decision: a.decision,
    reason: a.reason,
    approver: a.approver,
    credential: a.credential,
    ...(pending ? { call: { tool: pending.tool, args: pending.args } } : {}),
  });
  // Another decision, or the approval deadline, may have come while the credential was checked.
  try {
    state.validateApproveCall(a);
  } catch (err) {
    // A plain error here would fail the workflow task; a failure fails only this update.
    if (err instanceof InputError) throw ApplicationFailure.create({ message: err.message, nonRetryable: true });
    throw err;
  }
  return state.approveCall({ key: a.key, approver, decision: a.decision, reason: a.reason, credential: a.credential });
}
