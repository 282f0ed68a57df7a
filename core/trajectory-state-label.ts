/**
 * What a trajectory's state reads as for an operator: Temporal's run status and settle's status
 * (a search attribute). The workflow writes its settle status itself, so a run ended from outside
 * (terminated, timed out) keeps the last one it wrote — `running`, `waiting_operator` — which would
 * claim a life it no longer has: that one is shown as what the run was doing when it ended.
 */
const LIVE = new Set(['running', 'waiting_probe', 'waiting_operator', 'waiting_approval']);

/** `RUNNING · waiting_operator`, `COMPLETED · completed`, `TERMINATED (ended while running)`. */
export function trajectoryStateLabel(runStatus: string, settleStatus: string | null | undefined): string {
  if (runStatus === 'RUNNING' || (settleStatus && !LIVE.has(settleStatus))) return `${runStatus} · ${settleStatus ?? '-'}`;
  return settleStatus ? `${runStatus} (ended while ${settleStatus})` : runStatus;
}
