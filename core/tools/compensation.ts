/**
 * Compensators for A2 (reversible) tools: the call that undoes a completed call, run — settled
 * too, with its own key — in reverse order when a trajectory fails or is cancelled.
 */
export type Compensation = { kind: 'call'; tool: string; args: Record<string, unknown> } | { kind: 'none'; reason: string };

export function compensationFor(tool: string, args: Record<string, unknown>): Compensation {
  switch (tool) {
    case 'file_edit': {
      // The inverse edit: the replacement back to the original. It only applies while the file
      // still holds what the edit wrote; otherwise file_edit reports the match count and changes nothing.
      const { path, old_str, new_str, allow_multiple } = args as {
        path: string;
        old_str: string;
        new_str: string;
        allow_multiple: boolean;
      };
      if (new_str === '') return { kind: 'none', reason: 'the edit deleted text; there is no block left to locate and restore' };
      return { kind: 'call', tool: 'file_edit', args: { path, old_str: new_str, new_str: old_str, allow_multiple } };
    }
    case 'bash_execute':
      return { kind: 'none', reason: 'a shell command has no general inverse' };
    default:
      return { kind: 'none', reason: `${tool} declares no compensator` };
  }
}

/** Reserved call-id suffix: only the runtime's own compensations carry it (callers' ids may not). */
export const COMPENSATION_SUFFIX = '#compensate';

/** The call id of a compensation, derived so a retried compensation has the same key. */
export function compensationCallId(call: { call_id: string }): string {
  return `${call.call_id}${COMPENSATION_SUFFIX}`;
}

export function isCompensationCallId(callId: string): boolean {
  return callId.endsWith(COMPENSATION_SUFFIX);
}
