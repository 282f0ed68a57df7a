/**
 * Call events: what happens to a call's endpoint record, as the worker sees it. Emitted by the
 * settled runner, the store and the activities; turned into Prometheus counters (metrics.ts) and
 * JSON log lines (log.ts) by whoever subscribes. Nobody subscribed (tests in-process): free.
 */

/** Which call an event is about: every line about a call carries all of it. */
export interface CallRef {
  trajectoryId: string;
  turn: number;
  callId: string;
  key: string;
  tool: string;
}

export type InDoubtCause =
  /** The execution threw: the effect is unknown. */
  | 'exception'
  /** A claimer found the holder's lease expired (a dead or paused worker). */
  | 'lease_expired'
  /** A retry found the claim its earlier attempt made gone from the record store (a failover lost it). */
  | 'claim_forgotten';

export type CallEvent =
  | ({ event: 'claimed'; generation: number; from: 'UNSEEN' | 'NOT_EXECUTED' } & CallRef)
  | ({ event: 'replayed'; generation: number } & CallRef)
  | ({ event: 'busy'; generation: number } & CallRef)
  | ({ event: 'in_doubt'; generation: number; cause: InDoubtCause | 'found_in_doubt'; detail: string } & CallRef)
  | ({ event: 'released'; generation: number; detail: string } & CallRef)
  | ({ event: 'completed'; generation: number } & CallRef)
  | ({ event: 'lease_renewal_failed'; generation: number; reason: string } & CallRef)
  /** `generation`: the record's, when the key has one (an earlier attempt claimed it); null otherwise. */
  | ({ event: 'capability_denied'; component: string; reason: string; generation: number | null } & Omit<CallRef, 'key'> & {
        key: string | null;
      })
  /** A malformed call never reaches a claim: no key, no generation (both null, so every call line has them). */
  | {
      event: 'malformed_call';
      trajectoryId: string;
      turn: number;
      callId: string;
      tool: string;
      key: null;
      generation: null;
      field: string;
      rule: string;
    }
  /** One probe round on an IN_DOUBT record, and what it answered (applied and not_applied settle it). */
  | ({ event: 'probed'; generation: number; verdict: 'applied' | 'not_applied' | 'unknown'; final: boolean; detail: string } & CallRef)
  /** An approval decision whose operator credential the worker verified (the approveCall update). A3 calls wait before their claim: no generation. */
  | { event: 'approval_decided'; trajectoryId: string; key: string; generation: null; decision: 'approve' | 'deny'; approver: string }
  /**
   * An executor found the record of its own claim gone (a failover to a replica that never received
   * it) and wrote it back with what it knows: COMPLETED with its result, or IN_DOUBT.
   */
  | ({ event: 'record_written_back'; generation: number; state: 'COMPLETED' | 'IN_DOUBT'; written: boolean } & CallRef)
  /** A write fenced out: its (key, generation) no longer holds the record. */
  | { event: 'fenced_write'; key: string; generation: number; op: FencedOp }
  /**
   * An IN_DOUBT record settled; `verdict` is the probe's or the operator's (partial: completed in
   * part), or the executor's own late completion (applied) or late release (not_applied).
   */
  | {
      event: 'settled';
      key: string;
      generation: number;
      trajectoryId: string;
      turn: number;
      callId: string;
      by: SettledBy;
      verdict: 'applied' | 'not_applied' | 'partial';
      state: string;
      actor: string;
      /** The probe's finding or the operator's stated reason. */
      reason: string;
    };

/** The fenced writes of an endpoint record (activities/store/endpoint-store.ts). */
export const FENCED_OPS = ['intent', 'complete', 'release', 'in_doubt', 'settle'] as const;
export type FencedOp = (typeof FENCED_OPS)[number];

/** Who settles an IN_DOUBT record: a probe, an operator, or the executor of that generation, late. */
export const SETTLED_BY = ['probe', 'operator', 'executor'] as const;
export type SettledBy = (typeof SETTLED_BY)[number];

type Sink = (e: CallEvent) => void;
const sinks: Sink[] = [];

/** Subscribes a sink for the life of the process; returns the unsubscribe function. */
export function onCallEvent(sink: Sink): () => void {
  sinks.push(sink);
  return () => {
    const i = sinks.indexOf(sink);
    if (i >= 0) sinks.splice(i, 1);
  };
}

export function emitCallEvent(e: CallEvent): void {
  for (const sink of sinks) {
    try {
      sink(e);
    } catch {
      // Observability must never change what a call does.
    }
  }
}
