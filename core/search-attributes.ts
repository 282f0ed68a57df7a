/**
 * Custom search attributes the trajectory workflows upsert, so SREs can filter in the Temporal
 * Web UI (e.g. `SettleInDoubtCount > 0`). Registered by the stack launcher at server start and
 * by `docker-compose.yml` for a production-style server. Plain data: no Temporal import here.
 */
export const SEARCH_ATTRIBUTES = {
  /** running | waiting_probe | waiting_operator | waiting_approval | completed | failed | cancelled */
  SettleTrajectoryStatus: 'Keyword',
  /** Calls of this trajectory currently IN_DOUBT. */
  SettleInDoubtCount: 'Int',
  /** A3 calls waiting for a human approval. */
  SettlePendingApprovals: 'Int',
  /** Workflow id of the parent trajectory, for sub-agents. */
  SettleParentTrajectory: 'Keyword',
} as const;

export type SearchAttributeName = keyof typeof SEARCH_ATTRIBUTES;
