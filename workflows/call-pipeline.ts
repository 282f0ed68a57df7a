/**
 * One proposed call, start to finish. DETERMINISTIC CODE ONLY (workflow sandbox).
 *
 *   validate → derive key → capability pre-check → by level:
 *     A0 read (no record) · A2 settled execution · A3 approval, then settled execution
 *
 * The settled execution (claim, probe, operator) is settled-call.ts; sub-agents are subagent.ts.
 */
import { condition, isCancellation, log, patched, proxyActivities, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import { describeArgs, type ProposedCall } from '../core/calls';
import { deriveKey } from '../core/key';
import { APPROVAL_DEADLINE_APPROVER } from '../core/approval-claim';
import { asError, InputError } from '../core/errors';
import { codeSpan, SETTLE_COMMAND, shellWord, waitDetails } from '../core/operator-details';
import { failed, type Observation } from '../core/observation';
import { accessFor } from '../core/capability/access';
import { checkBody } from '../core/capability/rules';
import { SPAWN_SUBAGENT, spawnSubagentArgs, type SpawnSubagentArgs } from '../core/capability/subagent';
import { CATALOG, effectiveLevel, isToolName, usesWorkspace, type SideEffectLevel, type ToolName } from '../core/tools/catalog';
import { isCompensationCallId } from '../core/tools/compensation';
import { parseArgs } from '../core/validation';
import { ProposedCallSchema } from '../core/trajectory-input';
import type { ReadOnlyResult, SettleActivities } from '../activities/index';
import type { CallReport } from './definitions';
import { deniedByCapability, SettledCall, type SettledCallOptions } from './settled-call';
import { spawnSubagent } from './subagent';
import type { CallContext } from './call-context';
import { ACTIVITY_LANE, type LaneChoice } from '../core/tools/lanes';
import type { WorkspaceHost } from '../core/hosts';
import { PATCH_LOCAL_READ_BUDGET, PATCH_UNLOCATED_REFUSED } from './patches';
import { LOCAL_READ_BYTES_PER_TASK, LOCAL_READ_MAX_BYTES } from '../core/history-budget';
import type { TrajectoryState } from './trajectory-state';

const DEFAULT_APPROVAL_TIMEOUT_MS = 60 * 60_000;

// Local activities: short, and recorded as one marker each instead of a task round trip.
const { deriveKeyedKey } = proxyLocalActivities<SettleActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
});
// Bookkeeping must never fail a turn: during a database outage it retries until PostgreSQL is
// back (the turn waits), and it is idempotent, so a retry never counts twice.
const { recordProposedCall } = proxyLocalActivities<SettleActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '500 milliseconds', maximumInterval: '10 seconds' },
});

// The worker's lanes (core/tools/lanes.ts), asked once per run: recorded, so a replay takes the
// same lanes even if the operator changed them since. Retried like bookkeeping: it reads no database.
const { laneTable } = proxyLocalActivities<SettleActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '500 milliseconds', maximumInterval: '10 seconds' },
});

const { runReadOnlyTool, lookupRecord } = proxyActivities<SettleActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});
// Which host holds the workspace: asked on the shared queue, where only a worker that finds the
// workspace on its disk answers; the others refuse, and a retry asks again. Which worker takes a
// task is not ours to choose (a busy host's pollers lose to an idle one's), and the host may be
// down or restarting: so asked for minutes, not a dozen times.
const LOCATE_OPTIONS = {
  startToCloseTimeout: '10 seconds',
  scheduleToCloseTimeout: '3 minutes',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '2 seconds' },
} as const;
const { locateWorkspace } = proxyActivities<SettleActivities>(LOCATE_OPTIONS);
const { locateWorkspace: locateWorkspaceLocally } = proxyLocalActivities<SettleActivities>({ startToCloseTimeout: '2 seconds' });
const { runReadOnlyTool: runReadOnlyToolLocally } = proxyLocalActivities<SettleActivities>({ startToCloseTimeout: '2 seconds' });

