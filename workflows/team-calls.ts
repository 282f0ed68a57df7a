/**
 * Settled calls of a team's own tools from a team's own workflow (api/workflow.ts, docs/plugin.md).
 * DETERMINISTIC CODE ONLY (workflow sandbox).
 *
 *   describeTeamCall (local activity: the worker's registry validates the arguments, gives the
 *   level and probe support; recorded, so replay never asks again) → derive the key from
 *   (workflow id, turn, call id, tool, validated arguments) → the trajectory's own engine
 *   (call-pipeline.ts settleValidCall): A0 read · A1/A2 settled (claim, lease, fence, IN_DOUBT →
 *   probe → operator) · A3 approval (`settle approve`), then settled.
 */
import { ActivityFailure, ApplicationFailure, proxyLocalActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import { describeArgs } from '../core/calls';
import { FAILURE } from '../core/failures';
import { failed } from '../core/observation';
import { COMPENSATION_SUFFIX, compensationCallId, isCompensationCallId } from '../core/tools/compensation';
import { deriveKey } from '../core/key';
import type { Observation } from '../core/observation';
import type { RecordStateOrUnseen } from '../core/records';
import type { SettleActivities } from '../activities/index';
import type { AnyTeamTool, TeamTool } from '../activities/tools/team-tool';
import {
  approveCallUpdate,
  callsQuery,
  pendingApprovalsQuery,
  settleCallUpdate,
  waitingForQuery,
  type ApproveCallInput,
  type CallReport,
  type CallResolution,
  type CompensationReport,
  type SettleCallInput,
  type TrajectoryInput,
} from './definitions';
import { approveWithAuthority } from './operator-authority';
import { Patches } from './patches';
import { applyOperatorVerdict, DEFAULT_LEASE_MS } from './settled-call';
import { TrajectoryState } from './trajectory-state';
import { settleValidCall } from './call-pipeline';
import type { CallContext } from './call-context';
import type { z } from 'zod';

const { describeTeamCall, describeCompensation } = proxyLocalActivities<SettleActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
});

/** How the calls of one workflow are settled. */
export interface SettledOptions {
  /** Endpoint-record lease, ms (default 3 000): a dead worker's call is found IN_DOUBT within about one lease. */
  leaseMs?: number;
  /** Backoff between attempts after a call was proved not executed or found busy. */
  backoff?: { initialMs?: number; maxMs?: number };
  /**
   * A signed capability (`settle cap mint`, audience: this workflow's id): every call is
   * authorized against it, as a trajectory's are, by what the tool's definition says it
   * accesses. A worker holding capability keys refuses calls without one.
   */
  capability?: unknown;
  /** How long an A3 call waits for `settle approve` before it is denied, ms (default one hour). */
  approvalTimeoutMs?: number;
}

/** Names one logical call: the same (turn, callId, tool, arguments) in the same workflow is the same call, run once. */
export interface CallOptions {
  /** Unique per logical call within the workflow and turn (at most 255 characters). */
  callId: string;
  /** The step or turn the call belongs to (integer ≥ 0; default 0). */
  turn?: number;
}

/** How a settled call ended. */
export interface SettledResult<Result> {
  /** The call's idempotency key (`settle show <key>` prints its record). */
  key: string;
  /** `executed`, `replayed`, `settled_by_probe`, `settled_by_operator` (completed); `read` (A0); `gave_up`; `denied` (approval or capability). */
  resolution: CallResolution;
  /** The endpoint record's state (NO_RECORD for A0 reads). */
  state: RecordStateOrUnseen | 'NO_RECORD';
  /** What settle recorded: the tool's result as JSON text in `output`, or the error. */
  observation: Observation;
  /** The tool's result, when the call completed and its text was not cut. */
  result: Result | undefined;
  /** An A3 call: who approved or denied it, and why (the approver its operator credential proves). */
  approval?: { approver: string; decision: 'approve' | 'deny'; reason: string };
}

type ResultOf<T> = T extends TeamTool<string, z.ZodType, infer R, unknown> ? R : never;
type ArgsOf<T> = T extends TeamTool<string, infer S, unknown, unknown> ? z.input<S> : never;

/** One typed function per tool of `Tools` (an array or an object of defineTool definitions). */
export type SettledTools<Tools> = {
  [T in ToolsOf<Tools> as T['name']]: (args: ArgsOf<T>, call: CallOptions) => Promise<SettledResult<ResultOf<T>>>;
};
/** Distributes over a union, so `typeof teamTools | BuiltIns` names the team's tools and the built-ins. */
type ToolsOf<Tools> = Tools extends readonly AnyTeamTool[]
  ? Tools[number]
  : Tools extends Record<string, AnyTeamTool>
    ? Tools[keyof Tools]
    : never;

/** The workflow's call state: one per workflow execution (workflow modules are evaluated per execution). */
let shared: TrajectoryState | null = null;

/** The state every settled call of this workflow shares, with the operator's update and the queries installed once. */
function callState(): TrajectoryState {
  if (shared) return shared;
  const state = new TrajectoryState(undefined, new Patches());
  // `settle resolve` sends its verdict through this update; `settle show` and the UI read the queries.
  setHandler(settleCallUpdate, (s: SettleCallInput) => applyOperatorVerdict(state, s), {
    validator: (s: SettleCallInput) => state.validateSettleCall(s),
  });
  // `settle approve` sends an A3 call's decision through this update, checked as a trajectory checks it.
  setHandler(approveCallUpdate, (a: ApproveCallInput) => approveWithAuthority(state, a), {
    validator: (a: ApproveCallInput) => state.validateApproveCall(a),
  });
  setHandler(callsQuery, () => state.reports);
  setHandler(waitingForQuery, () => state.waitingFor);
  setHandler(pendingApprovalsQuery, () => state.pendingApprovals());
  shared = state;
  return state;
}

