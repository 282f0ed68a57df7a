/**
 * What a call's activity returns: observations bounded for history, and the attempt's outcome
 * label first in its result.
 */
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { FAILURE } from '../../core/failures';
import { truncate, type Observation } from '../../core/observation';
import { MAX_OBSERVATION_CHARS } from '../../core/history-budget';
import type { CallOutcome } from '../../core/records';
import { attemptLabel, type OutcomeLabel } from '../../core/outcome-label';

/** A settled attempt's result as the activity returns it (histories before the label lack `outcome`). */
export type LabelledOutcome = CallOutcome<Observation> & { outcome?: OutcomeLabel };

/** Observations travel through workflow history: keep each well under Temporal's payload limits. */
export function boundObservation(o: Observation): Observation {
  const output = truncate(o.output, MAX_OBSERVATION_CHARS);
  const error = o.error === null ? { text: null, truncated: false } : truncate(o.error, 16 * 1024);
  return {
    output: output.text,
    error: error.text,
    exit_status: o.exit_status,
    truncated: o.truncated || output.truncated || error.truncated,
    ...(o.partial ? { partial: true as const } : {}),
  };
}

/**
 * The attempt's result, led by its outcome label: the Web UI shows every activity that returned as
 * "Completed", so the first thing in its result says in_doubt, replayed or error when it is.
 */
export function boundOutcome(outcome: CallOutcome<Observation>): LabelledOutcome {
  const bounded = outcome.kind === 'completed' ? { ...outcome, result: boundObservation(outcome.result) } : outcome;
  return { outcome: attemptLabel(bounded), ...bounded };
}

/** An IN_DOUBT attempt as a failure: red in the Web UI, its message saying what to do; not retried (the workflow probes). */
export function inDoubtFailure(outcome: LabelledOutcome & { kind: 'in_doubt' }): ApplicationFailure {
  return ApplicationFailure.create({
    type: FAILURE.InDoubt,
    message: `IN_DOUBT at generation ${outcome.generation}: ${outcome.detail} — the effect may have happened; a probe or an operator settles it`,
    nonRetryable: true,
    // Benign: the SDK logs it at DEBUG, not as a WARN with a stack trace; settle's own in_doubt
    // event is the one WARN line (activities/observability/log.ts). The Web UI still shows it failed.
    category: ApplicationFailureCategory.BENIGN,
    details: [outcome],
  });
}