/** A call that passed validation: its catalog tool, level and the arguments as they will execute. */
interface ValidCall {
  tool: ToolName;
  level: SideEffectLevel;
  args: Record<string, unknown>;
  /** The plain (SHA-256) key; keyed mode replaces it after validation. */
  key: string;
}

/**
 * Where a call comes from: a model or orchestrator (`proposed`: checked against the input
 * contract, counted; `checked`: the same, but its envelope already passed that check as part of
 * the trajectory's input or a runTurn update's validator, so it is not repeated), or
 * settle itself (`compensation`: built from a validated call).
 */
export type CallOrigin = 'proposed' | 'checked' | 'compensation';

/**
 * One call, start to finish; resolves to its report (also pushed to the trajectory's reports).
 * The steps below take no await of their own on the way to the activity (patches.ts PATCH_LEAN_CALLS).
 */
export function runCall(ctx: CallContext, turn: number, call: ProposedCall, origin: CallOrigin = 'proposed'): Promise<CallReport> {
  try {
    const report = newReport(turn, call);
    ctx.state.reports.push(report);
    let valid: ValidCall | ValidSpawn;
    try {
      valid = validate(ctx, turn, call, origin);
    } catch (err) {
      return rejectInvalid(ctx, report, call, err);
    }
    if (valid.tool === SPAWN_SUBAGENT) return runSpawn(ctx, report, call, valid);
    report.level = valid.level;
    if (ctx.input.keyMode !== 'hmac') return runValid(ctx, report, call, valid, valid.key);
    const checked = valid;
    return finalKey(ctx, turn, call, checked).then((key) => runValid(ctx, report, call, checked, key));
  } catch (err) {
    return Promise.reject(asError(err));
  }
}

/**
 * Steps 2–4 for a valid call with its final key. Every promise a workflow creates
 * costs a stack capture in the SDK's promise hook (source-mapped, ~0.1 ms each): this returns the
 * step's own promise instead of awaiting it, so a settled call costs its activity's promises and
 * one more. The activity that runs the call counts the proposal; only a call that runs none is counted here.
 */
function runValid(ctx: CallContext, report: CallReport, call: ProposedCall, valid: ValidCall, key: string): Promise<CallReport> {
  report.key = key;
  ctx.state.argsByKey.set(key, valid.args);
  const summary = `${call.tool} ${describeArgs(valid.args)} · key ${key.slice(0, 6)}…`;
  const denial = precheckCapability(ctx, valid);
  if (denial) return countProposal(ctx, report.turn, call, null).then(() => deniedByCapability(report, denial.component, denial.reason));
  const settle = (lane: LaneChoice, where: WorkspaceHost | null = null) =>
    settleValidCall(ctx, report, {
      level: valid.level,
      args: valid.args,
      key,
      summary,
      lane,
      ...(where ? { host: where } : {}),
      countInActivity: !isCompensationCallId(call.call_id),
      countRefusal: () => countProposal(ctx, report.turn, call, null),
    });
  if (!ctx.state.patches.localLane) return settle(ACTIVITY_LANE);
  if (!ctx.state.patches.hostQueues || !usesWorkspace(valid.tool))
    return lanesOf(ctx).then((lanes) => settle(lanes[valid.tool] ?? ACTIVITY_LANE));
  return Promise.all([lanesOf(ctx), hostOf(ctx)]).then(([lanes, where]) =>
    where && 'unlocated' in where
      ? countProposal(ctx, report.turn, call, null).then(() => deniedByCapability(report, 'host', where.unlocated))
      : settle(lanes[valid.tool] ?? ACTIVITY_LANE, where),
  );
}

/** The worker's lane per tool, asked once per run (the first call asks; concurrent calls share the answer). */
function lanesOf(ctx: CallContext): Promise<Readonly<Record<string, LaneChoice>>> {
  ctx.state.lanes ??= laneTable();
  return ctx.state.lanes;
}

/** No host answered for the workspace (PATCH_UNLOCATED_REFUSED): its calls are refused, never run unrouted. */
interface Unlocated {
  unlocated: string;
}