/** Settled calls of the team's tools; see api/workflow.ts. */
export function settled<Tools>(options: SettledOptions = {}): SettledTools<Tools> {
  return new Proxy({} as SettledTools<Tools>, {
    get: (_target, tool) =>
      typeof tool === 'string' ? (args: unknown, call: CallOptions) => callTool(tool, args, call, options) : undefined,
  });
}

async function callTool(
  tool: string,
  rawArgs: unknown,
  call: CallOptions,
  options: SettledOptions,
  origin: 'workflow' | 'compensation' = 'workflow',
): Promise<SettledResult<unknown>> {
  const state = callState();
  if (origin === 'workflow' && typeof call?.callId === 'string' && isCompensationCallId(call.callId)) {
    throw ApplicationFailure.nonRetryable(
      `call_id must not end with ${COMPENSATION_SUFFIX} (reserved for settle's compensations; got ${JSON.stringify(call.callId)})`,
      FAILURE.InvalidArgs,
    );
  }
  const turn = call?.turn ?? 0;
  // Whether a capability comes with the call: a built-in without one is refused by the worker.
  const described = await describeTeamCall({
    tool,
    args: rawArgs,
    capability: options.capability !== undefined && options.capability !== null,
  }).catch(refusedCall);
  const trajectoryId = workflowInfo().workflowId;
  // Throws InputError naming `call_id` or `turn` when they are malformed.
  const key = deriveKey({ trajectoryId, turn, callId: call?.callId, tool, args: described.args });
  const report: CallReport = {
    turn,
    callId: call.callId,
    tool,
    key,
    level: described.level,
    state: 'NO_RECORD',
    resolution: 'pending',
    attempts: 0,
    observation: null,
    approval: null,
  };
  state.reports.push(report);
  state.argsByKey.set(key, described.args);
  // The trajectory's engine, with this workflow's settings in place of a trajectory's input; a
  // team's workflow has no workspace.
  const input = {
    workspace: '',
    leaseMs: options.leaseMs ?? DEFAULT_LEASE_MS,
    ...(options.backoff ? { backoff: options.backoff } : {}),
    ...(options.capability !== undefined ? { capability: options.capability as TrajectoryInput['capability'] } : {}),
    ...(options.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: options.approvalTimeoutMs } : {}),
  };
  const ctx: CallContext = { trajectoryId, input, state };
  const summary = `${tool} ${describeArgs(described.args)} · key ${key.slice(0, 6)}…`;
  await settleValidCall(ctx, report, {
    level: described.level,
    args: described.args,
    key,
    summary,
    probes: described.probes,
    // The worker's lane for the tool, recorded with the description (histories from before lanes have none).
    ...(state.patches.localLane && described.lane ? { lane: described.lane } : {}),
    countInActivity: false,
  });
  return resultOf(report);
}

/**
 * Runs the compensators of this workflow's completed A2/A3 calls, newest first (as a failed or
 * cancelled trajectory does): each tool's `compensate` (asked on the worker, recorded as a local
 * activity) names the undoing call, which runs settled itself under the call id
 * `<call id>#compensate`, so a compensation asked again runs once. A call is compensated at most once.
 */
export async function compensate(options: SettledOptions = {}): Promise<CompensationReport[]> {
  const state = callState();
  const done: CompensationReport[] = [];
  const candidates = state.reports.filter(
    (r) =>
      (r.level === 'A2' || r.level === 'A3') &&
      r.key !== null &&
      r.state === 'COMPLETED' &&
      r.observation?.exit_status === 0 &&
      !isCompensationCallId(r.callId) &&
      !r.compensatedBy,
  );
  for (const original of candidates.reverse()) {
    const forKey = original.key!;
    const args = state.argsByKey.get(forKey);
    const plan = args
      ? await describeCompensation({ tool: original.tool, args })
      : ({ kind: 'none', reason: 'arguments unavailable' } as const);
    if (plan.kind === 'none') {
      done.push({ forKey, tool: original.tool, key: null, resolution: 'not_compensable', observation: failed(plan.reason) });
      continue;
    }
    const call = { callId: compensationCallId({ call_id: original.callId }), turn: original.turn };
    const result = await callTool(plan.tool, plan.args, call, options, 'compensation');
    original.compensatedBy = result.key;
    done.push({ forKey, tool: plan.tool, key: result.key, resolution: result.resolution, observation: result.observation });
  }
  return done;
}

/** The registry refused the call (unknown tool, invalid arguments): the workflow sees the refusal itself, not its activity wrapper. */
function refusedCall(err: unknown): never {
  if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.nonRetryable) {
    throw ApplicationFailure.nonRetryable(err.cause.message, err.cause.type, ...(err.cause.details ?? []));
  }
  throw err;
}

function resultOf(report: CallReport): SettledResult<unknown> {
  const observation = report.observation ?? { output: '', error: 'no observation', exit_status: 1, truncated: false };
  const completed = report.state === 'COMPLETED' || report.resolution === 'read';
  let result: unknown;
  if (completed && observation.error === null && !observation.truncated) {
    try {
      result = JSON.parse(observation.output);
    } catch {
      result = undefined;
    }
  }
  return {
    key: report.key ?? '',
    resolution: report.resolution as CallResolution,
    state: report.state,
    observation,
    result,
    ...(report.approval ? { approval: report.approval } : {}),
  };
}
