/**
 * An operator's verdict on an IN_DOUBT record, written with their name and reason (on the record
 * and in its event trail, by the same statement). Used by the workflow's settleCall update (through
 * the settleByOperator activity) and by `settle resolve` when no running trajectory waits for the call.
 */
import type { Observation } from '../../core/observation';
import type { RecordState } from '../../core/records';
import type { EndpointStore } from '../store/endpoint-store';
import { emitCallEvent } from '../observability/events';

export interface OperatorSettlement {
  key: string;
  verdict: 'applied' | 'not_applied';
  operator: string;
  reason: string;
}

export type OperatorOutcome =
  /** The verdict settled `generation`: the record is now COMPLETED or NOT_EXECUTED. */
  | { settled: true; state: RecordState; generation: number }
  /** Nothing to settle: the record is not IN_DOUBT (any more), or does not exist. */
  | { settled: false; state: RecordState | 'UNSEEN'; generation: number };

/** Settles the record's current IN_DOUBT generation, fenced by that generation. */
export async function settleByOperator(store: EndpointStore, input: OperatorSettlement): Promise<OperatorOutcome> {
  const record = await store.get(input.key);
  if (!record) return { settled: false, state: 'UNSEEN', generation: 0 };
  if (record.state !== 'IN_DOUBT') return { settled: false, state: record.state, generation: record.generation };
  const actor = `operator:${input.operator}` as const;
  const write =
    input.verdict === 'applied'
      ? await store.settle(record.key, record.generation, { as: 'COMPLETED', result: operatorResult(input) }, actor, input.reason)
      : await store.settle(record.key, record.generation, { as: 'NOT_EXECUTED' }, actor, input.reason);
  if (write.ok) {
    emitCallEvent({ event: 'settled', key: record.key, generation: record.generation, by: 'operator', state: write.record.state, actor });
    return { settled: true, state: write.record.state, generation: record.generation };
  }
  // Fenced out: settled or re-claimed meanwhile (a probe, a late completion). The record is the truth.
  return { settled: false, state: write.current?.state ?? 'UNSEEN', generation: write.current?.generation ?? record.generation };
}

function operatorResult(input: OperatorSettlement): Observation {
  return {
    output: `settled as applied by operator ${input.operator}: ${input.reason}`,
    error: null,
    exit_status: 0,
    truncated: false,
  };
}
