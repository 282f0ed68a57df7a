/**
 * Endpoint-record vocabulary shared by workflow code, activities and the CLI (docs/design.md#endpoint-records).
 * Pure types and constants: no Temporal, no Postgres.
 */

/** `UNSEEN` is the absence of a row and therefore not a stored state. */
export const RECORD_STATES = ['IN_FLIGHT', 'COMPLETED', 'IN_DOUBT', 'NOT_EXECUTED'] as const;
export type RecordState = (typeof RECORD_STATES)[number];
export type RecordStateOrUnseen = RecordState | 'UNSEEN';

export function isRecordState(s: string): s is RecordState {
  return (RECORD_STATES as readonly string[]).includes(s);
}

/**
 * Who caused a transition. Recorded on every event row, and on the record when it settles.
 * - `worker:<identity>`  the executing activity (claim, intent, complete, mark in doubt, release)
 * - `lease-expiry`       a claimer that found an expired lease and turned the record IN_DOUBT
 * - `probe:<tool>`       a reconciliation probe
 * - `operator:<name>`    a human, through the workflow update or the CLI
 */
export type Actor = `worker:${string}` | 'lease-expiry' | `probe:${string}` | `operator:${string}` | 'retention';

/** What a reconciliation probe concluded from the environment (docs/design.md#probes). */
export type ProbeVerdict<R = unknown> =
  | { verdict: 'applied'; result: R; detail: string }
  | { verdict: 'not_applied'; detail: string }
  /** `final`: no later probe can decide either (e.g. a shell command that died mid-run): only an operator can. */
  | { verdict: 'unknown'; detail: string; final?: boolean };

/** What a settled activity reports to the workflow for one attempt at one key. */
export type CallOutcome<R = unknown> =
  /** The effect happened. `replayed` = served from the record without executing now. */
  | { kind: 'completed'; result: R; replayed: boolean; generation: number }
  /** Execution ended and its effect is unknown: a probe (or an operator) must settle it first. */
  | { kind: 'in_doubt'; generation: number; detail: string }
  /** Another executor holds a live lease: retry later. */
  | { kind: 'busy'; generation: number; leaseUntil: string }
  /** The tool proved nothing happened; the record is NOT_EXECUTED and may be claimed again. */
  | { kind: 'released'; generation: number; detail: string }
  /**
   * The capability (or the worker's policy) does not allow this access: nothing was claimed or
   * touched by this attempt. `record`: the key's record, when one exists — an earlier attempt
   * (or an earlier send of the same call) claimed it, and its state says what happened to it.
   */
  | { kind: 'denied'; component: string; reason: string; record?: { state: RecordState; generation: number; settledBy: string | null } };
