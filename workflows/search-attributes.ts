/** Typed keys for settle's custom search attributes (names and types from core/search-attributes.ts). */
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';

export type TrajectoryStatus =
  | 'running'
  | 'waiting_probe'
  | 'waiting_operator'
  | 'waiting_approval'
  | 'completed'
  /** Completed, and at least one call was denied, errored, invalid, given up or left in doubt (SettleProblemCount). */
  | 'completed_with_problems'
  | 'failed'
  | 'cancelled';

export const SA_TRAJECTORY_STATUS = defineSearchAttributeKey('SettleTrajectoryStatus', SearchAttributeType.KEYWORD);
export const SA_IN_DOUBT_COUNT = defineSearchAttributeKey('SettleInDoubtCount', SearchAttributeType.INT);
export const SA_PENDING_APPROVALS = defineSearchAttributeKey('SettlePendingApprovals', SearchAttributeType.INT);
export const SA_PROBLEM_COUNT = defineSearchAttributeKey('SettleProblemCount', SearchAttributeType.INT);
export const SA_PARENT_TRAJECTORY = defineSearchAttributeKey('SettleParentTrajectory', SearchAttributeType.KEYWORD);

/**
 * The search attributes a trajectory starts with: what its first publish would set (running, no
 * call in doubt, no approval pending), and its parent for a sub-agent. Set in the start request
 * (client/index.ts trajectoryStartOptions, subagent.ts), they are visible from the first moment
 * and the run upserts nothing to repeat them (trajectory-state.ts startFingerprint).
 */
export function initialSearchAttributes(parentTrajectoryId?: string): SearchAttributePair[] {
  return [
    { key: SA_TRAJECTORY_STATUS, value: 'running' },
    { key: SA_IN_DOUBT_COUNT, value: 0 },
    { key: SA_PENDING_APPROVALS, value: 0 },
    ...(parentTrajectoryId ? [{ key: SA_PARENT_TRAJECTORY, value: parentTrajectoryId }] : []),
  ];
}
