/**
 * The trajectory workflow's public surface: input, result, updates and queries. Orchestrators,
 * the CLI and tests import these names and types; they contain no workflow logic.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { Observation } from '../core/observation';
import type { RecordStateOrUnseen } from '../core/records';
import type { SideEffectLevel } from '../core/tools/catalog';
import type { ModelConfig } from '../core/model/chat';
import type { CapabilityToken } from '../core/capability/token';

import type { ProposedCall } from '../core/calls';
export type { ProposedCall };

export interface ScriptedTurn {
  turn: number;
  calls: ProposedCall[];
}

/**
 * How the trajectory is driven:
 * - `turns` given: run these turns, then complete (scripted);
 * - `model` given: the workflow asks the model for calls until a final answer or a limit;
 * - neither: orchestrator-driven — each turn arrives as a `runTurn` update until `finish`.
 */
export interface TrajectoryInput {
  /** Absolute path of this trajectory's workspace directory. */
  workspace: string;
  turns?: ScriptedTurn[];
  model?: ModelDriver;
  /** Endpoint-record lease, renewed by heartbeats. Default 10 s. */
  leaseMs?: number;
  /** Backoff between retries of a busy or not-executed call: initial × 2^n, capped. Default 1 s, 30 s. */
  backoff?: { initialMs?: number; maxMs?: number };
  /** Whether sandboxed commands may use the network (until capabilities carry `connect`). Default false. */
  network?: boolean;
  /** How long an A3 call waits for `approveCall` before it is denied. Default 1 hour. */
  approvalTimeoutMs?: number;
  /** Raise tools' levels for this trajectory (e.g. require approval for every shell command). Lowering is refused. */
  levelOverrides?: Record<string, SideEffectLevel>;
  /** Parent trajectory id, for sub-agents (shown as a search attribute). */
  parentTrajectoryId?: string;
  /**
   * `hmac`: keys are HMAC-SHA-256 with the secret in the worker's SETTLE_KEY_SECRET (docs/design.md#key-derivation,
   * keyed mode), so other clients of an endpoint cannot guess them. Derived by a local activity —
   * the secret never enters workflow code or history; the key still does. Default `sha256`.
   */
  keyMode?: 'sha256' | 'hmac';
  /**
   * The trajectory's signed capability (`settle cap mint`). Every call is checked against it in
   * the activity; without one, calls are unrestricted within the workspace (development only).
   */
  capability?: CapabilityToken;
  /** Continue-as-new once history passes this many events (default: when Temporal suggests it). */
  maxHistoryEvents?: number;
  /** State carried across continue-as-new; never set by callers. */
  carried?: CarriedState;
}

export interface ModelDriver extends ModelConfig {
  /** The task given to the model as the first user message. */
  task: string;
  /** Model turns before the trajectory stops. Default 20. */
  maxTurns?: number;
  /** Total tokens (as reported by the API) before the trajectory stops. Default unlimited. */
  maxTotalTokens?: number;
}

export type CallResolution =
  /** A0: read-only, run without an endpoint record. */
  | 'read'
  | 'executed'
  | 'replayed'
  | 'settled_by_probe'
  | 'settled_by_operator'
  /** Rejected by validation before any key or record. */
  | 'invalid'
  /** A3 call denied by an approver, or not approved in time. */
  | 'denied'
  | 'gave_up';

export interface CallReport {
  turn: number;
  callId: string;
  tool: string;
  /** Null when the call was rejected before a key could be derived. */
  key: string | null;
  level: SideEffectLevel | null;
  /** The endpoint record's state; NO_RECORD for read-only (A0) calls and denied/invalid ones. */
  state: RecordStateOrUnseen | 'NO_RECORD';
  resolution: CallResolution | 'pending' | 'awaiting_approval';
  /** Activity executions for this call (claims, probes). */
  attempts: number;
  observation: Observation | null;
  /** For A3 calls: who decided, and why. */
  approval?: { approver: string; decision: 'approve' | 'deny'; reason: string } | null;
  /** Set when a compensator ran for this call. */
  compensatedBy?: string | null;
}

export type TrajectoryOutcome = 'completed' | 'failed' | 'cancelled';

export interface TrajectoryResult {
  trajectoryId: string;
  outcome: TrajectoryOutcome;
  calls: CallReport[];
  /** Model-driven: the model's final answer, if it gave one. */
  finalAnswer?: string | null;
  /** Why the trajectory stopped (turn limit, budget, finish reason, failure). */
  reason?: string;
  /** Compensations run in reverse order, on failure or cancellation. */
  compensations?: CompensationReport[];
}

export interface CompensationReport {
  /** The key of the call being compensated. */
  forKey: string;
  tool: string;
  key: string | null;
  resolution: CallResolution | 'pending' | 'awaiting_approval' | 'not_compensable';
  observation: Observation | null;
}

/** State carried across continue-as-new so nothing is lost or repeated. */
export interface CarriedState {
  reports: CallReport[];
  /** Turns already run by `runTurn` (for orchestrator-driven trajectories). */
  turnsDone: number[];
  /** Model-driven: the conversation so far, and the next model turn and token spend. */
  conversation?: unknown[];
  modelTurn?: number;
  tokensUsed?: number;
  /** Scripted: index of the next scripted turn. */
  nextScriptedTurn?: number;
  continuedAsNew: number;
}

export interface RunTurnInput {
  turn: number;
  calls: ProposedCall[];
}

export interface RunTurnResult {
  turn: number;
  calls: CallReport[];
}

export interface SettleCallInput {
  key: string;
  verdict: 'applied' | 'not_applied';
  operator: string;
  reason: string;
}

export interface ApproveCallInput {
  key: string;
  approver: string;
  decision: 'approve' | 'deny';
  reason: string;
}

export interface FinishInput {
  /** `fail` runs the compensators (in reverse order) before the trajectory ends as failed. */
  outcome: 'completed' | 'failed';
  reason: string;
}

/** One call per line for SREs: key, level, state, attempts. */
export const callsQuery = defineQuery<CallReport[]>('calls');
/** What the trajectory is waiting for right now (also its current details in the UI). */
export const waitingForQuery = defineQuery<string>('waitingFor');

export const runTurnUpdate = defineUpdate<RunTurnResult, [RunTurnInput]>('runTurn');
export const settleCallUpdate = defineUpdate<{ state: string }, [SettleCallInput]>('settleCall');
export const approveCallUpdate = defineUpdate<{ decision: 'approve' | 'deny' }, [ApproveCallInput]>('approveCall');
export const finishUpdate = defineUpdate<{ accepted: true }, [FinishInput]>('finish');

/** The update id of a turn: an orchestrator retrying its request after a crash reuses it. */
export function runTurnUpdateId(trajectoryId: string, turn: number): string {
  return `runTurn:${trajectoryId}:${turn}`;
}