/**
 * The host that holds the workspace, asked once per run (the first workspace call asks; concurrent
 * calls share the answer). Null where nothing is routed: the worker polls no host queue (a
 * plugin's). When no worker answered for minutes, the workspace is on no host that is up: its
 * calls are refused (Unlocated), since on the shared queue a host holding a stale copy would run
 * them; histories from before PATCH_UNLOCATED_REFUSED sent them to the shared queue (null).
 */
function hostOf(ctx: CallContext): Promise<WorkspaceHost | Unlocated | null> {
  const request = [{ workspace: ctx.input.workspace }] as const;
  const summary = `locate workspace ${ctx.input.workspace}`;
  // First the workflow's own worker (one marker, no task round trip: on a single host it holds
  // the workspace); where it does not, the workers of the shared queue in turn.
  ctx.state.workspaceHost ??= locateWorkspaceLocally
    .executeWithOptions({ startToCloseTimeout: '2 seconds', retry: { maximumAttempts: 1 }, summary }, [...request])
    .catch((err: unknown) => {
      if (isCancellation(err)) throw err;
      return locateWorkspace.executeWithOptions({ ...LOCATE_OPTIONS, summary }, [...request]);
    })
    .catch((err: unknown) => {
      if (isCancellation(err)) throw err;
      const refused = patched(PATCH_UNLOCATED_REFUSED);
      log.warn(`no host answered for the workspace: its calls ${refused ? 'are refused' : 'go to the shared queue'}`, {
        event: 'workspace_host_unknown',
        trajectoryId: ctx.trajectoryId,
        workspace: ctx.input.workspace,
        error: asError(err).message,
      });
      return refused
        ? { unlocated: `no host that is up holds workspace ${ctx.input.workspace}: no worker found it on its disk within 3 minutes` }
        : null;
    });
  return ctx.state.workspaceHost;
}

/** A call validated and keyed, ready to settle: by a trajectory (the catalog) or a team's workflow (the worker's registry). */
export interface ValidatedCall {
  level: SideEffectLevel;
  /** The arguments as they will execute: the key was derived from these. */
  args: Record<string, unknown>;
  key: string;
  /** The call on the timeline: tool, target, key. */
  summary: string;
  /** Whether a probe can settle it (the worker's registry); absent: the catalog's (declaresProbe). */
  probes?: boolean;
  /** Where it runs (the worker's lane for its tool); absent: the activity lane. */
  lane?: LaneChoice;
  /** The host holding its workspace (PATCH_HOST_QUEUES): its attempts and probes run on that host's queue. */
  host?: WorkspaceHost;
  /** The activity counts the proposal (a trajectory's). */
  countInActivity: boolean;
  /** Counts a proposal no activity ran for (an A3 call denied); a team's calls count none. */
  countRefusal?: () => Promise<void>;
}

/**
 * The one workflow-side engine of a validated call, for trajectories and `settled()` alike:
 * A0 read (no record) · A1/A2 settled execution · A3 approval, then settled execution. The
 * report (already in the state's reports, with its key) carries the outcome.
 */
export function settleValidCall(ctx: CallContext, report: CallReport, call: ValidatedCall): Promise<CallReport> {
  if (call.level === 'A0')
    return runReadOnly(
      ctx,
      report,
      report.tool,
      call.args,
      call.key,
      call.summary,
      call.countInActivity,
      call.lane ?? ACTIVITY_LANE,
      call.host,
    );
  if (call.level === 'A3') return runApproved(ctx, report, call);
  return new SettledCall(ctx, report, settledCallOptions(call, undefined)).run();
}

function settledCallOptions(call: ValidatedCall, approval: Approval | undefined): SettledCallOptions {
  return {
    key: call.key,
    args: call.args,
    summary: call.summary,
    ...(approval ? { approval } : {}),
    countProposal: call.countInActivity,
    ...(call.probes !== undefined ? { probes: call.probes } : {}),
    ...(call.lane ? { lane: call.lane } : {}),
    ...(call.host ? { host: call.host } : {}),
  };
}

