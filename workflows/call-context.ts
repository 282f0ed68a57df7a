/**
 * What every step of a call needs from its trajectory. Its own module so the call pipeline,
 * the settled execution and sub-agents share it without importing one another.
 */
import type { TrajectoryInput } from './definitions';
import type { TrajectoryState } from './trajectory-state';

export interface CallContext {
  trajectoryId: string;
  input: TrajectoryInput;
  state: TrajectoryState;
}
