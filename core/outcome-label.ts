/**
 * One word for how a call (or one attempt at it) ended, so nothing uncertain or failed reads as
 * plain success: the Web UI shows an activity that returned normally as "Completed" whatever it
 * returned, and a call that ran and failed is still `executed`. Pure: no Temporal, no Postgres.
 */
import type { Observation } from './observation';
import type { CallOutcome } from './records';

export type OutcomeLabel =
  /** Ran now and succeeded. */
  | 'ok'
  /** Served from the endpoint record without running again. */
  | 'replayed'
  /** Ran (or was answered without running) and the tool reported an error or a non-zero exit. */
  | 'error'
  /** Execution ended and its effect is unknown: a probe or an operator must settle it. */
  | 'in_doubt'
  /** Another executor holds the lease. */
  | 'busy'
  /** Proved not executed; will run again. */
  | 'not_executed'
  /** Refused by the capability or an approver. */
  | 'denied'
  /** Not decided yet (waiting for approval, probe or operator). */
  | 'pending'
  /** Rejected by validation: no key, no effect. */
  | 'invalid'
  /** Gave up after repeated not-executed attempts. */
  | 'gave_up';

/** Whether an observation reports a failure. */
export function isErrorObservation(o: Observation | null | undefined): boolean {
  return !!o && (o.error !== null || (o.exit_status !== null && o.exit_status !== 0));
}

/** The label of one activity attempt's result (shown first in the activity's result in the UI). */
export function attemptLabel(outcome: CallOutcome<Observation>): OutcomeLabel {
  switch (outcome.kind) {
    case 'completed':
      return outcome.replayed ? 'replayed' : isErrorObservation(outcome.result) ? 'error' : 'ok';
    case 'in_doubt':
      return 'in_doubt';
    case 'busy':
      return 'busy';
    case 'released':
      return 'not_executed';
    case 'denied':
      return 'denied';
  }
}

/** What a call report amounts to, for `settle status` and summaries. */
export interface ReportLike {
  state: string;
  resolution: string;
  observation: Observation | null;
}

export function reportLabel(r: ReportLike): OutcomeLabel {
  if (r.state === 'IN_DOUBT') return 'in_doubt';
  switch (r.resolution) {
    case 'pending':
    case 'awaiting_approval':
      return 'pending';
    case 'invalid':
      return 'invalid';
    case 'denied':
      return 'denied';
    case 'gave_up':
      return 'gave_up';
  }
  if (isErrorObservation(r.observation)) return 'error';
  return r.resolution === 'replayed' ? 'replayed' : 'ok';
}

/** Labels of calls that did not do what was asked: a trajectory with any completes "with problems". */
const PROBLEM_LABELS: readonly OutcomeLabel[] = ['error', 'denied', 'invalid', 'gave_up', 'in_doubt'];

/** How many of a trajectory's calls were denied, errored, invalid, given up or left in doubt. */
export function problemCount(reports: readonly ReportLike[]): number {
  return reports.filter((r) => PROBLEM_LABELS.includes(reportLabel(r))).length;
}

/** The label and, for a failure, the first line of its error: "error: old_str matched 0 blocks…". */
export function reportOutcomeText(r: ReportLike, maxChars = 60): string {
  const label = reportLabel(r);
  const o = r.observation;
  if (!o || !['error', 'denied', 'invalid', 'gave_up'].includes(label)) return label;
  const why = (o.error ?? (o.exit_status !== null ? `exit ${o.exit_status}` : '')).split('\n')[0]!.replace(/^error: /, '');
  const text = why ? `${label}: ${why}` : label;
  return text.length > maxChars ? `${text.slice(0, maxChars - 1)}…` : text;
}