/** A3: the approval, then the settled execution (or the denial). */
async function runApproved(ctx: CallContext, report: CallReport, call: ValidatedCall): Promise<CallReport> {
  const decision = await approvalFor(ctx, report, call.key, call.args);
  if (decision?.decision === 'deny') {
    await call.countRefusal?.();
    return denied(report, decision);
  }
  const approval = decision
    ? {
        approver: decision.approver,
        reason: decision.reason,
        ...(decision.credential !== undefined ? { credential: decision.credential } : {}),
      }
    : undefined;
  return new SettledCall(ctx, report, settledCallOptions(call, approval)).run();
}

function newReport(turn: number, call: ProposedCall): CallReport {
  return {
    turn,
    callId: call.call_id,
    tool: call.tool,
    key: null,
    level: null,
    state: 'UNSEEN',
    resolution: 'pending',
    attempts: 0,
    observation: null,
    approval: null,
    compensatedBy: null,
  };
}

/** A spawn_subagent call that passed validation. */
interface ValidSpawn {
  tool: typeof SPAWN_SUBAGENT;
  args: SpawnSubagentArgs;
  key: string;
}

/** Throws InputError naming the field and rule; returns the call as it will execute. */
function validate(ctx: CallContext, turn: number, call: ProposedCall, origin: CallOrigin): ValidCall | ValidSpawn {
  // The envelope first (call id, argument size and depth): model-proposed calls meet it here.
  if (origin === 'proposed') parseArgs(ProposedCallSchema(), call, '');
  if (call.tool === SPAWN_SUBAGENT) {
    const args = parseArgs(spawnSubagentArgs(), call.args);
    return {
      tool: SPAWN_SUBAGENT,
      args,
      key: deriveKey({ trajectoryId: ctx.trajectoryId, turn, callId: call.call_id, tool: call.tool, args }),
    };
  }
  if (typeof call.tool !== 'string' || !isToolName(call.tool)) {
    throw new InputError('tool', `be one of ${Object.keys(CATALOG).join(', ')} (got ${JSON.stringify(call.tool)})`);
  }
  const level = effectiveLevel(call.tool, ctx.input.levelOverrides);
  const args = parseArgs(CATALOG[call.tool].args(), call.args) as Record<string, unknown>;
  const key = deriveKey({ trajectoryId: ctx.trajectoryId, turn, callId: call.call_id, tool: call.tool, args });
  return { tool: call.tool, level, args, key };
}

/** Keyed mode: the runtime's secret makes the key (the pure derivation validated the parts). */
async function finalKey(ctx: CallContext, turn: number, call: ProposedCall, valid: ValidCall): Promise<string> {
  if (ctx.input.keyMode !== 'hmac') return valid.key;
  return deriveKeyedKey({ turn, callId: call.call_id, tool: call.tool, args: valid.args });
}

function precheckCapability(ctx: CallContext, valid: ValidCall): { component: string; reason: string } | null {
  const { capability, workspace } = ctx.input;
  if (!capability) return null;
  const access = accessFor(valid.tool, valid.args, workspace);
  const verdict = checkBody(capability.body, { ...access, audience: ctx.trajectoryId, nowMs: Date.now() });
  return verdict.allowed ? null : { component: verdict.component, reason: verdict.reason };
}

