/** Typed keys for settle's custom search attributes (names and types from core/search-attributes.ts). */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export type TrajectoryStatus = 'running' | 'waiting_probe' | 'waiting_operator' | 'waiting_approval' | 'completed' | 'failed' | 'cancelled';

export const SA_TRAJECTORY_STATUS = defineSearchAttributeKey('SettleTrajectoryStatus', SearchAttributeType.KEYWORD);
export const SA_IN_DOUBT_COUNT = defineSearchAttributeKey('SettleInDoubtCount', SearchAttributeType.INT);
export const SA_PENDING_APPROVALS = defineSearchAttributeKey('SettlePendingApprovals', SearchAttributeType.INT);
export const SA_PARENT_TRAJECTORY = defineSearchAttributeKey('SettleParentTrajectory', SearchAttributeType.KEYWORD);
