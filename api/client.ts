/**
 * settle's client side: start trajectories, run turns, settle calls. See {@link SettleClient}.
 * And capabilities for an orchestrator that holds the capability keys: {@link mintCapability}.
 *
 * @packageDocumentation
 */
export * from '../client/index';
export type { TargetOverrides, TemporalTarget } from '../client/connection';
export { mintCapability, type CapabilityGrant, type MintOptions } from '../activities/capability/mint';
export type { CapabilityToken, Right } from '../core/capability/token';