/** A0: no endpoint record, a retry simply reads again. */
async function runReadOnly(
  ctx: CallContext,
  report: CallReport,
  tool: string,
  args: Record<string, unknown>,
  key: string,
  summary: string,
  countInActivity: boolean,
  lane: LaneChoice = ACTIVITY_LANE,
  where?: WorkspaceHost,
): Promise<CallReport> {
  const { input } = ctx;
  report.attempts++;
  const request = {
    tool,
    args,
    workspace: input.workspace,
    key,
    ...(where ? { host: where.host } : {}),
    ...(input.capability ? { capability: input.capability } : {}),
    ...(countInActivity ? { proposal: { turn: report.turn, callId: report.callId } } : {}),
  };
  // Retried until it answers (a read has no effect to repeat): the capability check may need
  // the database, and an outage must delay the turn, not fail it. Tool errors are observations.
  const asActivity = () =>
    runReadOnlyTool.executeWithOptions(
      {
        startToCloseTimeout: '1 minute',
        retry: { initialInterval: '500 milliseconds', maximumInterval: '10 seconds' },
        summary,
        ...(where ? { taskQueue: where.queue } : {}),
      },
      [request],
    );
  // The local lane reads once within its bound; whatever keeps it from answering (a slow read, a
  // database outage, a workflow task on another host than the workspace's) continues in the
  // activity lane, retried there. A run that left the local lane (settled-call.ts leaveLocalLane)
  // reads there too, and so does a read its workflow task has no room for, or whose result
  // outgrew that room (core/history-budget.ts).
  const result: ReadOnlyResult | Observation =
    lane.lane === 'local' && !ctx.state.localLaneLeft && roomForLocalRead(ctx.state)
      ? await runReadOnlyToolLocally
          .executeWithOptions({ startToCloseTimeout: lane.boundMs, retry: { maximumAttempts: 1 }, summary }, [
            { ...request, maxResultBytes: LOCAL_READ_MAX_BYTES },
          ])
          .then(
            (read) => ('kind' in read && read.kind === 'too_large' ? asActivity() : read),
            (err: unknown) => {
              if (isCancellation(err)) throw err;
              return asActivity();
            },
          )
      : await asActivity();
  // Histories recorded before capabilities carry a bare observation.
  const outcome = ('kind' in result ? result : { kind: 'observed', observation: result }) as Exclude<ReadOnlyResult, { kind: 'too_large' }>;
  if (outcome.kind === 'denied') return deniedByCapability(report, outcome.component, outcome.reason);
  report.observation = outcome.observation;
  report.state = 'NO_RECORD';
  report.resolution = 'read';
  return report;
}

/**
 * Reserves room for one local read's result in the current workflow task's completion (Temporal
 * caps that request at 4 MB): false once the task's local reads took LOCAL_READ_BYTES_PER_TASK, and
 * the read runs as an activity. The task is told by the history length it started at, which a
 * replay sees at the same points. A history recorded before PATCH_LOCAL_READ_BUDGET ran every
 * local read locally, and replays so.
 */
function roomForLocalRead(state: TrajectoryState): boolean {
  const task = workflowInfo().historyLength;
  if (state.localReads.task !== task) state.localReads = { task, bytes: 0 };
  if (state.localReads.bytes + LOCAL_READ_MAX_BYTES > LOCAL_READ_BYTES_PER_TASK && patched(PATCH_LOCAL_READ_BUDGET)) return false;
  state.localReads.bytes += LOCAL_READ_MAX_BYTES;
  return true;
}

/** Sub-agents: a child workflow with an attenuated capability (subagent.ts). */
async function runSpawn(ctx: CallContext, report: CallReport, call: ProposedCall, spawn: ValidSpawn): Promise<CallReport> {
  report.key = spawn.key;
  await countProposal(ctx, report.turn, call, null);
  report.level = 'A2';
  // A sub-agent has no endpoint record; its report is the record. The same logical call again
  // (a turn resent under another update id, or after continue-as-new) replays it instead of
  // starting a second child that would repeat the first one's effects.
  const earlier = ctx.state.reports.find((r) => r !== report && r.key === spawn.key && r.resolution === 'executed');
  if (earlier) {
    report.state = 'NO_RECORD';
    report.resolution = 'replayed';
    report.observation = earlier.observation;
    return report;
  }
  return spawnSubagent(ctx, report, spawn.args);
}

/** A malformed call: counted, and answered with an observation naming the field and rule. */
async function rejectInvalid(ctx: CallContext, report: CallReport, call: ProposedCall, err: unknown): Promise<CallReport> {
  if (!(err instanceof InputError)) throw err;
  await countProposal(ctx, report.turn, call, { field: err.field, rule: err.rule });
  report.resolution = 'invalid';
  report.state = 'NO_RECORD';
  report.observation = failed(`invalid call: ${err.message}`);
  return report;
}

