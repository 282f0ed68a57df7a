/** Counting proposed calls for `settle stats`, malformed ones with the rule they broke. */
import type { ProposedCall as RecordedProposal } from '../store/call-stats';
import { emitCallEvent } from '../observability/events';
import type { ActivityContext } from './context';

export function statsActivities({ callStats }: ActivityContext) {
  return {
    /** Counts a proposed call and, if malformed, the rule it broke (idempotent: retries count once). */
    async recordProposedCall(call: RecordedProposal): Promise<void> {
      await callStats.recordProposedCall(call);
      if (call.issue) {
        const { trajectoryId, turn, callId, tool } = call;
        emitCallEvent({
          event: 'malformed_call',
          trajectoryId,
          turn,
          callId,
          tool,
          key: null,
          generation: null,
          field: call.issue.field,
          rule: call.issue.rule,
        });
      }
    },
  };
}
