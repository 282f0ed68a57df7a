/**
 * One agent trajectory = one workflow (workflow id = trajectory id). DETERMINISTIC CODE ONLY:
 * runs in Temporal's sandbox; every side effect goes through an activity.
 *
 * Three drivers (see TrajectoryInput): scripted turns, an orchestrator sending `runTurn`
 * updates, or a model asked for calls in a loop. Every call goes through call-pipeline.ts.
 * On failure or cancellation, completed A2 calls are compensated in reverse order.
 * Long trajectories continue-as-new with their state, so nothing is lost or repeated.
 */
import { FAILURE } from '../core/failures';
import {
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  patched,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { InputError } from '../core/errors';
import { parseToolArguments } from '../core/json-text';
import type { ChatMessage, ChatToolCall } from '../core/model/chat';
import { fitConversation, fitObservations, fitReports, MAX_TURN_RESULT_CHARS, MAX_TURN_TOOL_MESSAGES_CHARS } from '../core/history-budget';
import { failed, type Observation } from '../core/observation';
import { problemCount } from '../core/outcome-label';
import { publishedCatalog } from '../core/tools/catalog';
import { TrajectoryInputSchema } from '../core/trajectory-input';
import { isReservedChildId, parentOfChildId, RESERVED_CHILD_ID_RULE } from '../core/trajectory-ids';
import { parseArgs } from '../core/validation';
import { compensationCallId, compensationFor, isCompensationCallId } from '../core/tools/compensation';
import type { SettleActivities } from '../activities/index';
import { countProposal, runCall } from './call-pipeline';
import type { CallContext } from './call-context';
import { applyOperatorVerdict } from './settled-call';
import {
  approveCallUpdate,
  callsQuery,
  finishUpdate,
  pendingApprovalsQuery,
  runTurnUpdate,
  settleCallUpdate,
  UPDATE_DESCRIPTIONS,
  waitingForQuery,
  type ApproveCallInput,
  type CallReport,
  type CarriedState,
  type CompensationReport,
  type FinishInput,
  type ProposedCall,
  type RunTurnInput,
  type RunTurnResult,
  type SettleCallInput,
  type TrajectoryInput,
  type TrajectoryResult,
  type TrajectoryWorkflow,
} from './definitions';
import { approveWithAuthority } from './operator-authority';
import { Patches } from './patches';
import { SA_PARENT_TRAJECTORY } from './search-attributes';
import { TrajectoryState } from './trajectory-state';

export * from './definitions';

const DEFAULT_MODEL_TURNS = 20;
/**
 * Integers beyond ±(2^53−1) that a double holds exactly (`100000000000000000000`) are accepted, as
 * `1e20` is (core/json-text.ts exactNumber); histories from before refused them. Asked only for such
 * an integer, so a run records its marker only when it meets one. Not implied by a combined patch.
 */
const PATCH_EXACT_LARGE_INTEGERS = 'exact-large-integers-v1';

const { recordArgs } = proxyActivities<SettleActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

const { callModel } = proxyActivities<SettleActivities>({
  startToCloseTimeout: '3 minutes',
  retry: { initialInterval: '2 seconds', maximumInterval: '1 minute', maximumAttempts: 5 },
});

// subagent.ts starts children by this signature without importing this module (no cycle).
const _startedAsChildBy: TrajectoryWorkflow = trajectoryWorkflow;

export async function trajectoryWorkflow(input: TrajectoryInput): Promise<TrajectoryResult> {
  const trajectoryId = workflowInfo().workflowId;
  assertValidInput(input);
  // The combined patch, first thing (after the input check, which records nothing).
  const patches = new Patches();
  assertOwnId(trajectoryId);
  const state = new TrajectoryState(input.carried, patches);
  const ctx: CallContext = { trajectoryId, input, state };
  installHandlers(ctx);

  if (input.parentTrajectoryId && !startedWith(SA_PARENT_TRAJECTORY, input.parentTrajectoryId)) {
    upsertSearchAttributes([{ key: SA_PARENT_TRAJECTORY, value: input.parentTrajectoryId }]);
  }
  state.publish('running', 'starting');

  let finalAnswer: string | null = null;
  let reason: string;
  try {
    if (input.model) {
      ({ finalAnswer, reason } = await driveByModel(ctx, input));
    } else if (input.turns) {
      reason = await driveByScript(ctx, input);
    } else {
      state.publish('running', 'waiting for the orchestrator: runTurn updates, then finish');
      await condition(() => state.finishRequest !== null || (state.turnsRunning === 0 && shouldContinueAsNew(input)));
      if (!state.finishRequest) return await continueWithState(input, state);
      await condition(() => state.turnsRunning === 0);
      reason = state.finishRequest.reason;
    }
  } catch (err) {
    if (isCancellation(err)) return await endCancelled(ctx, err);
    throw err;
  }
  // Cancelled while the last settled call ran to its end: nothing threw, but the trajectory ends cancelled.
  if (CancellationScope.current().consideredCancelled) {
    return await endCancelled(ctx, new CancelledFailure('trajectory cancelled'));
  }

  if (state.finishRequest?.outcome === 'failed') {
    const compensations = await compensate(ctx, 'failed');
    state.publish('failed', `failed: ${reason}; ${compensations.length} compensation(s) run`);
    await condition(allHandlersFinished);
    throw ApplicationFailure.create({
      type: FAILURE.TrajectoryFailed,
      message: `trajectory failed: ${reason}`,
      nonRetryable: true,
      details: [{ trajectoryId, outcome: 'failed', ...resultCalls(state), reason, compensations } satisfies TrajectoryResult],
    });
  }
  // A trajectory whose calls were denied or errored must not read as plain "completed".
  const problems = patches.problemCount ? problemCount(state.reports) : null;
  state.publish(
    problems ? 'completed_with_problems' : 'completed',
    `completed ${state.reports.length} calls${problems ? ` (${problems} with problems)` : ''}: ${reason}`,
    problems,
  );
  await condition(allHandlersFinished);
  return { trajectoryId, outcome: 'completed', ...resultCalls(state), finalAnswer, reason };
}

/** Compensates even though the workflow is being cancelled, then ends it as cancelled. */
async function endCancelled(ctx: CallContext, cancellation: unknown): Promise<never> {
  const { state } = ctx;
  await CancellationScope.nonCancellable(async () => {
    // Turns still running wait for their settled activities (WAIT_CANCELLATION_COMPLETED):
    // compensation starts once every effect that may have happened is in the reports.
    await condition(() => state.turnsRunning === 0);
    const compensations = await compensate(ctx, 'cancelled');
    state.publish('cancelled', `cancelled; ${compensations.length} compensation(s) run`);
  });
  throw cancellation;
}

/** Registers the queries and updates; their logic lives in TrajectoryState and call-pipeline.ts. */
function installHandlers(ctx: CallContext): void {
  const { state } = ctx;
  setHandler(callsQuery, () => state.reports, {
    description:
      'Every call so far, one object each: turn, callId, tool, key (64 hex), level (A0–A3), state (endpoint record: ' +
      'IN_FLIGHT, COMPLETED, IN_DOUBT, NOT_EXECUTED, or NO_RECORD), resolution (executed, replayed, settled_by_probe, ' +
      'settled_by_operator, read, invalid, denied, gave_up, pending, awaiting_approval), attempts (executions), ' +
      'probes (probe rounds), observation (output, error, exit_status).',
  });
  setHandler(waitingForQuery, () => state.waitingFor, {
    description: 'What the trajectory waits for now (its current details): a one-line summary, then the exact command that unblocks it.',
  });
  setHandler(pendingApprovalsQuery, () => [...state.pendingApprovals.values()], {
    description:
      'The A3 calls waiting for a decision, with their full arguments: key, turn, callId, tool, args, keyMode, sinceMs, ' +
      'deadlineMs. An approval credential binds the tool and arguments shown (settle approve).',
  });
  setHandler(settleCallUpdate, (s) => applyOperatorVerdict(state, s), {
    validator: (s: SettleCallInput) => state.validateSettleCall(s),
    description: UPDATE_DESCRIPTIONS.settleCall,
  });
  setHandler(approveCallUpdate, (a) => approveWithAuthority(state, a), {
    validator: (a: ApproveCallInput) => state.validateApproveCall(a),
    description: UPDATE_DESCRIPTIONS.approveCall,
  });
  setHandler(runTurnUpdate, (t) => state.inTurnOrder(() => runTurn(ctx, t)), {
    validator: (t: RunTurnInput) => state.validateRunTurn(t),
    description: UPDATE_DESCRIPTIONS.runTurn,
  });
  setHandler(finishUpdate, (f) => state.requestFinish(f), {
    validator: (f: FinishInput) => state.validateFinish(f),
    description: UPDATE_DESCRIPTIONS.finish,
  });
}

async function runTurn(ctx: CallContext, t: RunTurnInput): Promise<RunTurnResult> {
  const reports: CallReport[] = [];
  // The update's validator checked these calls' envelopes (RunTurnInputSchema).
  for (const call of t.calls) reports.push(await runCall(ctx, t.turn, call, 'checked'));
  ctx.state.turnsDone.add(t.turn);
  // The answer is one payload: the turn's observations share its budget (docs/design.md#history-budget).
  const observations = fitObservations(
    reports.map((r) => r.observation),
    MAX_TURN_RESULT_CHARS,
  );
  const calls = reports.map((r, i) => ({ ...r, observation: observations[i] ?? null }));
  ctx.state.compactReports();
  return { turn: t.turn, calls };
}

/** The calls of a trajectory's result, fitted to one payload; the oldest go first if they must. */
function resultCalls(state: TrajectoryState): Pick<TrajectoryResult, 'calls' | 'omittedCalls'> {
  const { reports, dropped } = fitReports(state.reports);
  return dropped > 0 ? { calls: reports, omittedCalls: dropped } : { calls: reports };
}

async function driveByScript(ctx: CallContext, input: TrajectoryInput): Promise<string> {
  const turns = input.turns!;
  for (let i = input.carried?.nextScriptedTurn ?? 0; i < turns.length; i++) {
    if (shouldContinueAsNew(input)) await continueWithState(input, ctx.state, { nextScriptedTurn: i });
    const turn = turns[i]!;
    // The input check at the start checked these calls' envelopes (TrajectoryInputSchema).
    for (const call of turn.calls) await runCall(ctx, turn.turn, call, 'checked');
    ctx.state.turnsDone.add(turn.turn);
    ctx.state.compactReports();
  }
  return `${turns.length} scripted turns done`;
}

async function driveByModel(ctx: CallContext, input: TrajectoryInput): Promise<{ finalAnswer: string | null; reason: string }> {
  const model = input.model!;
  const { task, maxTurns = DEFAULT_MODEL_TURNS, maxTotalTokens, ...config } = model;
  const tools = publishedCatalog();
  let conversation = (input.carried?.conversation as ChatMessage[] | undefined) ?? [{ role: 'user', content: task }];
  let tokensUsed = input.carried?.tokensUsed ?? 0;
  for (let turn = input.carried?.modelTurn ?? 0; turn < maxTurns; turn++) {
    if (maxTotalTokens !== undefined && tokensUsed >= maxTotalTokens) {
      return { finalAnswer: null, reason: `token budget exhausted (${tokensUsed} of ${maxTotalTokens})` };
    }
    // The request is one payload: the oldest observations give way first (docs/design.md#history-budget).
    conversation = fitConversation(conversation);
    if (shouldContinueAsNew(input)) {
      await continueWithState(input, ctx.state, { conversation, modelTurn: turn, tokensUsed });
    }
    ctx.state.publish('running', `model turn ${turn}: asking ${config.model}`);
    const reply = await callModel({ config, messages: conversation, tools });
    tokensUsed += reply.totalTokens;
    if (reply.kind === 'final') {
      conversation.push({ role: 'assistant', content: reply.content });
      return { finalAnswer: reply.content, reason: 'the model gave a final answer' };
    }
    conversation.push({ role: 'assistant', content: reply.content, tool_calls: reply.calls });
    const observations: Observation[] = [];
    for (const [i, c] of reply.calls.entries()) {
      observations.push(await runModelCall(ctx, turn, c, reply.refused?.[i]));
    }
    // This turn's tool messages share one budget, so a turn of many large reads cannot push the
    // next request past Temporal's payload limit.
    fitObservations(observations, MAX_TURN_TOOL_MESSAGES_CHARS).forEach((o, i) => {
      conversation.push({ role: 'tool', tool_call_id: reply.calls[i]!.id, content: JSON.stringify(o) });
    });
    ctx.state.turnsDone.add(turn);
    ctx.state.compactReports();
  }
  return { finalAnswer: null, reason: `turn limit reached (${maxTurns})` };
}

/** One call a model proposed: its argument text parsed, then the call pipeline; malformed ones answered as such. */
async function runModelCall(ctx: CallContext, turn: number, c: ChatToolCall, refusal: string | undefined): Promise<Observation> {
  let args: unknown;
  /** The rule broken (as counted per tool), and the message the model reads. */
  let problem: { field: string; rule: string; message: string } | null = null;
  if (refusal !== undefined) {
    problem = { field: 'args', rule: refusal.replace(/^args must /, ''), message: refusal };
  } else {
    try {
      args = parseToolArguments(c.function.arguments, () => patched(PATCH_EXACT_LARGE_INTEGERS));
    } catch (err) {
      const refused = err as InputError;
      problem = { field: refused.field, rule: refused.rule, message: refused.message };
    }
  }
  if (problem === null) {
    const proposed: ProposedCall = { call_id: c.id, tool: c.function.name, args: args as Record<string, unknown> };
    return (await runCall(ctx, turn, proposed)).observation ?? failed('no observation');
  }
  const observation = failed(`invalid call: ${problem.message}`);
  await countProposal(ctx, turn, { call_id: c.id, tool: c.function.name, args: {} }, { field: problem.field, rule: problem.rule });
  ctx.state.reports.push({
    turn,
    callId: c.id,
    tool: c.function.name,
    key: null,
    level: null,
    state: 'NO_RECORD',
    resolution: 'invalid',
    attempts: 0,
    observation,
  });
  return observation;
}

/** Runs the compensators of completed A2 calls, newest first; each is a settled call itself. */
async function compensate(ctx: CallContext, why: 'failed' | 'cancelled'): Promise<CompensationReport[]> {
  const done: CompensationReport[] = [];
  const candidates = ctx.state.reports.filter(
    (r) =>
      r.level === 'A2' &&
      r.key !== null &&
      r.state === 'COMPLETED' &&
      r.observation?.exit_status === 0 &&
      !isCompensationCallId(r.callId) &&
      !r.compensatedBy,
  );
  for (const original of candidates.reverse()) {
    const args = ctx.state.argsByKey.get(original.key!) ?? (await argsFromRecord(original.key!));
    const plan = args ? compensationFor(original.tool, args) : { kind: 'none' as const, reason: 'arguments unavailable' };
    if (plan.kind === 'none') {
      done.push({ forKey: original.key!, tool: original.tool, key: null, resolution: 'not_compensable', observation: failed(plan.reason) });
      continue;
    }
    ctx.state.publish('running', `trajectory ${why}: compensating ${original.tool} ${original.key!.slice(0, 8)}…`);
    const report = await runCall(
      ctx,
      original.turn,
      { call_id: compensationCallId({ call_id: original.callId }), tool: plan.tool, args: plan.args },
      'compensation',
    );
    original.compensatedBy = report.key;
    done.push({ forKey: original.key!, tool: plan.tool, key: report.key, resolution: report.resolution, observation: report.observation });
  }
  return done;
}

/**
 * Arguments of a call from an earlier run (continue-as-new does not carry them): the endpoint
 * record holds them as they executed.
 */
async function argsFromRecord(key: string): Promise<Record<string, unknown> | undefined> {
  return (await recordArgs({ key })) ?? undefined;
}

function shouldContinueAsNew(input: TrajectoryInput): boolean {
  const info = workflowInfo();
  return info.continueAsNewSuggested || (input.maxHistoryEvents !== undefined && info.historyLength > input.maxHistoryEvents);
}

/** Whether this run's start event carried `key` = `value` (deterministic: it is in the history). */
function startedWith(key: typeof SA_PARENT_TRAJECTORY, value: string): boolean {
  return workflowInfo().typedSearchAttributes.get(key) === value;
}

/** Hands the trajectory to a fresh run with its state: turns, reports (keys, states), conversation. */
async function continueWithState(input: TrajectoryInput, state: TrajectoryState, extra: Partial<CarriedState> = {}): Promise<never> {
  await condition(allHandlersFinished);
  // The next run's input is one payload: the oldest reports give way first.
  const { reports, dropped } = fitReports(state.reports);
  const droppedReports = (input.carried?.droppedReports ?? 0) + dropped;
  const carried: CarriedState = {
    reports,
    turnsDone: [...state.turnsDone],
    continuedAsNew: (input.carried?.continuedAsNew ?? 0) + 1,
    ...(droppedReports > 0 ? { droppedReports } : {}),
    ...extra,
  };
  return continueAsNew<typeof trajectoryWorkflow>({ ...input, carried });
}

/** The input contract (core/trajectory-input.ts); a broken input fails the run at once, naming the field. */
/**
 * `x/sub-<n>` belongs to x's sub-agent: a trajectory under such an id that x did not start as its
 * child is refused at once (core/trajectory-ids.ts), so it closes and cannot block x's spawn.
 */
function assertOwnId(trajectoryId: string): void {
  if (!isReservedChildId(trajectoryId)) return;
  const parent = parentOfChildId(trajectoryId);
  if (parent !== null && workflowInfo().parent?.workflowId === parent) return;
  throw ApplicationFailure.nonRetryable(
    `trajectory id ${trajectoryId} is reserved for a sub-agent${parent === null ? '' : ` of ${parent}`}: a trajectory id must ${RESERVED_CHILD_ID_RULE}`,
    FAILURE.InvalidInput,
  );
}

function assertValidInput(input: TrajectoryInput): void {
  try {
    parseArgs(TrajectoryInputSchema(), input, 'input');
  } catch (err) {
    if (err instanceof InputError) throw ApplicationFailure.nonRetryable(err.message, FAILURE.InvalidInput);
    throw err;
  }
}