/**
 * Counts a proposal from a model or orchestrator (not the runtime's own compensations) for the
 * per-tool malformed-call rate.
 */
export async function countProposal(
  ctx: CallContext,
  turn: number,
  call: ProposedCall,
  issue: { field: string; rule: string } | null,
): Promise<void> {
  if (isCompensationCallId(call.call_id)) return;
  await recordProposedCall({ trajectoryId: ctx.trajectoryId, turn, callId: call.call_id, tool: String(call.tool), issue });
}

/** What the execution carries: the activity verifies the credential and records the approver it proves. */
type Approval = { approver: string; reason: string; credential?: unknown };
type Decision = { key: string; approver: string; decision: 'approve' | 'deny'; reason: string; credential?: unknown };

/**
 * A3: a human approves before the effect — unless the effect already happened (a repeat of a
 * completed call needs no new approval: it replays). Returns null when no approval is needed.
 */
async function approvalFor(ctx: CallContext, report: CallReport, key: string, args: Record<string, unknown>): Promise<Decision | null> {
  if ((await lookupRecord({ key })).state === 'COMPLETED') return null;
  const { state, input } = ctx;
  const timeoutMs = input.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS;
  report.resolution = 'awaiting_approval';
  state.awaitingApproval.add(key);
  const since = Date.now();
  state.pendingApprovals.set(key, {
    key,
    turn: report.turn,
    callId: report.callId,
    tool: report.tool,
    args,
    keyMode: input.keyMode ?? 'sha256',
    sinceMs: since,
    deadlineMs: since + timeoutMs,
  });
  const approve = (deny: boolean) =>
    // The approver is the operator whose key signs (SETTLE_OPERATOR_KEY): no name to fill in.
    `${SETTLE_COMMAND} approve ${shellWord(ctx.trajectoryId)} ${key} \\\n  --reason 'change ticket or why'${deny ? ' --deny' : ''}`;
  state.publish(
    'waiting_approval',
    waitDetails({
      headline: 'waiting for approval',
      tool: report.tool,
      target: describeArgs(args),
      key,
      sinceMs: since,
      deadline: { atMs: since + timeoutMs, then: 'denied' },
      explanation: `Call ${codeSpan(report.callId)} (turn ${report.turn}) is A3: it runs only once a person approves it, with one of the commands above.`,
      commands: [approve(false), approve(true)],
      args,
    }),
  );
  // A log line, not a command: recorded histories replay unchanged (and replay logs nothing).
  log.info('call waits for approval', {
    event: 'approval_wait',
    trajectoryId: ctx.trajectoryId,
    turn: report.turn,
    callId: report.callId,
    key,
    tool: report.tool,
    deadline: new Date(since + timeoutMs).toISOString(),
  });
  // The timer is the approval deadline; its summary says so on the timeline.
  const decided = await condition(() => state.approvals.has(key), timeoutMs, {
    summary: `approval deadline ${key.slice(0, 8)}… (then denied)`,
  });
  state.awaitingApproval.delete(key);
  state.pendingApprovals.delete(key);
  const decision: Decision = decided
    ? state.approvals.get(key)!
    : { key, approver: APPROVAL_DEADLINE_APPROVER, decision: 'deny', reason: `no approval within ${timeoutMs} ms (approval timeout)` };
  report.approval = { approver: decision.approver, decision: decision.decision, reason: decision.reason };
  report.resolution = 'pending';
  state.publish('running', `approval for ${key.slice(0, 8)}…: ${decision.decision} by ${decision.approver}`);
  return decision;
}

function denied(report: CallReport, decision: Decision): CallReport {
  report.resolution = 'denied';
  report.state = 'NO_RECORD';
  report.observation = failed(`denied by ${decision.approver}: ${decision.reason}`);
  return report;
}
