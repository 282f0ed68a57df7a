/**
 * The approval of an A3 call, verified by the activity that performs its effect: the workflow
 * that schedules the call only proposes it (any workflow can schedule settle's activities on its
 * task queue). The approval counts only when an operator credential this worker can verify
 * approves exactly this call — its namespace, trajectory, key, tool and arguments — and the
 * approver recorded is the one the credential proves, never a name the workflow sent.
 */
import { callDigest, OperatorCredential } from '../../core/operator-credential';
import type { OperatorKeys } from './operator-keys';
import { verifyCredential } from './operator-credentials';

/** The call about to execute, as this activity derived and validated it. */
export interface ExecutingCall {
  namespace: string;
  trajectoryId: string;
  key: string;
  tool: string;
  args: Record<string, unknown>;
}

export type ExecutionApproval = { ok: true; approver: string; reason: string } | { ok: false; rule: string };

/** Whether `credential` approves `call`; `rule` follows "the approval's credential must …". */
export function approvalForExecution(
  credential: unknown,
  call: ExecutingCall,
  keys: OperatorKeys | null,
  nowMs = Date.now(),
): ExecutionApproval {
  if (credential === undefined || credential === null) {
    return { ok: false, rule: 'be given: an A3 call executes only with the operator credential that approved it (settle approve)' };
  }
  // The reason is the operator's own words; everything else is bound to the call about to run.
  const parsed = OperatorCredential().safeParse(credential);
  const reason = parsed.success ? parsed.data.body.reason : '';
  const check = verifyCredential(
    credential,
    {
      purpose: 'approve',
      namespace: call.namespace,
      trajectoryId: call.trajectoryId,
      key: call.key,
      decision: 'approve',
      reason,
      tool: call.tool,
      call: callDigest(call.tool, call.args),
    },
    keys,
    nowMs,
    'execution',
  );
  return check.ok ? { ok: true, approver: check.body.operator, reason: check.body.reason } : { ok: false, rule: check.rule };
}
