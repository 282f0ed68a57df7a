/**
 * The activities a settle worker registers. Every side effect of a trajectory happens here:
 * tool execution through endpoint records, probes, operator settlement. Workflows import the
 * types (SettleActivities); workers the factory. The activities themselves live in factory/.
 */
export { createActivities, type SettleActivities } from './factory/create';
export type { ActivityDeps } from './factory/context';
export type { ToolCallInput, ProbeReport } from './factory/settled-calls';
export type { ReadOnlyCallInput, ReadOnlyResult } from './factory/read-only';
export type { DescribedTeamCall } from './factory/team-calls';
export type { ApprovalRequest } from './factory/operator';
export type { LabelledOutcome } from './factory/outcome';
export type { OperatorSettlement } from './settled/operator-settlement';
