/** `settle/client`: the orchestrator side. */
export { SettleClient, DEFAULT_TASK_QUEUE } from '../client/index';
export type { StartOptions, TrajectoryStatusReport } from '../client/index';
