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

export interface SearchAttributeProblem {
  name: SearchAttributeName;
  expected: string;
  /** The type the namespace has under that name, or null when it has none. */
  found: string | null;
}

/**
 * What a namespace lacks of SEARCH_ATTRIBUTES, given its custom attributes (name → type, spelled
 * as here: Keyword, Int, …): without them the trajectory workflows' upserts fail their tasks.
 */
export function searchAttributeProblems(registered: Readonly<Record<string, string>>): SearchAttributeProblem[] {
  return (Object.entries(SEARCH_ATTRIBUTES) as [SearchAttributeName, string][])
    .filter(([name, expected]) => registered[name] !== expected)
    .map(([name, expected]) => ({ name, expected, found: registered[name] ?? null }));
}
