/**
 * An operator's verdict on an IN_DOUBT record, written with their name and reason (on the record
 * and in its event trail, by the same statement) — only with an operator credential that proves
 * it (docs/security.md#operator-authority); the name written is the one the credential proves.
 * Used by the workflow's settleCall update (through the settleByOperator activity) and by `settle
 * resolve` when no running trajectory waits for the call.
 */
import { InputError } from '../../core/errors';
import type { CredentialBody, OperatorVerdict } from '../../core/operator-credential';
import type { Observation } from '../../core/observation';
import type { RecordState } from '../../core/records';
import type { EndpointStore } from '../store/endpoint-store';
import { emitCallEvent } from '../observability/events';
import { requireCredential } from '../operator/operator-credentials';
import type { OperatorKeys } from '../operator/operator-keys';

export interface OperatorSettlement {
  key: string;
  verdict: OperatorVerdict;
  /** Who asks; when given, it must be the operator the credential proves (the one recorded). */
  operator?: string;
  reason: string;
  /** The operator credential (core/operator-credential.ts) for exactly this key, generation, verdict and reason. */
  credential?: unknown;
  /**
   * The generation the operator examined. The verdict settles that generation only: if the record
   * has moved on (settled, claimed again, and IN_DOUBT at a later generation), the verdict says
   * nothing about the new execution and is refused (docs/model-checking.md#found). Absent: the
   * generation read here, just before the write (callers that examined a record should pass it).
   */
  generation?: number;
}

export type OperatorOutcome =
  /** The verdict settled `generation`: the record is now COMPLETED or NOT_EXECUTED. */
  | { settled: true; state: RecordState; generation: number }
  /** Nothing to settle: the record is not IN_DOUBT (any more), or does not exist. */
  | { settled: false; state: RecordState | 'UNSEEN'; generation: number };

export interface OperatorAuthority {
  /** The public operator keys credentials are verified with (null: none, so every verdict is refused). */
  keys: OperatorKeys | null;
  /** The trajectory asking (the settleCall update's workflow): the record must be one of its calls. */
  trajectoryId?: string;
  /** The Temporal namespace the verdict is for: the asking workflow's, or the operator's connection's. */
  namespace: string;
  nowMs?: number;
}

/**
 * Settles the IN_DOUBT generation the operator examined (`input.generation`, else the one read
 * now), fenced by that generation: a verdict never lands on a later execution (a refused write
 * leaves an event naming the operator). Throws InputError (field `credential`) unless the
 * credential proves this verdict on this record and generation.
 */
export async function settleByOperator(
  store: EndpointStore,
  input: OperatorSettlement,
  authority: OperatorAuthority,
): Promise<OperatorOutcome> {
  const record = await store.get(input.key);
  if (!record) return { settled: false, state: 'UNSEEN', generation: 0 };
  if (authority.trajectoryId !== undefined && record.trajectoryId !== authority.trajectoryId) {
    throw new InputError('key', `name a call of this trajectory (${input.key.slice(0, 16)}… belongs to another)`);
  }
  const generation = input.generation ?? record.generation;
  const proven = requireCredential(
    input.credential,
    {
      purpose: 'settle',
      namespace: authority.namespace,
      trajectoryId: record.trajectoryId,
      key: record.key,
      generation,
      verdict: input.verdict,
      reason: input.reason,
    },
    authority.keys,
    authority.nowMs,
  );
  if (input.operator !== undefined && input.operator !== proven.operator) {
    throw new InputError('operator', `be the operator the credential proves (${proven.operator}), or be left out`);
  }
  if (record.state !== 'IN_DOUBT') return { settled: false, state: record.state, generation: record.generation };
  const actor = `operator:${proven.operator}` as const;
  const write =
    input.verdict === 'not_applied'
      ? await store.settle(record.key, generation, { as: 'NOT_EXECUTED' }, actor, input.reason)
      : await store.settle(record.key, generation, { as: 'COMPLETED', result: operatorResult(proven) }, actor, input.reason);
  if (write.ok) {
    emitCallEvent({
      event: 'settled',
      key: record.key,
      generation,
      trajectoryId: record.trajectoryId,
      turn: record.turn,
      callId: record.callId,
      by: 'operator',
      verdict: input.verdict,
      state: write.record.state,
      actor,
      reason: input.reason,
    });
    return { settled: true, state: write.record.state, generation };
  }
  // Fenced out: settled or re-claimed meanwhile (a probe, a late completion). The record is the truth.
  return { settled: false, state: write.current?.state ?? 'UNSEEN', generation: write.current?.generation ?? record.generation };
}

/**
 * What the agent reads back. A partial effect is COMPLETED (settle never runs it again, which could
 * apply the part that happened twice) but not a success: the observation says so, in `error`
 * and a non-zero status, and is marked `partial`.
 */
function operatorResult(input: CredentialBody): Observation {
  if (input.purpose === 'settle' && input.verdict === 'partial') {
    return {
      output: '',
      error: `partial: the effect happened in part, not in full (settled by operator ${input.operator}: ${input.reason}); it will not be run again, check what is left before acting on it`,
      exit_status: 1,
      truncated: false,
      partial: true,
    };
  }
  return {
    output: `settled as applied by operator ${input.operator}: ${input.reason}`,
    error: null,
    exit_status: 0,
    truncated: false,
  };
}
