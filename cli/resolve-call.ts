/**
 * An operator's verdict on an IN_DOUBT call, delivered where it is needed: to the trajectory that
 * waits for it (the settleCall update, so it wakes up and carries on), else — trajectory ended,
 * or running but not waiting for this call — directly on the record, by the same fenced
 * statement and with the same audit event. Either way with an operator credential minted here,
 * for the generation examined, from the operator's key. Used by `settle resolve`, `settle console`
 * and the chaos suite's SRE; approvals (`settle approve`, the console) go through approveCall.
 */
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { settleByOperator } from '../activities/settled/operator-settlement';
import type { EndpointStore } from '../activities/store/endpoint-store';
import { mintCredential } from '../activities/operator/operator-credentials';
import type { OperatorKeys, OperatorSigner } from '../activities/operator/operator-keys';
import type { OperatorCredential, OperatorVerdict } from '../core/operator-credential';
import type { SettleClient } from '../client/index';
import { approvalClaim } from '../core/approval-claim';

export type CallResolution =
  /** The waiting trajectory took the verdict. */
  | { path: 'update'; trajectoryId: string; state: string; operator: string }
  /** Nobody waits for the call: the record was settled directly (`why` says why). */
  | { path: 'record'; trajectoryId: string; state: string; generation: number; why: string; operator: string }
  /** The record is not IN_DOUBT (any more), or not at the generation examined: nothing settled. */
  | { path: 'none'; state: string; generation?: number };

/** What the operator decided: the verdict on one call, and why. */
export interface VerdictRequest {
  key: string;
  verdict: OperatorVerdict;
  reason: string;
  /** The generation the operator examined; default: the one read now. */
  generation?: number;
}

/** The verdict an operator names (`applied`, `not-applied`, `partial`), or null. */
export function verdictOf(text: string): OperatorVerdict | null {
  return text === 'applied' ? 'applied' : text === 'not-applied' ? 'not_applied' : text === 'partial' ? 'partial' : null;
}

/** An operator's decision on an A3 call that waits for approval. */
export interface ApprovalRequest {
  trajectoryId: string;
  key: string;
  decision: 'approve' | 'deny';
  reason: string;
}

/**
 * Sends the decision to the waiting trajectory, with a credential minted here for the call the
 * trajectory shows under this key (and only once that call derives it); returns that call, tool
 * and full arguments, as signed. Throws what the trajectory refused.
 */
export async function approveCall(
  client: SettleClient,
  request: ApprovalRequest,
  signer: OperatorSigner,
): Promise<{ tool: string; args: Record<string, unknown> }> {
  const call = await client.waitingApproval(request.trajectoryId, request.key);
  await client.approve(request.trajectoryId, mintCredential(signer, approvalClaim({ ...request, namespace: client.namespace }, call)));
  return { tool: call.tool, args: call.args };
}

/** Who decides: their signing key, and the keys a direct write is verified with (cli/operator-key.ts verifyingKeys). */
export interface OperatorAuthorityOf {
  signer: OperatorSigner;
  keys: OperatorKeys;
}

/** Throws what the trajectory refused (e.g. a credential its worker cannot verify), as Temporal reports it. */
export async function resolveCall(
  client: SettleClient,
  store: EndpointStore,
  request: VerdictRequest,
  authority: OperatorAuthorityOf,
): Promise<CallResolution> {
  const record = await store.get(request.key);
  if (!record) return { path: 'none', state: 'UNSEEN' };
  if (record.state !== 'IN_DOUBT') return { path: 'none', state: record.state, generation: record.generation };
  // The verdict is about one execution: the generation the operator examined, else the one read
  // now. It is never written on a later generation (docs/model-checking.md#found).
  const generation = request.generation ?? record.generation;
  if (generation !== record.generation) return { path: 'none', state: record.state, generation: record.generation };
  const { trajectoryId } = record;
  const credential = mintCredential(authority.signer, {
    purpose: 'settle',
    namespace: client.namespace,
    trajectoryId,
    key: record.key,
    generation,
    verdict: request.verdict,
    reason: request.reason,
  });
  const operator = authority.signer.operator;
  const viaUpdate = await settleThroughTrajectory(client, trajectoryId, credential);
  if (viaUpdate.kind === 'settled') return { path: 'update', trajectoryId, state: viaUpdate.state, operator };
  const outcome = await settleByOperator(
    store,
    { ...request, key: record.key, generation, credential },
    {
      keys: authority.keys,
      namespace: client.namespace,
    },
  );
  if (!outcome.settled) return { path: 'none', state: outcome.state, generation: outcome.generation };
  return { path: 'record', trajectoryId, state: outcome.state, generation: outcome.generation, why: viaUpdate.why, operator };
}

/** Sends the settleCall update if the trajectory runs and waits for the call; otherwise says why not. */
async function settleThroughTrajectory(
  client: SettleClient,
  trajectoryId: string,
  credential: OperatorCredential,
): Promise<{ kind: 'settled'; state: string } | { kind: 'not_waiting'; why: string }> {
  let run: { status: string; taskQueue: string };
  try {
    const description = await client.handle(trajectoryId).describe();
    run = { status: description.status.name, taskQueue: description.taskQueue };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return { kind: 'not_waiting', why: `trajectory ${trajectoryId} does not exist (any more)` };
    throw err;
  }
  if (run.status !== 'RUNNING') return { kind: 'not_waiting', why: `trajectory ${trajectoryId} is not running (${run.status})` };
  // An update waits for a worker as long as it takes: with none (an MCP session whose gateway
  // died), the record is settled directly, and the trajectory finds it there once a worker runs it.
  const idle = `no worker runs trajectory ${trajectoryId} (task queue ${run.taskQueue}); it takes the verdict from the record when its worker (e.g. its gateway, with --trajectory ${trajectoryId}) starts again`;
  if (!(await client.workerPolling(run.taskQueue))) return { kind: 'not_waiting', why: idle };
  try {
    // Bounded until a worker accepts the verdict; once accepted, it is the trajectory's to apply.
    const accepted = await withinMs(ACCEPT_WITHIN_MS, client.startSettle(trajectoryId, credential));
    if (accepted === null) {
      return { kind: 'not_waiting', why: `${idle} (its last poller did not take the verdict within ${ACCEPT_WITHIN_MS / 1000} s)` };
    }
    return { kind: 'settled', ...(await accepted.result()) };
  } catch (err) {
    // The validator refuses keys the trajectory does not wait for (e.g. while it probes again).
    const cause = (err as { cause?: { message?: string } }).cause?.message ?? '';
    if (err instanceof WorkflowUpdateFailedError && /^key must name a call of this trajectory that is waiting/.test(cause)) {
      return { kind: 'not_waiting', why: `trajectory ${trajectoryId} is running but not waiting for this call` };
    }
    if (err instanceof WorkflowNotFoundError) return { kind: 'not_waiting', why: `trajectory ${trajectoryId} ended meanwhile` };
    throw err;
  }
}

/** How long the waiting trajectory's worker has to accept the verdict before the record is settled directly. */
const ACCEPT_WITHIN_MS = 10_000;

/** The promise's value, or null once `ms` passed first (the promise's later failure is ignored). */
async function withinMs<T>(ms: number, promise: Promise<T>): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms)));
  promise.catch(() => {});
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}
