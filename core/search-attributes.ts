/**
 * Custom search attributes the trajectory workflows upsert, so SREs can filter in the Temporal
 * Web UI (e.g. `SettleInDoubtCount > 0`). Registered by the stack launcher at server start and
 * by `docker-compose.yml` for a production-style server. Plain data: no Temporal import here.
 */
export const SEARCH_ATTRIBUTES = {
  /** running | waiting_probe | waiting_operator | waiting_approval | completed | completed_with_problems | failed | cancelled */
  SettleTrajectoryStatus: 'Keyword',
  /** Calls of this trajectory currently IN_DOUBT. */
  SettleInDoubtCount: 'Int',
  /** A3 calls waiting for a human approval. */
  SettlePendingApprovals: 'Int',
  /**
   * Set when a trajectory completes: its calls that were denied, errored, invalid, given up or
   * left in doubt (its status then reads completed_with_problems).
   */
  SettleProblemCount: 'Int',
  /** Workflow id of the parent trajectory, for sub-agents. */
  SettleParentTrajectory: 'Keyword',
} as const;

export type SearchAttributeName = keyof typeof SEARCH_ATTRIBUTES;
