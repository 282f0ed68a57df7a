/**
 * settle's client side: start trajectories, run turns, settle calls. See {@link SettleClient}.
 *
 * @packageDocumentation
 */
export * from '../client/index';
export type { TargetOverrides, TemporalTarget } from '../client/connection';
