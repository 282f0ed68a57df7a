/**
 * The trajectory workflow's public surface: input, result, updates and queries. Orchestrators,
 * the CLI and tests import these names and types; they contain no workflow logic.
 */
import { defineQuery, defineUpdate } from './define';
import type { Observation } from '../core/observation';
import type { RecordStateOrUnseen } from '../core/records';
import type { SideEffectLevel } from '../core/tools/catalog';

import type { ModelDriver, ProposedCall, RunTurnInput, ScriptedTurn, TrajectoryInputSchema } from '../core/trajectory-input';
import type { z } from 'zod';
export type { ModelDriver, ProposedCall, RunTurnInput, ScriptedTurn };

/**
 * What a trajectory accepts: the input contract in core/trajectory-input.ts (one zod schema for
 * spec files, SettleClient.start, the workflow's own check and runTurn). How it is driven:
 * - `turns` given: run these turns, then complete (scripted);
 * - `model` given: the workflow asks the model for calls until a final answer or a limit;
 * - neither: orchestrator-driven — each turn arrives as a `runTurn` update until `finish`.
 * `carried` is state handed over by continue-as-new; callers never set it.
 */
export type TrajectoryInput = Omit<z.input<ReturnType<typeof TrajectoryInputSchema>>, 'carried'> & { carried?: CarriedState };

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
  /** Executions of this call (claims); probe rounds are counted in `probes`. */
  attempts: number;
  /** Probe rounds after the call was found IN_DOUBT (absent until the first). */
  probes?: number;
  observation: Observation | null;
  /** For A3 calls: who decided, and why. */
  approval?: { approver: string; decision: 'approve' | 'deny'; reason: string } | null;
  /** Set when a compensator ran for this call. */
  compensatedBy?: string | null;
}

export type TrajectoryOutcome = 'completed' | 'failed' | 'cancelled';

/**
 * The trajectory workflow's signature, for starting one as a child without importing the
 * workflow (trajectory.ts checks that its function has this type).
 */
export type TrajectoryWorkflow = (input: TrajectoryInput) => Promise<TrajectoryResult>;

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
  /** Oldest calls left out of `calls` to keep the result within Temporal's payload limit. */
  omittedCalls?: number;
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
  /** Oldest reports left behind to keep the carried state within Temporal's payload limit. */
  droppedReports?: number;
}

export interface RunTurnResult {
  turn: number;
  calls: CallReport[];
}

export interface SettleCallInput {
  key: string;
  verdict: 'applied' | 'not_applied' | 'partial';
  /** The operator the credential proves (the name recorded). */
  operator: string;
  reason: string;
  /** The generation the operator examined: the verdict settles that generation only. */
  generation?: number;
  /**
   * The operator credential for exactly this verdict (core/operator-credential.ts), minted by
   * `settle resolve` from the operator's key: refused without it (docs/security.md#operator-authority).
   * Absent in histories from before.
   */
  credential?: unknown;
}

export interface ApproveCallInput {
  key: string;
  /** The operator the credential proves (the name recorded). */
  approver: string;
  decision: 'approve' | 'deny';
  reason: string;
  /** The operator credential for exactly this decision, minted by `settle approve`; absent in histories from before. */
  credential?: unknown;
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

/** An A3 call waiting for an approver, with what an approval lets run: the tool and its whole arguments. */
export interface PendingApproval {
  key: string;
  turn: number;
  callId: string;
  tool: string;
  /** The validated arguments, in full: a summary could leave out the part that matters. */
  args: Record<string, unknown>;
}

/** The calls waiting for approval now, each with its full arguments (the console and `settle status` show them). */
export const pendingApprovalsQuery = defineQuery<PendingApproval[]>('pendingApprovals');

export const UPDATE_DESCRIPTIONS = {
  runTurn: "Runs one turn's calls and answers their observations (idempotent per trajectory and turn).",
  settleCall:
    "An operator's verdict on an IN_DOUBT call this trajectory waits for: applied, not_applied or partial, with name and reason, proven by an operator credential (settle resolve).",
  approveCall:
    'Approves or denies an A3 call that waits for approval, with the approver and reason, proven by an operator credential (settle approve).',
  finish: 'Ends an orchestrator-driven trajectory: completed, or failed (runs the compensators).',
} as const;

export const runTurnUpdate = defineUpdate<RunTurnResult, [RunTurnInput]>('runTurn');
export const settleCallUpdate = defineUpdate<{ state: string }, [SettleCallInput]>('settleCall');
export const approveCallUpdate = defineUpdate<{ decision: 'approve' | 'deny' }, [ApproveCallInput]>('approveCall');
export const finishUpdate = defineUpdate<{ accepted: true }, [FinishInput]>('finish');

/** The update id of a turn: an orchestrator retrying its request after a crash reuses it. */
export function runTurnUpdateId(trajectoryId: string, turn: number): string {
  return `runTurn:${trajectoryId}:${turn}`;
}
