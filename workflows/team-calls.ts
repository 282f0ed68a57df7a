/**
 * Settled calls of a team's own tools from a team's own workflow (api/workflow.ts, docs/plugin.md).
 * DETERMINISTIC CODE ONLY (workflow sandbox).
 *
 *   describeTeamCall (local activity: the worker's registry validates the arguments, gives the
 *   level and probe support; recorded, so replay never asks again) → derive the key from
 *   (workflow id, turn, call id, tool, validated arguments) → A0: read · A1/A2: SettledCall
 *   (claim, lease, fence, IN_DOUBT → probe → operator), the same as a trajectory's calls.
 */
import { ActivityFailure, ApplicationFailure, proxyActivities, proxyLocalActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import { describeArgs } from '../core/calls';
import { deriveKey } from '../core/key';
import type { Observation } from '../core/observation';
import type { RecordStateOrUnseen } from '../core/records';
import type { SettleActivities } from '../activities/index';
import type { AnyTeamTool, TeamTool } from '../activities/tools/team-tool';
import { callsQuery, settleCallUpdate, waitingForQuery, type CallReport, type CallResolution, type SettleCallInput } from './definitions';
import { Patches } from './patches';
import { applyOperatorVerdict, DEFAULT_LEASE_MS, SettledCall } from './settled-call';
import { TrajectoryState } from './trajectory-state';
import type { CallContext } from './call-pipeline';
import type { z } from 'zod';

const { describeTeamCall } = proxyLocalActivities<SettleActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
});
const { runReadOnlyTool } = proxyActivities<SettleActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

/** How the calls of one workflow are settled. */
export interface SettledOptions {
  /** Endpoint-record lease, ms (default 3 000): a dead worker's call is found IN_DOUBT within about one lease. */
  leaseMs?: number;
  /** Backoff between attempts after a call was proved not executed or found busy. */
  backoff?: { initialMs?: number; maxMs?: number };
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
  /** `executed`, `replayed`, `settled_by_probe`, `settled_by_operator` (completed); `read` (A0); `gave_up`. */
  resolution: CallResolution;
  /** The endpoint record's state (NO_RECORD for A0 reads). */
  state: RecordStateOrUnseen | 'NO_RECORD';
  /** What settle recorded: the tool's result as JSON text in `output`, or the error. */
  observation: Observation;
  /** The tool's result, when the call completed and its text was not cut. */
  result: Result | undefined;
}

type ResultOf<T> = T extends TeamTool<string, z.ZodType, infer R, unknown> ? R : never;
type ArgsOf<T> = T extends TeamTool<string, infer S, unknown, unknown> ? z.input<S> : never;

/** One typed function per tool of `Tools` (an array or an object of defineTool definitions). */
export type SettledTools<Tools> = {
  [T in ToolsOf<Tools> as T['name']]: (args: ArgsOf<T>, call: CallOptions) => Promise<SettledResult<ResultOf<T>>>;
};
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
  setHandler(callsQuery, () => state.reports);
  setHandler(waitingForQuery, () => state.waitingFor);
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

async function callTool(tool: string, rawArgs: unknown, call: CallOptions, options: SettledOptions): Promise<SettledResult<unknown>> {
  const state = callState();
  const turn = call?.turn ?? 0;
  const described = await describeTeamCall({ tool, args: rawArgs }).catch(refusedCall);
  if (described.level === 'A3') {
    throw ApplicationFailure.nonRetryable(
      `${tool} is A3 (needs an approval): settled() does not run A3 tools yet; run it at A2 or from settle's trajectory`,
      'SettleUnsupportedLevel',
    );
  }
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
  };
  state.reports.push(report);
  state.argsByKey.set(key, described.args);
  if (described.level === 'A0') {
    const read = await runReadOnlyTool({ tool, args: described.args, workspace: '', key });
    report.resolution = 'read';
    report.observation = read.kind === 'observed' ? read.observation : { output: '', error: read.reason, exit_status: 1, truncated: false };
    return resultOf(report);
  }
  // SettledCall reads the lease, backoff and workspace from the input; a team tool has no workspace.
  const input = { workspace: '', leaseMs: options.leaseMs ?? DEFAULT_LEASE_MS, ...(options.backoff ? { backoff: options.backoff } : {}) };
  const ctx: CallContext = { trajectoryId, input, state };
  const summary = `${tool} ${describeArgs(described.args)} · key ${key.slice(0, 6)}…`;
  await new SettledCall(ctx, report, key, described.args, summary, undefined, false, described.probes).run();
  return resultOf(report);
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
  };
}
